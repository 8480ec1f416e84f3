package router_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyroute/keyroute/router"
)

func TestClusterExceptIsTheChoiceWithoutTheSkippedMember(t *testing.T) {
	for _, weights := range [][]float64{{1, 1, 1, 1, 1}, {1, 2, 3, 1, 2}} {
		all := make([]router.Member, len(weights))
		for i, w := range weights {
			all[i] = router.Member{Name: fmt.Sprintf("c%d", i+1), Weight: w}
		}
		r, err := router.New(all)
		require.NoError(t, err)
		for down := range all {
			rest := append(append([]router.Member(nil), all[:down]...), all[down+1:]...)
			without, err := router.New(rest)
			require.NoError(t, err)
			for i := 0; i < 20_000; i++ {
				h := router.Hash(fmt.Sprint("key-", i))
				got := r.ClusterExcept(h, func(m int) bool { return m == down })
				require.NotEqual(t, down, got)
				// Same as a router built without that member.
				assert.Equal(t, rest[without.Cluster(h)].Name, all[got].Name)
				// Keys the member did not own stay where they are.
				if c := r.Cluster(h); c != down {
					assert.Equal(t, c, got)
				}
			}
		}
		assert.Equal(t, -1, r.ClusterExcept(1, func(int) bool { return true }))
	}
}
