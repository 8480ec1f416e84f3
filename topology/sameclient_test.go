package topology_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keyroute/keyroute/topology"
)

// Every field of Cluster is either a client setting (a change replaces
// the client) or not; a field added to Cluster must be placed here, so
// that SameClient stays the one rule.
func TestSameClientClassifiesEveryField(t *testing.T) {
	base := topology.Cluster{Name: "c1", ServiceURL: "pulsar://127.0.0.1:6650", Weight: 1}
	change := map[string]func(*topology.Cluster){
		"Name":       func(c *topology.Cluster) { c.Name = "c2" },
		"ServiceURL": func(c *topology.Cluster) { c.ServiceURL = "pulsar://127.0.0.1:6651" },
		"AdminURL":   func(c *topology.Cluster) { c.AdminURL = "http://127.0.0.1:8080" },
		"Weight":     func(c *topology.Cluster) { c.Weight = 2 },
		"Auth":       func(c *topology.Cluster) { c.Auth.TokenFile = "/token" },
		"TLS":        func(c *topology.Cluster) { c.TLS.AllowInsecure = true },
		"Client":     func(c *topology.Cluster) { c.Client.OperationTimeout = 20 * time.Second },
		"Producer":   func(c *topology.Cluster) { c.Producer.SendTimeout = 45 * time.Second },
	}
	client := map[string]bool{"ServiceURL": true, "Auth": true, "TLS": true, "Client": true}
	ty := reflect.TypeFor[topology.Cluster]()
	for i := range ty.NumField() {
		name := ty.Field(i).Name
		set, ok := change[name]
		if !assert.True(t, ok, "Cluster.%s: say whether it is a client setting", name) {
			continue
		}
		b := base
		set(&b)
		assert.Equal(t, !client[name], topology.SameClient(base, b), "Cluster.%s", name)
	}
	assert.True(t, topology.SameClient(base, base))
}
