package topology_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

// want is one expected *FieldError.
type want struct {
	err     error
	cluster string
	index   int
	field   string
}

func TestValidateValid(t *testing.T) {
	topo, _ := validTopology(t)
	require.NoError(t, topo.Validate())
}

func TestValidateNoClusters(t *testing.T) {
	for name, topo := range map[string]*topology.Topology{
		"nil":   nil,
		"empty": {},
		"zero":  {Clusters: []topology.Cluster{}},
	} {
		t.Run(name, func(t *testing.T) {
			err := topo.Validate()
			require.ErrorIs(t, err, topology.ErrNoClusters)
			fes := fieldErrors(t, err)
			require.Len(t, fes, 1)
			assert.Equal(t, -1, fes[0].Index)
			assert.Equal(t, "clusters", fes[0].Field)
			assert.Empty(t, fes[0].Cluster)
		})
	}
}

func TestValidateErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	blank := filepath.Join(t.TempDir(), "blank")
	require.NoError(t, os.WriteFile(blank, []byte(" \n\n"), 0o600))
	dir := t.TempDir()

	tests := []struct {
		name   string
		mutate func(*topology.Topology, files)
		want   []want
	}{
		{"empty name", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "" },
			[]want{{topology.ErrMissingField, "#1", 1, "name"}}},
		{"name with space", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "west 1" },
			[]want{{topology.ErrBadName, "west 1", 1, "name"}}},
		{"name with tab", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "west\t1" },
			[]want{{topology.ErrBadName, "west\t1", 1, "name"}}},
		{"name with control", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "west\x00" },
			[]want{{topology.ErrBadName, "west\x00", 1, "name"}}},
		{"name with zero-width space", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "west\u200b" },
			[]want{{topology.ErrBadName, "west\u200b", 1, "name"}}},
		{"name not UTF-8", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "west\xff" },
			[]want{{topology.ErrBadName, "west\xff", 1, "name"}}},
		{"duplicate name", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "east-1" },
			[]want{{topology.ErrDuplicateName, "east-1", 1, "name"}}},
		{"names with same env prefix", func(tp *topology.Topology, _ files) { tp.Clusters[1].Name = "EAST_1" },
			[]want{{topology.ErrDuplicateName, "EAST_1", 1, "name"}}},
		{"empty serviceURL", func(tp *topology.Topology, _ files) { tp.Clusters[0].ServiceURL = "" },
			[]want{{topology.ErrMissingField, "east-1", 0, "serviceURL"}}},
		{"service scheme http", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "http://b.west.example:6650" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service without scheme", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "b.west.example:6650" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service without host", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service empty host with port", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://:6650" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service bad port", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://b.west.example:99999" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service empty port", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://b.west.example:" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service path", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://b.west.example:6650/x" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service user info", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://u:p@b.west.example:6650" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service bare IPv6", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://fe80::1:6650" },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"service trailing space", func(tp *topology.Topology, _ files) { tp.Clusters[1].ServiceURL = "pulsar://b.west.example:6650 " },
			[]want{{topology.ErrBadURL, "west-1", 1, "serviceURL"}}},
		{"admin scheme pulsar", func(tp *topology.Topology, _ files) { tp.Clusters[1].AdminURL = "pulsar://admin.west.example:8080" },
			[]want{{topology.ErrBadURL, "west-1", 1, "adminURL"}}},
		{"admin unparsable", func(tp *topology.Topology, _ files) { tp.Clusters[1].AdminURL = "http://admin.west.example:80x0" },
			[]want{{topology.ErrBadURL, "west-1", 1, "adminURL"}}},
		{"admin without host", func(tp *topology.Topology, _ files) { tp.Clusters[1].AdminURL = "http:///admin" },
			[]want{{topology.ErrBadURL, "west-1", 1, "adminURL"}}},
		{"admin user info", func(tp *topology.Topology, _ files) { tp.Clusters[1].AdminURL = "http://u:p@admin.west.example" },
			[]want{{topology.ErrBadURL, "west-1", 1, "adminURL"}}},
		{"duplicate serviceURL", func(tp *topology.Topology, _ files) {
			tp.Clusters[1].ServiceURL = "pulsar+ssl://b2.east.example:6651"
			tp.Clusters[1].TLS = tp.Clusters[0].TLS
		}, []want{{topology.ErrDuplicateURL, "west-1", 1, "serviceURL"}}},
		{"duplicate broker via default port and case", func(tp *topology.Topology, _ files) {
			tp.Clusters[0].ServiceURL = "pulsar://B.West.Example"
			tp.Clusters[0].TLS = topology.TLS{}
		}, []want{{topology.ErrDuplicateURL, "west-1", 1, "serviceURL"}}},
		{"duplicate adminURL", func(tp *topology.Topology, _ files) { tp.Clusters[1].AdminURL = "HTTPS://admin.east.example:8443/" },
			[]want{{topology.ErrDuplicateURL, "west-1", 1, "adminURL"}}},
		{"duplicate adminURL via default port", func(tp *topology.Topology, _ files) {
			tp.Clusters[0].AdminURL = "http://admin.example"
			tp.Clusters[1].AdminURL = "http://admin.example:80"
		}, []want{{topology.ErrDuplicateURL, "west-1", 1, "adminURL"}}},
		{"zero weight", func(tp *topology.Topology, _ files) { tp.Clusters[1].Weight = 0 },
			[]want{{topology.ErrBadWeight, "west-1", 1, "weight"}}},
		{"negative weight", func(tp *topology.Topology, _ files) { tp.Clusters[1].Weight = -1 },
			[]want{{topology.ErrBadWeight, "west-1", 1, "weight"}}},
		{"NaN weight", func(tp *topology.Topology, _ files) { tp.Clusters[1].Weight = math.NaN() },
			[]want{{topology.ErrBadWeight, "west-1", 1, "weight"}}},
		{"infinite weight", func(tp *topology.Topology, _ files) { tp.Clusters[1].Weight = math.Inf(1) },
			[]want{{topology.ErrBadWeight, "west-1", 1, "weight"}}},
		{"missing CA file", func(tp *topology.Topology, _ files) { tp.Clusters[0].TLS.CAFile = missing },
			[]want{{topology.ErrUnreadableFile, "east-1", 0, "tls.caFile"}}},
		{"CA file is a directory", func(tp *topology.Topology, _ files) { tp.Clusters[0].TLS.CAFile = dir },
			[]want{{topology.ErrUnreadableFile, "east-1", 0, "tls.caFile"}}},
		{"empty cert file", func(tp *topology.Topology, _ files) { tp.Clusters[0].TLS.CertFile = empty },
			[]want{{topology.ErrUnreadableFile, "east-1", 0, "tls.certFile"}}},
		{"missing key file", func(tp *topology.Topology, _ files) { tp.Clusters[0].TLS.KeyFile = missing },
			[]want{{topology.ErrUnreadableFile, "east-1", 0, "tls.keyFile"}}},
		{"missing token file", func(tp *topology.Topology, _ files) { tp.Clusters[1].Auth.TokenFile = missing },
			[]want{{topology.ErrUnreadableFile, "west-1", 1, "auth.tokenFile"}}},
		{"blank token file", func(tp *topology.Topology, _ files) { tp.Clusters[1].Auth.TokenFile = blank },
			[]want{{topology.ErrUnreadableFile, "west-1", 1, "auth.tokenFile"}}},
		{"device as token file", func(tp *topology.Topology, _ files) { tp.Clusters[1].Auth.TokenFile = os.DevNull },
			[]want{{topology.ErrUnreadableFile, "west-1", 1, "auth.tokenFile"}}},
		{"token and token file", func(tp *topology.Topology, _ files) { tp.Clusters[1].Auth.Token = secret },
			[]want{{topology.ErrConflict, "west-1", 1, "auth"}}},
		{"cert without key", func(tp *topology.Topology, _ files) { tp.Clusters[0].TLS.KeyFile = "" },
			[]want{{topology.ErrConflict, "east-1", 0, "tls.keyFile"}}},
		{"key without cert", func(tp *topology.Topology, _ files) { tp.Clusters[0].TLS.CertFile = "" },
			[]want{{topology.ErrConflict, "east-1", 0, "tls.certFile"}}},
		{"TLS files on plaintext URL", func(tp *topology.Topology, f files) { tp.Clusters[1].TLS.CAFile = f.ca },
			[]want{{topology.ErrConflict, "west-1", 1, "tls"}}},
		{"TLS flag on plaintext URL", func(tp *topology.Topology, _ files) { tp.Clusters[1].TLS.SkipHostnameChecking = true },
			[]want{{topology.ErrConflict, "west-1", 1, "tls"}}},
		{"token with newline", func(tp *topology.Topology, _ files) { tp.Clusters[0].Auth.Token = secret + "\n" },
			[]want{{topology.ErrBadSetting, "east-1", 0, "auth.token"}}},
		{"negative operation timeout", func(tp *topology.Topology, _ files) { tp.Clusters[0].Client.OperationTimeout = -time.Second },
			[]want{{topology.ErrBadSetting, "east-1", 0, "client.operationTimeout"}}},
		{"negative connection timeout", func(tp *topology.Topology, _ files) { tp.Clusters[0].Client.ConnectionTimeout = -1 },
			[]want{{topology.ErrBadSetting, "east-1", 0, "client.connectionTimeout"}}},
		{"negative connections", func(tp *topology.Topology, _ files) { tp.Clusters[0].Client.ConnectionsPerBroker = -1 },
			[]want{{topology.ErrBadSetting, "east-1", 0, "client.connectionsPerBroker"}}},
		{"every problem is reported", func(tp *topology.Topology, _ files) {
			tp.Clusters[0].Weight = 0
			tp.Clusters[0].Client.ConnectionsPerBroker = -1
			tp.Clusters[1].Name = ""
			tp.Clusters[1].ServiceURL = "ftp://x"
		}, []want{
			{topology.ErrBadWeight, "east-1", 0, "weight"},
			{topology.ErrBadSetting, "east-1", 0, "client.connectionsPerBroker"},
			{topology.ErrMissingField, "#1", 1, "name"},
			{topology.ErrBadURL, "#1", 1, "serviceURL"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo, f := validTopology(t)
			tt.mutate(topo, f)
			err := topo.Validate()
			require.Error(t, err)
			fes := fieldErrors(t, err)
			require.Len(t, fes, len(tt.want), "%v", err)
			for i, w := range tt.want {
				assert.ErrorIs(t, err, w.err)
				assert.ErrorIs(t, fes[i], w.err, "%v", fes[i])
				assert.Equal(t, w.cluster, fes[i].Cluster)
				assert.Equal(t, w.index, fes[i].Index)
				assert.Equal(t, w.field, fes[i].Field)
				assert.NotContains(t, fes[i].Error(), secret)
			}
		})
	}
}

