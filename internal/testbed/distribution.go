package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

const (
	// PulsarVersion is the Pulsar server version the test bed runs.
	PulsarVersion = "4.0.8"
	// HomeEnv names the environment variable that points at an existing
	// Pulsar installation; when set, nothing is downloaded.
	HomeEnv = "KEYROUTE_PULSAR_HOME"

	distArtifact = "org.apache.pulsar:pulsar-server-distribution:" + PulsarVersion + ":tar.gz:bin"
	distFile     = "pulsar-server-distribution-" + PulsarVersion + "-bin.tar.gz"
	// distSHA512 is the pinned SHA-512 of distFile as published on Maven
	// Central. Maven's own .sha1 check is weaker; this one is ours.
	distSHA512 = "65b769b10696cdfebf7fc5bcdc95dd663702e27051e616c1a13cb100e91279525be35352171befe7b0011176330aab29bd0a6c8a0f2f0646641af46d2e33cbd6"
)

// cacheRoot returns the per-user directory holding the unpacked
// distribution and the class-data-sharing archives.
func cacheRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testbed: user cache dir: %w", err)
	}
	return filepath.Join(dir, "keyroute"), nil
}

// EnsureDistribution returns the directory of a usable Pulsar installation.
//
// If KEYROUTE_PULSAR_HOME is set it must point at an installation (with
// lib/ and conf/standalone.conf) and is returned as is. Otherwise the
// distribution is unpacked once into
// filepath.Join(os.UserCacheDir(), "keyroute", "pulsar-"+PulsarVersion):
// the first call downloads it with mvn, verifies its SHA-512 (ErrChecksum on
// a mismatch) and unpacks it; later calls, and concurrent calls from other
// processes, reuse it. Progress goes to w (nil means os.Stderr). ctx bounds
// the whole operation, including waiting for another process's download.
func EnsureDistribution(ctx context.Context, w io.Writer) (string, error) {
	if w == nil {
		w = os.Stderr
	}
	if home := os.Getenv(HomeEnv); home != "" {
		if err := checkHome(home); err != nil {
			return "", fmt.Errorf("testbed: %s=%s: %w", HomeEnv, home, err)
		}
		return home, nil
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	home := filepath.Join(root, "pulsar-"+PulsarVersion)
	if checkHome(home) == nil {
		return home, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(root, "pulsar-"+PulsarVersion+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another process may have finished while we waited for the lock.
	if checkHome(home) == nil {
		return home, nil
	}
	if err := install(ctx, w, root, home); err != nil {
		return "", err
	}
	return home, nil
}

// install downloads, verifies and unpacks the distribution into home.
// The caller holds the cache lock.
func install(ctx context.Context, w io.Writer, root, home string) error {
	dl, err := os.MkdirTemp(root, "download-")
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	defer os.RemoveAll(dl)

	start := time.Now()
	fmt.Fprintf(w, "testbed: downloading %s with mvn ...\n", distArtifact)
	if err := download(ctx, dl); err != nil {
		return err
	}
	tarball := filepath.Join(dl, distFile)
	fmt.Fprintf(w, "testbed: downloaded in %s\n", since(start))

	start = time.Now()
	fmt.Fprintf(w, "testbed: verifying SHA-512 of %s\n", distFile)
	if err := verifySHA512(tarball, distSHA512); err != nil {
		return err
	}
	fmt.Fprintf(w, "testbed: verified in %s\n", since(start))

	start = time.Now()
	fmt.Fprintf(w, "testbed: unpacking into %s\n", home)
	tmp, err := os.MkdirTemp(root, "unpack-")
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after a successful rename
	if err := unpackTarGz(ctx, tarball, tmp, 1); err != nil {
		return err
	}
	if err := checkHome(tmp); err != nil {
		return fmt.Errorf("testbed: unpacked %s: %w", distFile, err)
	}
	if err := os.Rename(tmp, home); err != nil {
		// Rename-wins: a racing process without our lock (e.g. a different
		// lock directory) may have put a complete install there first.
		if checkHome(home) == nil {
			return nil
		}
		return fmt.Errorf("testbed: install %s: %w", home, err)
	}
	fmt.Fprintf(w, "testbed: unpacked in %s\n", since(start))
	return nil
}

// download runs mvn to copy the distribution artifact into dir.
func download(ctx context.Context, dir string) error {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return fmt.Errorf("%w: mvn (needed to fetch %s): %v", ErrToolMissing, distArtifact, err)
	}
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "--strict-checksums",
		"dependency:copy",
		"-Dartifact="+distArtifact,
		"-DoutputDirectory="+dir)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("testbed: download %s: %w", distArtifact, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("testbed: mvn dependency:copy %s: %w\n%s", distArtifact, err, tail(out, 40))
	}
	if _, err := os.Stat(filepath.Join(dir, distFile)); err != nil {
		return fmt.Errorf("testbed: mvn did not produce %s: %w", distFile, err)
	}
	return nil
}

// checkHome reports whether dir looks like a Pulsar installation.
func checkHome(dir string) error {
	for _, p := range []string{"lib", filepath.Join("conf", "standalone.conf"), filepath.Join("conf", "log4j2.yaml")} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("not a Pulsar installation: %s missing", p)
			}
			return err
		}
	}
	return nil
}

func since(t time.Time) time.Duration {
	return time.Since(t).Round(10 * time.Millisecond)
}
