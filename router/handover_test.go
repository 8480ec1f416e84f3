package router_test

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

// handoverFile is the layout of testdata/handover.json: known answers for
// HANDOVER.md's encodings, written from the document, not from this code.
type handoverFile struct {
	Markers []struct {
		Name       string            `json:"name"`
		Producer   string            `json:"producer"`
		Epoch      uint64            `json:"epoch"`
		Moved      uint64            `json:"moved"`
		Properties map[string]string `json:"properties"`
	} `json:"markers"`
	Tags []struct {
		Name     string `json:"name"`
		Producer string `json:"producer"`
		Epoch    uint64 `json:"epoch"`
		From     []struct {
			Cluster   string `json:"cluster"`
			Partition int32  `json:"partition"`
			Ledger    int64  `json:"ledger"`
			Entry     int64  `json:"entry"`
			Batch     int32  `json:"batch"`
		} `json:"from"`
		Unordered  bool              `json:"unordered"`
		Properties map[string]string `json:"properties"`
	} `json:"tags"`
	NotHandover []struct {
		Name       string            `json:"name"`
		Properties map[string]string `json:"properties"`
	} `json:"not_handover"`
	Invalid []struct {
		Name       string            `json:"name"`
		Property   string            `json:"property"`
		Properties map[string]string `json:"properties"`
	} `json:"invalid"`
	Positions []struct {
		A, B    [3]int64
		Compare int `json:"compare"`
	} `json:"positions"`
}

func loadHandover(t *testing.T) handoverFile {
	t.Helper()
	raw, err := os.ReadFile("testdata/handover.json")
	require.NoError(t, err)
	var f handoverFile
	require.NoError(t, json.Unmarshal(raw, &f))
	require.NotEmpty(t, f.Markers)
	require.NotEmpty(t, f.Tags)
	require.NotEmpty(t, f.Invalid)
	return f
}

func hexID(t *testing.T, s string) uint64 {
	t.Helper()
	id, err := strconv.ParseUint(s, 16, 64)
	require.NoError(t, err)
	return id
}

func TestHandoverMarkers(t *testing.T) {
	for _, row := range loadHandover(t).Markers {
		t.Run(row.Name, func(t *testing.T) {
			m := router.Marker{Producer: hexID(t, row.Producer), Epoch: row.Epoch, Moved: row.Moved}
			assert.Equal(t, row.Properties, m.Properties(), "encoding")
			got, ok, err := router.ParseMarker(row.Properties)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, m, got, "decoding")
			_, isTag, err := router.ParseTag(row.Properties)
			assert.True(t, isTag && err != nil, "a marker is not a moved message")
		})
	}
}

func TestHandoverTags(t *testing.T) {
	for _, row := range loadHandover(t).Tags {
		t.Run(row.Name, func(t *testing.T) {
			tag := router.Tag{Producer: hexID(t, row.Producer), Epoch: row.Epoch, Unordered: row.Unordered}
			for _, o := range row.From {
				tag.From = append(tag.From, router.Origin{Cluster: o.Cluster, Partition: o.Partition,
					Pos: router.Position{Ledger: o.Ledger, Entry: o.Entry, Batch: o.Batch}})
			}
			// The application's own properties stay as they are.
			props := map[string]string{"trace": "abc"}
			tag.AddTo(props)
			want := map[string]string{"trace": "abc"}
			for k, v := range row.Properties {
				want[k] = v
			}
			assert.Equal(t, want, props, "encoding")
			if len(tag.From) == 1 {
				assert.Equal(t, row.Properties[router.PropFrom], tag.From[0].String())
			}

			got, ok, err := router.ParseTag(props)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, tag, got, "decoding")
			_, isMarker, err := router.ParseMarker(props)
			assert.False(t, isMarker)
			assert.NoError(t, err)
			name, reserved := router.ReservedProperty(row.Properties)
			assert.True(t, reserved)
			assert.Equal(t, router.PropEpoch, name, "the first reserved name in sorted order")
		})
	}
}

func TestHandoverNotHandover(t *testing.T) {
	for _, row := range loadHandover(t).NotHandover {
		t.Run(row.Name, func(t *testing.T) {
			_, ok, err := router.ParseMarker(row.Properties)
			assert.False(t, ok)
			assert.NoError(t, err)
			_, ok, err = router.ParseTag(row.Properties)
			assert.False(t, ok)
			assert.NoError(t, err)
			_, reserved := router.ReservedProperty(row.Properties)
			assert.False(t, reserved)
		})
	}
}

func TestHandoverInvalid(t *testing.T) {
	for _, row := range loadHandover(t).Invalid {
		t.Run(row.Name, func(t *testing.T) {
			var err error
			var ok bool
			if _, marker := row.Properties[router.PropMarker]; marker {
				_, ok, err = router.ParseMarker(row.Properties)
			} else {
				_, ok, err = router.ParseTag(row.Properties)
			}
			assert.True(t, ok, "recognised as hand-over properties")
			require.ErrorIs(t, err, router.ErrBadHandover)
			var he *router.HandoverError
			require.True(t, errors.As(err, &he))
			assert.Equal(t, row.Property, he.Property, "the error names the property: %v", err)
			assert.Equal(t, row.Properties[row.Property], he.Value)
		})
	}
}

func TestHandoverPositions(t *testing.T) {
	for _, row := range loadHandover(t).Positions {
		a := router.Position{Ledger: row.A[0], Entry: row.A[1], Batch: int32(row.A[2])}
		b := router.Position{Ledger: row.B[0], Entry: row.B[1], Batch: int32(row.B[2])}
		assert.Equal(t, row.Compare, a.Compare(b), "%v vs %v", a, b)
		assert.Equal(t, -row.Compare, b.Compare(a), "%v vs %v", b, a)
	}
}

// FuzzParseTag checks that any properties either decode to a tag that
// encodes back to the same hand-over properties, or fail with a
// *HandoverError; never a panic.
func FuzzParseTag(f *testing.F) {
	f.Add("1b2c3d4e5f607182", "1", "3:17:4:2:east 0:0:0:-1:mad", "")
	f.Add("0123456789abcdef", "7", "2147483647:9223372036854775807:12:0:eu:west:1", "1")
	f.Fuzz(func(t *testing.T, pid, epoch, from, unordered string) {
		props := map[string]string{router.PropProducer: pid, router.PropEpoch: epoch, router.PropFrom: from}
		if unordered != "" {
			props[router.PropUnordered] = unordered
		}
		tag, ok, err := router.ParseTag(props)
		require.True(t, ok)
		if err != nil {
			var he *router.HandoverError
			require.True(t, errors.As(err, &he), "%v", err)
			return
		}
		again := map[string]string{}
		tag.AddTo(again)
		assert.Equal(t, props, again)
	})
}
