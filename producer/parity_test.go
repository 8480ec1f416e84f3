package producer

import (
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar/crypto"
	"github.com/stretchr/testify/assert"

	"github.com/keyroute/keyroute/topology"
)

func TestClusterSettingsOverrideTheOptions(t *testing.T) {
	base := writerConfig{sendTimeout: int64(time.Second), linger: 7, batchMaxMessages: 10, batchMaxBytes: 20, codec: LZ4}
	wc := base
	overrideFor(&wc, topology.ProducerSettings{})
	assert.Equal(t, base, wc, "zero settings keep the options")
	overrideFor(&wc, topology.ProducerSettings{
		SendTimeout: time.Minute, Linger: time.Millisecond, BatchMaxMessages: 3, BatchMaxBytes: 4, Compression: "zstd",
	})
	assert.Equal(t, writerConfig{sendTimeout: int64(time.Minute), linger: int64(time.Millisecond),
		batchMaxMessages: 3, batchMaxBytes: 4, codec: ZSTD}, wc)
}

func TestParityOptionsAreChecked(t *testing.T) {
	for name, o := range map[string]Opt{
		"Chunking(1024) needs Batching(false)": Chunking(1024),
		"Chunking(-1)":                         Chunking(-1),
		"CompressionLevel(7)":                  CompressionLevel(7),
		`Name("a b")`:                          Name("a b"),
		"Encryption([])":                       Encryption(nil),
		"Encryption([k])":                      Encryption(nil, "k"),
	} {
		c := defaultCfg()
		c.topic = "t"
		o.apply(&c)
		err := c.validate()
		assert.ErrorIs(t, err, ErrBadOption, name)
		assert.ErrorContains(t, err, name)
	}
	c := defaultCfg()
	c.topic = "t"
	for _, o := range []Opt{Batching(false), Chunking(1024), CompressionLevel(BetterLevel), Name("orders-1.v2"),
		KeyBasedBatching(true), Encryption(crypto.NewFileKeyReader("pub.pem", "priv.pem"), "k")} {
		o.apply(&c)
	}
	assert.NoError(t, c.validate())
}
