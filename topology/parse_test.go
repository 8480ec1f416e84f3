package topology_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/topology"
)

func TestLoadValid(t *testing.T) {
	topo, err := topology.Load("testdata/valid.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"east-1", "west-1"}, topo.Names())

	east := topo.Clusters[0]
	assert.Equal(t, "pulsar+ssl://broker-1.east.example:6651,broker-2.east.example:6651", east.ServiceURL)
	assert.Equal(t, "https://admin.east.example:8443", east.AdminURL)
	assert.Equal(t, 2.0, east.Weight)
	assert.Equal(t, topology.Auth{TokenFile: "testdata/token"}, east.Auth)
	assert.Equal(t, topology.TLS{
		CAFile:   "testdata/tls/ca.pem",
		CertFile: "testdata/tls/client.pem",
		KeyFile:  "testdata/tls/client-key.pem",
	}, east.TLS)
	assert.Equal(t, topology.ClientSettings{
		OperationTimeout:     30 * time.Second,
		ConnectionTimeout:    5 * time.Second,
		ConnectionsPerBroker: 2,
	}, east.Client)

	assert.Equal(t, 1.0, topo.Clusters[1].Weight, "omitted weight defaults to 1")
}

func TestParseUnknownField(t *testing.T) {
	_, err := topology.Load("testdata/unknown_field.yaml")
	require.ErrorIs(t, err, topology.ErrUnknownField)
	var pe *topology.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "tokn", pe.Field)
	assert.Equal(t, 5, pe.Line)
	assert.Equal(t, "testdata/unknown_field.yaml", pe.Source)
	assert.Equal(t, `topology: testdata/unknown_field.yaml: line 5: "tokn" in auth: unknown field`, pe.Error())
}

func TestParseUnknownFieldsAllReported(t *testing.T) {
	_, err := topology.Parse([]byte(`
clusters:
  - name: a
    serviceURL: pulsar://a
    weigth: 2
    tls:
      caFle: x
version: 1
`))
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *topology.ParseError
		require.ErrorAs(t, e, &pe)
		require.ErrorIs(t, pe, topology.ErrUnknownField)
		assert.Empty(t, pe.Source)
		got = append(got, pe.Field)
	}
	assert.ElementsMatch(t, []string{"weigth", "caFle", "version"}, got)
}

func TestParseWeight(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want float64
	}{
		{"", 1},
		{"weight: 2.5", 2.5},
		{"weight: 1e3", 1000},
		{"weight: ~", 1},
	} {
		t.Run(tt.yaml, func(t *testing.T) {
			topo, err := topology.Parse([]byte("clusters:\n- name: a\n  serviceURL: pulsar://a\n  " + tt.yaml + "\n"))
			require.NoError(t, err)
			assert.Equal(t, tt.want, topo.Clusters[0].Weight)
		})
	}
	for _, w := range []string{"0", "-1", ".nan", ".inf", "-.inf"} {
		t.Run(w, func(t *testing.T) {
			topo, err := topology.Parse([]byte("clusters:\n- name: a\n  serviceURL: pulsar://a\n  weight: " + w + "\n"))
			require.ErrorIs(t, err, topology.ErrBadWeight)
			assert.Nil(t, topo)
			var fe *topology.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "weight", fe.Field)
			assert.Equal(t, "a", fe.Cluster)
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		yaml string
		err  error
		line int
	}{
		{"empty", "", topology.ErrNoClusters, 0},
		{"comment only", "# nothing\n", topology.ErrNoClusters, 0},
		{"null", "~\n", topology.ErrNoClusters, 0},
		{"empty list", "clusters: []\n", topology.ErrNoClusters, 0},
		// yaml.v3 reports scanner errors at the line of their context.
		{"syntax", "clusters:\n- name: a\n\tserviceURL: x\n", topology.ErrParse, 2},
		{"top-level list", "- name: a\n", topology.ErrParse, 1},
		{"duration without unit", "clusters:\n- name: a\n  serviceURL: pulsar://a\n  client:\n    operationTimeout: 5\n", topology.ErrParse, 5},
		{"bad duration", "clusters:\n- name: a\n  serviceURL: pulsar://a\n  client:\n    operationTimeout: 5 parsecs\n", topology.ErrParse, 5},
		{"duplicate key", "clusters:\n- name: a\n  name: b\n  serviceURL: pulsar://a\n", topology.ErrParse, 3},
		{"two documents", "clusters:\n- name: a\n  serviceURL: pulsar://a\n---\nclusters: []\n", topology.ErrParse, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			topo, err := topology.Parse([]byte(tt.yaml))
			require.ErrorIs(t, err, tt.err)
			assert.Nil(t, topo)
			var pe *topology.ParseError
			if errors.As(err, &pe) {
				assert.Equal(t, tt.line, pe.Line, "%v", err)
			}
		})
	}
}

// yaml.v3 quotes the first bytes of a mistyped scalar; a token placed
// under the wrong key must not reach the error text.
func TestParseErrorHidesValues(t *testing.T) {
	for _, doc := range []string{
		"clusters:\n- name: a\n  serviceURL: pulsar://a\n  auth: " + secret + "\n",
		"clusters:\n- name: a\n  serviceURL: pulsar://a\n  weight: " + secret + "\n",
		"clusters:\n- name: a\n  serviceURL: pulsar://a\n  client:\n    connectionsPerBroker: " + secret + "\n",
		"clusters:\n- name: a\n  serviceURL: pulsar://a\n  weight: !!int " + secret + "\n",
		"clusters:\n- name: a\n  serviceURL: pulsar://a\n  auth:\n    token: !!binary " + secret + "\n",
	} {
		_, err := topology.Parse([]byte(doc))
		require.ErrorIs(t, err, topology.ErrParse)
		assert.NotContains(t, err.Error(), secret[:7])
		t.Log(err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := topology.Load("testdata/does-not-exist.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "testdata/does-not-exist.yaml")
}

func TestParseReportsAllValidationErrors(t *testing.T) {
	_, err := topology.Load("testdata/invalid.yaml")
	fes := fieldErrors(t, err)
	require.Len(t, fes, 7)
	for _, fe := range fes {
		assert.NotContains(t, fe.Error(), "not-a-real-token")
	}
}
