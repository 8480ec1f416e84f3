package router_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

// update rewrites testdata/vectors.json from the current code. Use it only
// for a deliberate, versioned change of the placement contract.
var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the current code")

const vectorsPath = "testdata/vectors.json"

// vectorFile is the layout of testdata/vectors.json, documented in SPEC.md.
type vectorFile struct {
	Comment string       `json:"comment"`
	Sets    []vectorSet  `json:"sets"`
	Keyed   []keyedRow   `json:"keyed"`
	Keyless []keylessRow `json:"keyless"`
}

type vectorSet struct {
	Name    string         `json:"name"`
	Members []vectorMember `json:"members"`
}

type vectorMember struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

func (s vectorSet) members() []router.Member {
	ms := make([]router.Member, len(s.Members))
	for i, m := range s.Members {
		ms[i] = router.Member{Name: m.Name, Weight: m.Weight}
	}
	return ms
}

type keyedRow struct {
	Set        string `json:"set"`
	Key        string `json:"key"`
	KeyHex     string `json:"key_utf8_hex"`
	Hash       string `json:"hash"`
	Cluster    string `json:"cluster"`
	Partitions int    `json:"partitions"`
	Partition  int    `json:"partition"`
}

type keylessRow struct {
	Set        string `json:"set"`
	Seq        uint64 `json:"seq"`
	Hash       string `json:"hash"`
	Cluster    string `json:"cluster"`
	Partitions int    `json:"partitions"`
	Partition  int    `json:"partition"`
}

// The inputs the vectors cover. Members are listed out of name order on
// purpose: placement must not depend on it.
var (
	vectorSets = []vectorSet{
		{"five-equal", []vectorMember{{"waw", 1}, {"ams", 1}, {"par", 1}, {"fra", 1}, {"lon", 1}}},
		{"six-equal", []vectorMember{{"waw", 1}, {"ams", 1}, {"par", 1}, {"fra", 1}, {"lon", 1}, {"mad", 1}}},
		{"three-weighted", []vectorMember{{"large", 3}, {"small", 1}, {"medium", 2}}},
	}
	vectorKeys = []string{
		"a",
		"abc",
		"order-42",
		"user:1234567890",
		"0123456789abcdef",                     // 16 bytes
		"tenant/7/device/0042",                 // 20 bytes
		"3f2c9a4e-8b1d-4c6f-9e2a-7d5b1c0e4f88", // 36 bytes
		"café",
		"ключ-заказа",
		"注文-2024-0001",
		"rocket 🚀 key",
		"tab\tnewline\nnul\x00end",
		strings.Repeat("long-key-", 40), // 360 bytes
	}
	vectorPartitions = []int{1, 5, 10, 7, 100}
	vectorSeqs       = []uint64{0, 1, 2, 3, 4, 1000, 1 << 40}
)

func hexHash(h uint64) string { return fmt.Sprintf("%016x", h) }

func buildVectors(t *testing.T) vectorFile {
	t.Helper()
	f := vectorFile{
		Comment: "Known-answer vectors for keyroute placement; see router/SPEC.md. " +
			"hash is xxhash64 (seed 0) as 16 lowercase hex digits; cluster is a member name.",
		Sets: vectorSets,
	}
	for _, set := range vectorSets {
		r := mustNew(t, set.members())
		for _, key := range vectorKeys {
			h := router.Hash(key)
			for _, n := range vectorPartitions {
				f.Keyed = append(f.Keyed, keyedRow{
					Set: set.Name, Key: key, KeyHex: hex.EncodeToString([]byte(key)), Hash: hexHash(h),
					Cluster: owner(r, h), Partitions: n, Partition: router.Partition(h, n),
				})
			}
		}
		for _, seq := range vectorSeqs {
			h := router.KeylessHash(seq)
			f.Keyless = append(f.Keyless, keylessRow{
				Set: set.Name, Seq: seq, Hash: hexHash(h),
				Cluster: owner(r, h), Partitions: 10, Partition: router.Partition(h, 10),
			})
		}
	}
	return f
}

