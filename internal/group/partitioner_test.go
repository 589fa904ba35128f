package group

import "testing"

// The expected hashes are Java's String.hashCode of each string (computed
// independently over UTF-16 code units); partitions are Kafka's
// Utils.abs(hash) % 50.
func TestPartitionForMatchesKafka(t *testing.T) {
	for _, tc := range []struct {
		group     string
		hash      int32
		partition int32
	}{
		{"", 0, 0},
		{"a", 97, 47},
		{"hello", 99162322, 22},
		{"polygenelubricants", -2147483648, 0}, // Utils.abs(MIN_VALUE) is 0
		{"website_analytics", -1427001118, 18},
		{"my-group", -1906497762, 12},
		{"console-consumer-12345", 158455506, 6},
		{"\U0001F600", 1772899, 49}, // a surrogate pair: two code units
		{"grüße", 98768023, 23},
	} {
		if h := javaStringHashCode(tc.group); h != tc.hash {
			t.Errorf("javaStringHashCode(%q) = %d, want %d", tc.group, h, tc.hash)
		}
		if p := PartitionFor(tc.group, 50); p != tc.partition {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.group, p, tc.partition)
		}
	}
}
