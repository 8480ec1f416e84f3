package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// New and Update count a cluster as joined only once its subscription is
// published to the takes, not once it is open: join opens it, then
// publishes the read set, and New woken by another cluster's attempt in
// between returned with the cluster missing from the takes' first looks
// (a moved key's origin there was then released as on a cluster not
// read, a forced release that reordered the key).
func TestAwaitJoinsWaitsForThePublication(t *testing.T) {
	topo := &topology.Topology{Clusters: []topology.Cluster{{Name: "c1", ServiceURL: "pulsar://127.0.0.1:6651", Weight: 1}}}
	connect := func(context.Context, topology.Cluster, int) (Stream, func() error, error) {
		return quietStream{make(chan pulsar.ConsumerMessage)}, nil, nil
	}
	c, err := New(context.Background(), topo, Topic("t"), Subscription("s"), WithConnector(connect))
	require.NoError(t, err)
	defer c.Close(context.Background())

	// c2's subscription is open, not yet published.
	m := &member{name: "c2", err: errNoAnswer}
	k := &cluster{member: m, owner: c, link: &link{}}
	k.parts.Store(&[]*part{})
	m.cur.Store(k)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = c.awaitJoins(ctx, []*member{m}, true)
	require.ErrorIs(t, err, context.DeadlineExceeded, "not joined while not published")
	require.ErrorIs(t, err, ErrConnect)

	c.setMu.Lock()
	old := c.set.Load().members
	c.publish(append(old[:len(old):len(old)], m))
	c.setMu.Unlock()
	assert.NoError(t, c.awaitJoins(context.Background(), []*member{m}, true), "joined once published")
	c.setMu.Lock()
	c.publish(old)
	c.setMu.Unlock()
}

// quietStream is a subscription that delivers nothing.
type quietStream struct{ ch chan pulsar.ConsumerMessage }

func (s quietStream) Chan() <-chan pulsar.ConsumerMessage  { return s.ch }
func (quietStream) Ack(pulsar.Message) error               { return nil }
func (quietStream) AckID(pulsar.MessageID) error           { return nil }
func (quietStream) AckCumulative(pulsar.Message) error     { return nil }
func (quietStream) AckIDCumulative(pulsar.MessageID) error { return nil }
func (quietStream) Nack(pulsar.Message)                    {}
func (quietStream) NackID(pulsar.MessageID)                {}
func (quietStream) SeekByTime(time.Time) error             { return nil }
func (quietStream) Close()                                 {}
