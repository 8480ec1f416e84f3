package topology_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func TestAdminClientSendsTheToken(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("first\n"), 0o600))
	get := func(c topology.Cluster) {
		hc, err := c.AdminClient()
		require.NoError(t, err)
		resp, err := hc.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
	}
	get(topology.Cluster{Name: "a", AdminURL: srv.URL})
	get(topology.Cluster{Name: "a", AdminURL: srv.URL, Auth: topology.Auth{Token: "inline"}})
	fromFile := topology.Cluster{Name: "a", AdminURL: srv.URL, Auth: topology.Auth{TokenFile: file}}
	get(fromFile)
	require.NoError(t, os.WriteFile(file, []byte("rotated"), 0o600))
	get(fromFile)
	assert.Equal(t, []string{"", "Bearer inline", "Bearer first", "Bearer rotated"}, got)

	require.NoError(t, os.Remove(file))
	hc, err := fromFile.AdminClient()
	require.NoError(t, err)
	_, err = hc.Get(srv.URL)
	assert.ErrorIs(t, err, topology.ErrUnreadableFile)
	assert.ErrorContains(t, err, "auth.tokenFile")
}

func TestAdminClientNeedsAnAdminURL(t *testing.T) {
	_, err := topology.Cluster{Name: "a"}.AdminClient()
	assert.ErrorIs(t, err, topology.ErrNoAdminURL)
	assert.ErrorContains(t, err, `"a"`)
}

func TestAdminClientChecksTLSFiles(t *testing.T) {
	c := topology.Cluster{Name: "a", AdminURL: "https://127.0.0.1:8443", TLS: topology.TLS{CAFile: filepath.Join(t.TempDir(), "missing.pem")}}
	_, err := c.AdminClient()
	assert.ErrorIs(t, err, topology.ErrUnreadableFile)
	var fe *topology.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "tls.caFile", fe.Field)
}