func TestValidateAcceptedURLs(t *testing.T) {
	for _, u := range []string{
		"pulsar://localhost",
		"pulsar://localhost:6650/",
		"PULSAR+SSL://Broker.Example:6651",
		"pulsar://10.0.0.1:6650",
		"pulsar://[::1]:6650",
		"pulsar://[::1]",
		"pulsar://a.example:6650,b.example:6650;c.example",
	} {
		t.Run(u, func(t *testing.T) {
			topo := &topology.Topology{Clusters: []topology.Cluster{{Name: "c", ServiceURL: u, Weight: 1}}}
			require.NoError(t, topo.Validate())
		})
	}
	for _, u := range []string{"http://admin", "https://admin:8443/prefix/", "http://[::1]:8080"} {
		t.Run(u, func(t *testing.T) {
			topo := &topology.Topology{Clusters: []topology.Cluster{
				{Name: "c", ServiceURL: "pulsar://b", AdminURL: u, Weight: 1},
			}}
			require.NoError(t, topo.Validate())
		})
	}
}

// A FieldError's text names the cluster, index, field, reason and sentinel.
func TestFieldErrorText(t *testing.T) {
	for _, tt := range []struct {
		fe   topology.FieldError
		text string
	}{
		{topology.FieldError{Cluster: "east", Index: 2, Field: "serviceURL", Reason: `scheme "http" is not pulsar:// or pulsar+ssl://`, Err: topology.ErrBadURL},
			`topology: cluster "east" (#2): serviceURL: scheme "http" is not pulsar:// or pulsar+ssl://: bad URL`},
		{topology.FieldError{Cluster: "#3", Index: 3, Field: "name", Err: topology.ErrMissingField},
			`topology: cluster #3: name: missing field`},
		{topology.FieldError{Cluster: "east", Index: -1, Field: "weight", Err: topology.ErrBadWeight},
			`topology: cluster "east": weight: bad weight`},
		{topology.FieldError{Index: -1, Field: "clusters", Err: topology.ErrNoClusters},
			`topology: clusters: no clusters`},
	} {
		assert.Equal(t, tt.text, tt.fe.Error())
		assert.True(t, errors.Is(&tt.fe, tt.fe.Err))
	}
}
