package topology_test

import (
	"errors"
	"fmt"

	"github.com/keyroute/keyroute/topology"
)

// Load decodes, applies KEYROUTE_CLUSTER_* environment overrides and
// validates. Validate reports every problem at once, each naming the
// cluster and the field.
func ExampleLoad() {
	topo, err := topology.Load("testdata/valid.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range topo.Clusters {
		fmt.Printf("%s weight=%v auth=%v\n", c.Name, c.Weight, c.Auth)
	}

	_, err = topology.Load("testdata/invalid.yaml")
	fmt.Println(err)

	var fe *topology.FieldError
	if errors.As(err, &fe) {
		fmt.Printf("first: cluster=%s field=%s bad URL=%t\n", fe.Cluster, fe.Field, errors.Is(fe, topology.ErrBadURL))
	}
	// Output:
	// east-1 weight=2 auth={Token: TokenFile:testdata/token}
	// west-1 weight=1 auth={Token: TokenFile:}
	// topology: cluster "east-1" (#0): serviceURL: scheme "http" is not pulsar:// or pulsar+ssl://: bad URL
	// topology: cluster "east-1" (#0): weight: must be a finite number > 0, got 0: bad weight
	// topology: cluster "east-1" (#1): auth: token and tokenFile are both set; set one: conflicting settings
	// topology: cluster "east-1" (#1): name: also used by cluster "east-1" (#0): duplicate name
	// topology: cluster #2: name: must not be empty: missing field
	// topology: cluster #2: client.operationTimeout: must not be negative, got -1s: bad setting
	// topology: cluster #2: serviceURL: broker broker.west.example:6650 also used by cluster "east-1" (#1): duplicate URL
	// first: cluster=east-1 field=serviceURL bad URL=true
}

// Parse reads a topology from YAML (Load reads it from a file), with the
// same rules: a cluster without a weight gets 1, and an unknown field is
// an error rather than a setting silently ignored.
func ExampleParse() {
	topo, err := topology.Parse([]byte(`
clusters:
  - name: east
    serviceURL: pulsar://broker.east.example:6650
    weight: 2
  - name: west
    serviceURL: pulsar+ssl://broker-1.west.example:6651,broker-2.west.example:6651
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range topo.Clusters {
		fmt.Printf("%s weight=%v %s\n", c.Name, c.Weight, c.ServiceURL)
	}

	_, err = topology.Parse([]byte(`
clusters:
  - name: east
    serviceURL: pulsar://broker.east.example:6650
    wieght: 2
`))
	fmt.Println(err)
	// Output:
	// east weight=2 pulsar://broker.east.example:6650
	// west weight=1 pulsar+ssl://broker-1.west.example:6651,broker-2.west.example:6651
	// topology: line 5: "wieght" in a cluster: unknown field
}

// Validate also checks topologies built in code. Weight has no default
// there: a zero Weight is rejected.
func ExampleTopology_Validate() {
	topo := &topology.Topology{Clusters: []topology.Cluster{
		{Name: "east", ServiceURL: "pulsar://east.example:6650", Weight: 1},
		{Name: "west", ServiceURL: "pulsar://west.example:6650"},
	}}
	fmt.Println(topo.Validate())
	// Output:
	// topology: cluster "west" (#1): weight: must be a finite number > 0, got 0: bad weight
}
