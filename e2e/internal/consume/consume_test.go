package consume

import "testing"

func TestPartitionOf(t *testing.T) {
	for topic, want := range map[string]int{
		"persistent://public/default/t-partition-3":  3,
		"persistent://public/default/t-partition-12": 12,
		"persistent://public/default/t":              -1,
		"persistent://public/default/t-partition-x":  -1,
	} {
		if got := partitionOf(topic); got != want {
			t.Errorf("partitionOf(%q) = %d, want %d", topic, got, want)
		}
	}
}
