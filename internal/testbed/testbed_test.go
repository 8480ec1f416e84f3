package testbed

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderConfigOverridesInPlaceAndAppends(t *testing.T) {
	base := []byte("# comment\nbrokerServicePort=6650\n\nclusterName=standalone\nfoo = bar\nclusterName=dup\n")
	out := string(renderConfig(base, map[string]string{
		"brokerServicePort": "7000",
		"clusterName":       "local-1",
		"zeta":              "1",
		"alpha":             "2",
	}))
	assert.Equal(t, "# comment\nbrokerServicePort=7000\n\nclusterName=local-1\nfoo = bar\n"+
		"\n### keyroute testbed overrides\nalpha=2\nzeta=1\n", out)
}

func TestBrokerConfig(t *testing.T) {
	kv := brokerConfig("local-3", 1111, 2222, nil, map[string]string{"webServicePort": "9", "brokerDeduplicationEnabled": "true"})
	assert.Equal(t, "local-3", kv["clusterName"])
	assert.Equal(t, "1111", kv["brokerServicePort"])
	assert.Equal(t, "9", kv["webServicePort"], "ExtraConfig wins")
	assert.Equal(t, "true", kv["brokerDeduplicationEnabled"])
	for k, v := range map[string]string{
		"managedLedgerDefaultEnsembleSize": "1",
		"managedLedgerDefaultWriteQuorum":  "1",
		"managedLedgerDefaultAckQuorum":    "1",
		"bindAddress":                      "127.0.0.1",
		"advertisedAddress":                "127.0.0.1",
		"listeningInterface":               "lo",
		"transactionCoordinatorEnabled":    "true",
		"journalFlushWhenQueueEmpty":       "true",
		"allowEphemeralPorts":              "true",
	} {
		assert.Equal(t, v, kv[k], k)
	}
}

func TestPropertyKey(t *testing.T) {
	for line, want := range map[string]string{"a=b": "a", " a = b": "a", "a:b": "a", "a=": "a"} {
		k, ok := propertyKey(line)
		assert.True(t, ok, line)
		assert.Equal(t, want, k, line)
	}
	for _, line := range []string{"", "# a=b", "! a=b", "=b", "novalue"} {
		_, ok := propertyKey(line)
		assert.False(t, ok, line)
	}
}

func TestClusterPortsAreDistinct(t *testing.T) {
	sets, err := clusterPorts(4)
	require.NoError(t, err)
	require.Len(t, sets, 4)
	seen := map[int]bool{}
	for _, s := range sets {
		for _, p := range []int{s.broker, s.web, s.bookie} {
			assert.Positive(t, p)
			assert.False(t, seen[p], "port %d twice", p)
			seen[p] = true
		}
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := freePorts(20)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.Positive(t, p)
		assert.Less(t, p, 65536)
		assert.False(t, seen[p], "port %d twice", p)
		seen[p] = true
	}
}

func TestVerifySHA512(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("pulsar"), 0o644))
	sum := sha512.Sum512([]byte("pulsar"))
	require.NoError(t, verifySHA512(path, hex.EncodeToString(sum[:])))
	err := verifySHA512(path, distSHA512)
	assert.ErrorIs(t, err, ErrChecksum)
	assert.NotErrorIs(t, verifySHA512(filepath.Join(t.TempDir(), "missing"), distSHA512), ErrChecksum)
}

type entry struct {
	name, body, link string
	mode             int64
	typ              byte
}

func writeTarGz(t *testing.T, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	mtime := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.typ, Linkname: e.link, ModTime: mtime, Size: int64(len(e.body))}
		require.NoError(t, tw.WriteHeader(hdr))
		if e.typ == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	path := filepath.Join(t.TempDir(), "d.tar.gz")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

