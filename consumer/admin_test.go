package consumer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func TestAdminPath(t *testing.T) {
	for topic, want := range map[string]string{
		"persistent://acme/orders/events": "/admin/v2/persistent/acme/orders/events",
		"non-persistent://a/b/c":          "/admin/v2/non-persistent/a/b/c",
		"acme/orders/events":              "/admin/v2/persistent/acme/orders/events",
		"events":                          "/admin/v2/persistent/public/default/events",
	} {
		got, err := adminPath(topic)
		require.NoError(t, err, topic)
		assert.Equal(t, want, got, topic)
	}
	for _, bad := range []string{"http://a/b/c", "a/b", "a//c", "persistent://a/b/c/d"} {
		_, err := adminPath(bad)
		assert.ErrorIs(t, err, ErrBadOption, bad)
	}
}

// fakeAdmin answers the admin calls for topic "persistent://public/default/t".
func fakeAdmin(t *testing.T, partitions string, stats map[string]string) topology.Cluster {
	mux := http.NewServeMux()
	mux.HandleFunc("/admin/v2/persistent/public/default/t/partitions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(partitions))
	})
	for suffix, body := range stats {
		mux.HandleFunc("/admin/v2/persistent/public/default/t/"+suffix, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(body))
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return topology.Cluster{Name: "east", ServiceURL: "pulsar://127.0.0.1:6650", AdminURL: srv.URL, Weight: 1}
}

func TestTopicExists(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, topicExists(ctx, fakeAdmin(t, `{"partitions":4}`, nil), "t"), "partitioned")
	require.NoError(t, topicExists(ctx, fakeAdmin(t, `{"partitions":0}`, map[string]string{"stats": `{}`}), "t"), "not partitioned")
	err := topicExists(ctx, fakeAdmin(t, `{"partitions":0}`, nil), "t")
	assert.ErrorIs(t, err, ErrTopicNotFound, "no partitions, no stats: the topic does not exist")
}

func TestBacklog(t *testing.T) {
	ctx := context.Background()
	body := `{"subscriptions":{"s":{"msgBacklog":42},"other":{"msgBacklog":7}}}`
	cl := fakeAdmin(t, `{"partitions":4}`, map[string]string{"partitioned-stats": body, "stats": `{"subscriptions":{"s":{"msgBacklog":3}}}`})
	n, err := backlog(ctx, cl, "t", "s", true)
	require.NoError(t, err)
	assert.Equal(t, int64(42), n)
	n, err = backlog(ctx, cl, "t", "s", false)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	_, err = backlog(ctx, cl, "t", "missing", true)
	assert.ErrorContains(t, err, `"missing"`)

	down := topology.Cluster{Name: "west", AdminURL: "http://127.0.0.1:1"}
	_, err = backlog(ctx, down, "t", "s", true)
	var ue interface{ Timeout() bool }
	assert.True(t, errors.As(err, &ue), "a refused connection is reported: %v", err)
}
