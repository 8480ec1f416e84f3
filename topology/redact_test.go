package topology_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/keyroute/keyroute/topology"
)

func TestTokenNeverPrinted(t *testing.T) {
	topo, _ := validTopology(t)
	c := topo.Clusters[0]
	require.Equal(t, secret, c.Auth.Token)

	values := map[string]any{
		"topology": *topo, "*topology": topo, "cluster": c, "*cluster": &c,
		"auth": c.Auth, "*auth": &c.Auth, "clusters": topo.Clusters,
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %[1]v"} {
			out := fmt.Sprintf(verb, v)
			assert.NotContains(t, out, secret, "%s %s", name, verb)
			assert.NotContains(t, out, fmt.Sprintf("%x", secret), "%s %s", name, verb)
		}
		assert.NotContains(t, fmt.Sprint(v), secret, name)
		assert.NotContains(t, fmt.Sprintln(v), secret, name)
	}
	assert.Equal(t, "{Token:REDACTED TokenFile:}", c.Auth.String())
	assert.Equal(t, `topology.Auth{Token:"REDACTED", TokenFile:""}`, c.Auth.GoString())
	assert.Equal(t, "{Token: TokenFile:/x}", topology.Auth{TokenFile: "/x"}.String())
	assert.Contains(t, fmt.Sprintf("%+v", c), "Auth:{Token:REDACTED TokenFile:}")
}

func TestTokenNotInJSONOrSlog(t *testing.T) {
	topo, _ := validTopology(t)

	b, err := json.Marshal(topo)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret)
	assert.Contains(t, string(b), `"token":"REDACTED"`)

	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		slog.New(h).Info("cluster", "auth", topo.Clusters[0].Auth, "cluster", topo.Clusters[0], "topology", topo)
	}
	assert.NotContains(t, buf.String(), secret)
	assert.Contains(t, buf.String(), "auth.token=REDACTED")
}

func TestRedacted(t *testing.T) {
	topo, f := validTopology(t)
	r := topo.Redacted()

	assert.Equal(t, topology.RedactedToken, r.Clusters[0].Auth.Token)
	assert.Equal(t, f.token, r.Clusters[1].Auth.TokenFile, "token file paths are kept")
	assert.Empty(t, r.Clusters[1].Auth.Token, "an unset token stays unset")
	assert.Equal(t, secret, topo.Clusters[0].Auth.Token, "the original is untouched")
	r.Clusters[0].Name = "changed"
	assert.Equal(t, "east-1", topo.Clusters[0].Name, "the copy is deep")

	out, err := yaml.Marshal(r)
	require.NoError(t, err)
	assert.NotContains(t, string(out), secret)
	assert.Contains(t, string(out), "token: REDACTED")

	path := filepath.Join(t.TempDir(), "redacted.yaml")
	require.NoError(t, r.WriteFile(path))
	back, err := topology.Load(path)
	require.NoError(t, err, "a redacted topology is still valid")
	assert.Equal(t, r, back)

	assert.Nil(t, (*topology.Topology)(nil).Redacted())
}

// No error from Validate or ClientOptions quotes a token, even one that
// is itself invalid or set alongside other broken fields.
func TestTokenNotInErrors(t *testing.T) {
	topo, _ := validTopology(t)
	for i := range topo.Clusters {
		c := &topo.Clusters[i]
		c.Name = ""
		c.ServiceURL = "http://b"
		c.AdminURL = "ftp://a"
		c.Weight = -1
		c.Auth = topology.Auth{Token: secret + "\n", TokenFile: "/nonexistent/token"}
		c.TLS.CAFile = "/nonexistent/ca"
	}
	err := topo.Validate()
	require.ErrorIs(t, err, topology.ErrConflict)
	require.ErrorIs(t, err, topology.ErrBadSetting)
	assert.NotContains(t, err.Error(), secret)

	_, err = topo.Clusters[0].ClientOptions()
	require.ErrorIs(t, err, topology.ErrConflict)
	assert.NotContains(t, err.Error(), secret)
}