// TestVectors checks every row of testdata/vectors.json. It never derives
// the expected values from the code unless -update is given.
func TestVectors(t *testing.T) {
	if *update {
		require.NoError(t, os.WriteFile(vectorsPath, marshalVectors(t, buildVectors(t)), 0o644))
		t.Logf("rewrote %s", vectorsPath)
	}

	b, err := os.ReadFile(filepath.FromSlash(vectorsPath))
	require.NoError(t, err)
	var f vectorFile
	require.NoError(t, json.Unmarshal(b, &f))
	require.Len(t, f.Sets, 3)
	require.GreaterOrEqual(t, len(f.Keyed), 150, "vectors file lost rows")
	require.GreaterOrEqual(t, len(f.Keyless), 15, "vectors file lost rows")

	routers := make(map[string]*router.Router)
	for _, s := range f.Sets {
		routers[s.Name] = mustNew(t, s.members())
	}
	for i, row := range f.Keyed {
		r := routers[row.Set]
		require.NotNil(t, r, "row %d: unknown set %q", i, row.Set)
		raw, err := hex.DecodeString(row.KeyHex)
		require.NoError(t, err)
		require.Equal(t, row.Key, string(raw), "row %d: key and key_utf8_hex disagree", i)
		require.NotEmpty(t, row.Key, "row %d: the empty key is keyless and belongs in keyless", i)

		h := router.Hash(row.Key)
		assert.Equal(t, row.Hash, hexHash(h), "row %d key %q: hash", i, row.Key)
		assert.Equal(t, row.Cluster, owner(r, h), "row %d key %q set %s: cluster", i, row.Key, row.Set)
		assert.Equal(t, row.Partition, router.Partition(h, row.Partitions), "row %d key %q: partition of %d", i, row.Key, row.Partitions)
	}
	for i, row := range f.Keyless {
		r := routers[row.Set]
		require.NotNil(t, r, "keyless row %d: unknown set %q", i, row.Set)
		h := router.KeylessHash(row.Seq)
		assert.Equal(t, row.Hash, hexHash(h), "keyless row %d seq %d: hash", i, row.Seq)
		assert.Equal(t, row.Cluster, owner(r, h), "keyless row %d seq %d set %s: cluster", i, row.Seq, row.Set)
		assert.Equal(t, row.Partition, router.Partition(h, row.Partitions), "keyless row %d seq %d: partition", i, row.Seq)
	}
}

// TestVectorsCoverInputs keeps the file in step with the inputs listed
// above, so that a new input cannot be added without regenerating.
func TestVectorsCoverInputs(t *testing.T) {
	b, err := os.ReadFile(vectorsPath)
	require.NoError(t, err)
	var f vectorFile
	require.NoError(t, json.Unmarshal(b, &f))
	want := buildVectors(t)
	assert.Equal(t, len(want.Keyed), len(f.Keyed))
	assert.Equal(t, len(want.Keyless), len(f.Keyless))
	seen := map[string]bool{}
	for _, row := range f.Keyed {
		seen[row.Set+"\x00"+row.Key+"\x00"+strconv.Itoa(row.Partitions)] = true
	}
	for _, row := range want.Keyed {
		assert.True(t, seen[row.Set+"\x00"+row.Key+"\x00"+strconv.Itoa(row.Partitions)], "missing %s/%q/%d", row.Set, row.Key, row.Partitions)
	}
}

// marshalVectors writes f as JSON with one set or row per line, so that a
// diff of the file shows exactly which placements changed.
func marshalVectors(t *testing.T, f vectorFile) []byte {
	t.Helper()
	var b strings.Builder
	line := func(v any, last bool) {
		j, err := json.Marshal(v)
		require.NoError(t, err)
		b.WriteString("    ")
		b.Write(j)
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	list := func(name string, n int, at func(int) any, last bool) {
		fmt.Fprintf(&b, "  %q: [\n", name)
		for i := range n {
			line(at(i), i == n-1)
		}
		b.WriteString("  ]")
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	c, err := json.Marshal(f.Comment)
	require.NoError(t, err)
	fmt.Fprintf(&b, "{\n  \"comment\": %s,\n", c)
	list("sets", len(f.Sets), func(i int) any { return f.Sets[i] }, false)
	list("keyed", len(f.Keyed), func(i int) any { return f.Keyed[i] }, false)
	list("keyless", len(f.Keyless), func(i int) any { return f.Keyless[i] }, true)
	b.WriteString("}\n")
	return []byte(b.String())
}