func TestUnpackTarGzStripsAndKeepsModes(t *testing.T) {
	src := writeTarGz(t, []entry{
		{name: "top/", mode: 0o755, typ: tar.TypeDir},
		{name: "top/bin/", mode: 0o755, typ: tar.TypeDir},
		{name: "top/bin/pulsar", body: "#!/bin/sh\n", mode: 0o755, typ: tar.TypeReg},
		{name: "top/conf/standalone.conf", body: "a=b\n", mode: 0o644, typ: tar.TypeReg},
		{name: "top/lib/link.jar", link: "real.jar", mode: 0o777, typ: tar.TypeSymlink},
	})
	dst := t.TempDir()
	require.NoError(t, unpackTarGz(context.Background(), src, dst, 1))
	st, err := os.Stat(filepath.Join(dst, "bin", "pulsar"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
	assert.Equal(t, 2025, st.ModTime().Year())
	b, err := os.ReadFile(filepath.Join(dst, "conf", "standalone.conf"))
	require.NoError(t, err)
	assert.Equal(t, "a=b\n", string(b))
	link, err := os.Readlink(filepath.Join(dst, "lib", "link.jar"))
	require.NoError(t, err)
	assert.Equal(t, "real.jar", link)
}

func TestUnpackTarGzRejectsEscapes(t *testing.T) {
	for _, e := range []entry{
		{name: "top/../../evil", body: "x", mode: 0o644, typ: tar.TypeReg},
		{name: "top/lib/l", link: "../../../etc/passwd", mode: 0o777, typ: tar.TypeSymlink},
		{name: "top/lib/l", link: "/etc/passwd", mode: 0o777, typ: tar.TypeSymlink},
	} {
		src := writeTarGz(t, []entry{e})
		err := unpackTarGz(context.Background(), src, t.TempDir(), 1)
		assert.Error(t, err, e.name)
	}
}

func TestEnsureDistributionHonoursHomeEnv(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "lib"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "conf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "conf", "standalone.conf"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(home, "conf", "log4j2.yaml"), nil, 0o644))
	t.Setenv(HomeEnv, home)
	got, err := EnsureDistribution(context.Background(), &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, home, got)

	t.Setenv(HomeEnv, t.TempDir()) // empty: not an installation
	_, err = EnsureDistribution(context.Background(), &bytes.Buffer{})
	assert.ErrorContains(t, err, HomeEnv)
}

func TestTailLines(t *testing.T) {
	assert.Equal(t, []string{"c", "d"}, tailLines([]byte("a\nb\nc\nd\n"), 2))
	assert.Equal(t, []string{"a", "b"}, tailLines([]byte("a\nb"), 5))
	assert.Nil(t, tailLines(nil, 3))
	assert.Nil(t, tailLines([]byte("a\n"), 0))
}

func TestFileTailReadsOnlyTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := range 50000 { // > tailBytes
		fmt.Fprintf(&b, "line %d\n", i)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	assert.Equal(t, []string{"line 49997", "line 49998", "line 49999"}, fileTail(path, 3))
	assert.Nil(t, fileTail(filepath.Join(t.TempDir(), "missing"), 3))
}

func TestClusterErrorCarriesLogTail(t *testing.T) {
	err := error(&ClusterError{Cluster: "local-2", Op: "ready", LogTail: []string{"boom"}, Err: ErrExited})
	assert.ErrorIs(t, err, ErrExited)
	var ce *ClusterError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "local-2", ce.Cluster)
	assert.Contains(t, err.Error(), "local-2")
	assert.Contains(t, err.Error(), "boom")
}

func TestJVMCommandLine(t *testing.T) {
	args := jvmCommandLine("/opt/pulsar", DefaultJVMArgs(), []string{"-XX:SharedArchiveFile=/x.jsa"}, "/d/standalone.conf", "/d", 3333)
	line := strings.Join(args, " ")
	assert.Equal(t, "-XX:SharedArchiveFile=/x.jsa", args[0])
	for _, want := range []string{
		"-cp /opt/pulsar/lib/*",
		"--add-opens java.base/java.nio=ALL-UNNAMED",
		"-Dio.netty.tryReflectionSetAccessible=true",
		"-XX:+UseSerialGC",
		mainClass + " --config /d/standalone.conf --metadata-dir /d/metadata --bookkeeper-dir /d/bookkeeper --bookkeeper-port 3333 --no-functions-worker --no-stream-storage",
	} {
		assert.Contains(t, line, want)
	}
	assert.True(t, strings.HasSuffix(line, "--no-stream-storage"))
}

func TestBindFailed(t *testing.T) {
	line := "java.net.BindException: Address already in use"
	assert.Equal(t, line, bindFailure([]string{"x", line}))
	assert.Empty(t, bindFailure([]string{"all good"}))
}

func TestStartRejectsNegativeClusters(t *testing.T) {
	_, err := Start(context.Background(), Options{Clusters: -1})
	assert.ErrorIs(t, err, ErrBadOptions)
}

func TestRemoveStaleDataDirs(t *testing.T) {
	parent := t.TempDir()
	mk := func(name, owner string) string {
		d := filepath.Join(parent, dataDirPrefix+name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		if owner != "" {
			require.NoError(t, os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o644))
		}
		return d
	}
	// A pid far above pid_max cannot be running.
	dead := mk("dead", "999999999")
	alive := mk("alive", strconv.Itoa(os.Getppid()))
	unknown := mk("unknown", "")
	removeStaleDataDirs(parent)
	assert.NoDirExists(t, dead)
	assert.DirExists(t, alive)
	assert.DirExists(t, unknown)
}
