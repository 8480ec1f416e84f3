package topology_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func TestEnvPrefix(t *testing.T) {
	for name, want := range map[string]string{
		"east-1":   "KEYROUTE_CLUSTER_EAST_1_",
		"eu.west":  "KEYROUTE_CLUSTER_EU_WEST_",
		"East_1":   "KEYROUTE_CLUSTER_EAST_1_",
		"zürich":   "KEYROUTE_CLUSTER_Z_RICH_",
		"a/b:c":    "KEYROUTE_CLUSTER_A_B_C_",
		"Cluster9": "KEYROUTE_CLUSTER_CLUSTER9_",
	} {
		assert.Equal(t, want, topology.EnvPrefix(name), name)
	}
}

// env returns a lookup function over m.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestApplyEnv(t *testing.T) {
	base := func() *topology.Topology {
		return &topology.Topology{Clusters: []topology.Cluster{
			{Name: "east-1", ServiceURL: "pulsar://east:6650", AdminURL: "http://east:8080", Auth: topology.Auth{TokenFile: "/run/east"}},
			{Name: "west", ServiceURL: "pulsar://west:6650", Auth: topology.Auth{Token: "file-token"}},
			{ServiceURL: "pulsar://unnamed:6650"},
		}}
	}
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, tp *topology.Topology)
	}{
		{"nothing set", nil, func(t *testing.T, tp *topology.Topology) {
			assert.Equal(t, base(), tp)
		}},
		{"URLs", map[string]string{
			"KEYROUTE_CLUSTER_EAST_1_SERVICE_URL": "pulsar+ssl://east2:6651",
			"KEYROUTE_CLUSTER_EAST_1_ADMIN_URL":   "https://east2:8443",
			"KEYROUTE_CLUSTER_WEST_SERVICE_URL":   "pulsar://west2:6650",
		}, func(t *testing.T, tp *topology.Topology) {
			assert.Equal(t, "pulsar+ssl://east2:6651", tp.Clusters[0].ServiceURL)
			assert.Equal(t, "https://east2:8443", tp.Clusters[0].AdminURL)
			assert.Equal(t, "pulsar://west2:6650", tp.Clusters[1].ServiceURL)
			assert.Empty(t, tp.Clusters[1].AdminURL)
			assert.Equal(t, "pulsar://unnamed:6650", tp.Clusters[2].ServiceURL)
		}},
		{"token replaces token file", map[string]string{"KEYROUTE_CLUSTER_EAST_1_TOKEN": secret},
			func(t *testing.T, tp *topology.Topology) {
				assert.Equal(t, topology.Auth{Token: secret}, tp.Clusters[0].Auth)
			}},
		{"token file replaces token", map[string]string{"KEYROUTE_CLUSTER_WEST_TOKEN_FILE": "/run/west"},
			func(t *testing.T, tp *topology.Topology) {
				assert.Equal(t, topology.Auth{TokenFile: "/run/west"}, tp.Clusters[1].Auth)
			}},
		{"both token and file", map[string]string{
			"KEYROUTE_CLUSTER_WEST_TOKEN":      secret,
			"KEYROUTE_CLUSTER_WEST_TOKEN_FILE": "/run/west",
		}, func(t *testing.T, tp *topology.Topology) {
			assert.Equal(t, topology.Auth{Token: secret, TokenFile: "/run/west"}, tp.Clusters[1].Auth)
		}},
		{"empty values are ignored", map[string]string{
			"KEYROUTE_CLUSTER_EAST_1_SERVICE_URL": "",
			"KEYROUTE_CLUSTER_EAST_1_TOKEN":       "",
		}, func(t *testing.T, tp *topology.Topology) {
			assert.Equal(t, base(), tp)
		}},
		{"other spellings are ignored", map[string]string{
			"KEYROUTE_CLUSTER_east-1_SERVICE_URL": "pulsar://x",
			"KEYROUTE_CLUSTER_EAST1_SERVICE_URL":  "pulsar://x",
			"keyroute_cluster_east_1_service_url": "pulsar://x",
		}, func(t *testing.T, tp *topology.Topology) {
			assert.Equal(t, base(), tp)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := base()
			tp.ApplyEnv(env(tt.env))
			tt.check(t, tp)
		})
	}
}

func TestApplyEnvNil(t *testing.T) {
	var tp *topology.Topology
	tp.ApplyEnv(env(nil))
	tp = &topology.Topology{Clusters: []topology.Cluster{{Name: "a"}}}
	tp.ApplyEnv(nil)
	assert.Equal(t, "a", tp.Clusters[0].Name)
}

// Load applies the process environment before validating.
func TestLoadAppliesEnv(t *testing.T) {
	f := newFiles(t)
	t.Setenv("KEYROUTE_CLUSTER_EAST_1_TOKEN", secret)
	t.Setenv("KEYROUTE_CLUSTER_WEST_1_SERVICE_URL", "pulsar://override.west.example:6650")
	t.Setenv("KEYROUTE_CLUSTER_WEST_1_TOKEN_FILE", f.token)

	topo, err := topology.Load("testdata/valid.yaml")
	require.NoError(t, err)
	assert.Equal(t, topology.Auth{Token: secret}, topo.Clusters[0].Auth)
	assert.Equal(t, "pulsar://override.west.example:6650", topo.Clusters[1].ServiceURL)
	assert.Equal(t, topology.Auth{TokenFile: f.token}, topo.Clusters[1].Auth)
}

// An override is validated like the file it overrides, and the error
// names the field, not the variable's value.
func TestLoadValidatesEnv(t *testing.T) {
	t.Setenv("KEYROUTE_CLUSTER_WEST_1_SERVICE_URL", "http://west.example:6650")
	t.Setenv("KEYROUTE_CLUSTER_WEST_1_TOKEN", secret+" ")

	_, err := topology.Load("testdata/valid.yaml")
	require.ErrorIs(t, err, topology.ErrBadURL)
	require.ErrorIs(t, err, topology.ErrBadSetting)
	assert.NotContains(t, err.Error(), secret)
	fes := fieldErrors(t, err)
	require.Len(t, fes, 2)
	assert.Equal(t, "serviceURL", fes[0].Field)
	assert.Equal(t, "auth.token", fes[1].Field)
	assert.Equal(t, "west-1", fes[1].Cluster)
}
