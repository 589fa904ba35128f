package telemetry

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/vltava/vltava/internal/metrics"
)

func payload(t *testing.T, name string, v float64) []byte {
	t.Helper()
	md := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "group_id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "g"}}}}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{
			Name: name,
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{
				Attributes: []*commonpb.KeyValue{{Key: "node_id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}},
				Value:      &metricspb.NumberDataPoint_AsDouble{AsDouble: v},
			}}}},
		}}}},
	}}}
	b, err := proto.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReceiverPushesAndErrors(t *testing.T) {
	r := NewReceiver(Config{Metrics: []string{"org.apache.kafka."}, Interval: time.Second, MaxBytes: 1 << 10})
	sub := r.Subscribe([16]byte{}, "app")
	if sub.ClientInstanceID == ([16]byte{}) || len(sub.RequestedMetrics) != 1 || sub.PushIntervalMillis != 1000 {
		t.Fatalf("subscription %+v", sub)
	}
	push := Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, ClientID: "app",
		Metrics: payload(t, "org.apache.kafka.producer.node.request.latency.avg", 2.5)}
	if err := r.Accept(push); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	r.WriteFamilies(metrics.NewGaugeWriter(bw))
	bw.Flush()
	if !strings.Contains(out.String(), `org_apache_kafka_producer_node_request_latency_avg{client_instance_id="`) ||
		!strings.Contains(out.String(), `client_id="app",group_id="g",node_id="1"} 2.5`) {
		t.Errorf("export:\n%s", out.String())
	}

	for name, c := range map[string]struct {
		p    Push
		want error
	}{
		"stale subscription": {Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID + 1}, kerr.UnknownSubscriptionID},
		"unknown client":     {Push{ClientInstanceID: [16]byte{1}, SubscriptionID: sub.SubscriptionID}, kerr.UnknownSubscriptionID},
		"too large":          {Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, Metrics: make([]byte, 2<<10)}, kerr.TelemetryTooLarge},
		"bad compression":    {Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, CompressionType: 2, Metrics: []byte{1}}, kerr.UnsupportedCompressionType},
		"not OTLP":           {Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, Metrics: []byte{0xff, 0xff}}, kerr.InvalidRecord},
	} {
		if err := r.Accept(c.p); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	push.Terminating = true
	if err := r.Accept(push); err != nil {
		t.Fatal(err)
	}
	if err := r.Accept(push); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("push after terminating: %v, want INVALID_REQUEST", err)
	}
}

func TestReceiverForgetsIdleClients(t *testing.T) {
	now := time.Unix(1000, 0)
	r := NewReceiver(Config{Metrics: []string{"*"}, Interval: time.Second, MaxBytes: 1 << 10})
	r.now = func() time.Time { return now }
	first := r.Subscribe([16]byte{}, "a")
	if got := r.Subscribe([16]byte{}, "b").RequestedMetrics; len(got) != 1 || got[0] != "" {
		t.Errorf("* requested as %q, want one empty prefix (KIP-714: every metric)", got)
	}
	now = now.Add(10 * time.Second)
	r.Subscribe([16]byte{}, "c")
	r.mu.Lock()
	_, kept := r.clients[first.ClientInstanceID]
	n := len(r.clients)
	r.mu.Unlock()
	if kept || n != 1 {
		t.Errorf("after 10 idle intervals: first kept %v, %d clients, want only the new one", kept, n)
	}
}
