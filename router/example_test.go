package router_test

import (
	"fmt"

	"github.com/keyroute/keyroute/router"
)

func Example() {
	r, err := router.New([]router.Member{
		{Name: "ams", Weight: 1},
		{Name: "fra", Weight: 1},
		{Name: "lon", Weight: 1},
	})
	if err != nil {
		panic(err)
	}

	// A keyed message: the key fixes both the cluster and the partition.
	h := router.Hash("order-42")
	fmt.Println(r.Name(r.Cluster(h)), router.Partition(h, 10))

	// A message without a key (or with the empty key): the producer's
	// counter picks the hash.
	var seq uint64
	k := router.KeylessHash(seq)
	fmt.Println(r.Name(r.Cluster(k)), router.Partition(k, 10))
	// Output:
	// fra 1
	// ams 5
}

func ExampleNew_errors() {
	_, err := router.New([]router.Member{{Name: "ams", Weight: 1}, {Name: "ams", Weight: 2}})
	fmt.Println(err)
	// Output:
	// router: duplicate member name: member 1 "ams"
}
