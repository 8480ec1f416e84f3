package bedsuite

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"

	"github.com/keyroute/keyroute/internal/admin"
	"github.com/keyroute/keyroute/internal/testbed"
)

var (
	runID  = time.Now().Format("150405")
	serial atomic.Int64
)

// Unique returns name with a suffix unique to this run and call, for
// topics, subscriptions and namespaces that must not meet earlier ones.
func Unique(name string) string {
	return fmt.Sprintf("%s-%s-%d", name, runID, serial.Add(1))
}

// CreateTopic creates topic with the given number of partitions on each
// of clusters, failing the spec if one refuses.
func CreateTopic(ctx context.Context, clusters []*testbed.Cluster, topic string, partitions int) {
	for _, c := range clusters {
		Expect(admin.CreatePartitionedTopic(ctx, c.AdminURL, topic, partitions)).To(Succeed(), c.Name)
	}
}
