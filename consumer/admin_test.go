package consumer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// adminOf is the admin API of cl, for tests.
func adminOf(t *testing.T, cl topology.Cluster) *admin {
	a, err := newAdmin(cl)
	require.NoError(t, err)
	t.Cleanup(a.close)
	return a
}

func TestTopicExists(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, adminOf(t, fakeAdmin(t, `{"partitions":4}`, nil)).topicExists(ctx, "t"), "partitioned")
	require.NoError(t, adminOf(t, fakeAdmin(t, `{"partitions":0}`, map[string]string{"stats": `{}`})).topicExists(ctx, "t"), "not partitioned")
	err := adminOf(t, fakeAdmin(t, `{"partitions":0}`, nil)).topicExists(ctx, "t")
	assert.ErrorIs(t, err, ErrTopicNotFound, "no partitions, no stats: the topic does not exist")
}

func TestBacklog(t *testing.T) {
	ctx := context.Background()
	body := `{"subscriptions":{"s":{"msgBacklog":42},"other":{"msgBacklog":7}}}`
	a := adminOf(t, fakeAdmin(t, `{"partitions":4}`, map[string]string{"partitioned-stats": body, "stats": `{"subscriptions":{"s":{"msgBacklog":3}}}`}))
	n, err := a.backlog(ctx, "t", "s", true)
	require.NoError(t, err)
	assert.Equal(t, int64(42), n)
	n, err = a.backlog(ctx, "t", "s", false)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	_, err = a.backlog(ctx, "t", "missing", true)
	assert.ErrorContains(t, err, `"missing"`)

	down := adminOf(t, topology.Cluster{Name: "west", AdminURL: "http://127.0.0.1:1"})
	_, err = down.backlog(ctx, "t", "s", true)
	var ue *url.Error
	require.ErrorAs(t, err, &ue, "a refused connection is reported")
	assert.Contains(t, ue.URL, "127.0.0.1:1/admin/v2/persistent/public/default/t/partitioned-stats")
}
