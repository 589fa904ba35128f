package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestHistogramIsCumulative(t *testing.T) {
	var h histogram
	for _, ms := range []float64{0.1, 0.7, 3, 3, 40000} {
		h.observeNs(int64(ms * 1e6))
	}
	count, sum, buckets := h.snapshot()
	if count != 5 || buckets[0.5] != 1 || buckets[1] != 2 || buckets[5] != 4 || buckets[30000] != 4 {
		t.Fatalf("count %d buckets %v", count, buckets)
	}
	if sum < 40006 || sum > 40007 {
		t.Errorf("sum %v ms", sum)
	}
}

// TestRegistryExposesJMXExporterNames gathers a registry after counting a
// request, an append and an ISR shrink, and checks the series names and
// values Kafka dashboards query.
func TestRegistryExposesJMXExporterNames(t *testing.T) {
	reg := NewRegistry(LevelPartition)
	RequestStarted()
	RequestDone(int16(kmsg.Metadata), 12, 3*time.Millisecond)
	Topic("orders").MessagesIn.Add(7)
	AllTopics.MessagesIn.Add(7)
	IsrShrunk()
	want := `
# HELP kafka_server_brokertopicmetrics_messagesin_total Records appended as leader (BrokerTopicMetrics MessagesInPerSec).
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic=""} 7
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 7
`
	if err := testutil.GatherAndCompare(reg.Gatherer(), strings.NewReader(want), "kafka_server_brokertopicmetrics_messagesin_total"); err != nil {
		t.Error(err)
	}
	n, err := testutil.GatherAndCount(reg.Gatherer(), "kafka_network_requestmetrics_requests_total", "kafka_network_requestmetrics_totaltimems", "kafka_server_replicamanager_isrshrinks_total")
	if err != nil || n != 3 {
		t.Errorf("request, time and ISR shrink series: %d, %v", n, err)
	}
	ForgetTopicsExcept(func(string) bool { return false })
	if n, _ := testutil.GatherAndCount(reg.Gatherer(), "kafka_server_brokertopicmetrics_messagesin_total"); n != 1 {
		t.Errorf("after the topic is forgotten: %d series, want the broker-wide one", n)
	}
	broker := NewRegistry(LevelBroker)
	Topic("orders").MessagesIn.Add(1)
	if n, _ := testutil.GatherAndCount(broker.Gatherer(), "kafka_server_brokertopicmetrics_messagesin_total"); n != 1 {
		t.Errorf("level broker: %d series, want only the broker-wide one", n)
	}
}
