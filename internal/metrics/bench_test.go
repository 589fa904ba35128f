package metrics

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceRequestCounters is what one single-partition Produce
// request adds to the hot path: the dispatcher's request count and time,
// and the produce handler's per-topic and broker-wide counters
// (broker/produce_metrics.go). docs/PERFORMANCE.md compares it with a
// request's cost.
func BenchmarkProduceRequestCounters(b *testing.B) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			RequestStarted()
			t := Topic("bench")
			AllTopics.MessagesIn.Add(1)
			t.MessagesIn.Add(1)
			AllTopics.BytesIn.Add(100)
			t.BytesIn.Add(100)
			AllTopics.TotalProduceRequests.Add(1)
			t.TotalProduceRequests.Add(1)
			RequestDone(int16(kmsg.Produce), 11, 40*time.Microsecond)
		}
	})
}
