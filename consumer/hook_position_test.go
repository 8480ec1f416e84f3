package consumer

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/consumer/internal/hook"
)

// stubPosition is a hook.Position that says who asked.
type stubPosition struct{ parts int }

func (s stubPosition) Partitions(context.Context, string, string) (int, error) { return s.parts, nil }
func (stubPosition) ResetAfter(context.Context, string, string, string, pulsar.MessageID) error {
	return nil
}

// What moves a cluster's cursors: a fake's Position when the connector
// has one (also under StartAfter's startConnector), else the admin API,
// else nothing (ErrNoAdmin): never a non-nil interface around a nil
// *admin.
func TestPositionerFor(t *testing.T) {
	ctx := context.Background()
	connect := hook.Connect(func(context.Context, hook.Sub) (*hook.Conn, error) { return nil, nil })
	a := &admin{url: "http://127.0.0.1:1"}
	for _, tc := range []struct {
		name  string
		conn  connector
		adm   *admin
		fake  bool // the fake's Position answers
		admin bool // the admin API answers
	}{
		{"pulsar, no admin", pulsarConnector{}, nil, false, false},
		{"pulsar, admin", pulsarConnector{}, a, false, true},
		{"pulsar under StartAfter, admin", &startConnector{inner: pulsarConnector{}}, a, false, true},
		{"pulsar under StartAfter, no admin", &startConnector{inner: pulsarConnector{}}, nil, false, false},
		{"fake without a Position", hookConnector{conn: connect}, nil, false, false},
		{"fake without a Position, admin", hookConnector{conn: connect}, a, false, true},
		{"fake", hookConnector{conn: connect, pos: stubPosition{7}}, nil, true, false},
		{"fake, admin", hookConnector{conn: connect, pos: stubPosition{7}}, a, true, false},
		{"fake under StartAfter", &startConnector{inner: hookConnector{conn: connect, pos: stubPosition{7}}}, nil, true, false},
	} {
		c := defaultCfg()
		c.connect = tc.conn
		p := c.positionerFor("east", tc.adm)
		switch {
		case tc.fake:
			require.NotNil(t, p, tc.name)
			n, err := p.partitions(ctx, "t")
			require.NoError(t, err, tc.name)
			assert.Equal(t, 7, n, tc.name)
		case tc.admin:
			assert.Same(t, a, p, tc.name)
		default:
			assert.True(t, p == nil, "%s: %#v", tc.name, p) // not assert.Nil, which takes a nil *admin for nil
		}
	}
}
