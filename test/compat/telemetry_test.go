package compat

import (
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// advertises reports whether the broker lists an API in ApiVersions.
func advertises(t *testing.T, cl *kgo.Client, key kmsg.Key) bool {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testContext(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == int16(key) })
}

// TestClientTelemetry has franz-go push its client metrics (KIP-714) to a
// broker with telemetry.enable, and finds them re-exported on /metrics: a
// user metric with a known value, and the client's own count of produce
// connections, labelled with the client id. A broker without telemetry.enable
// does not advertise the APIs.
func TestClientTelemetry(t *testing.T) {
	t.Parallel()
	b, admin := startBrokerWithAdmin(t,
		WithOverride("telemetry.enable", "true"),
		WithOverride("telemetry.subscription.metrics", "*"),
		WithOverride("telemetry.subscription.interval.ms", "1000"),
	)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	userMetrics := func() iter.Seq[kgo.Metric] {
		return func(yield func(kgo.Metric) bool) {
			yield(kgo.Metric{Name: "vltava.test.answer", Type: kgo.MetricTypeGauge, ValueInt: 42})
		}
	}
	cl := newClient(t, b, kgo.ClientID("telemetry-test"), kgo.DefaultProduceTopic(topic), kgo.UserMetricsFn(userMetrics))
	if !advertises(t, cl, kmsg.PushTelemetry) || !advertises(t, cl, kmsg.GetTelemetrySubscriptions) {
		t.Fatal("telemetry.enable=true: the KIP-714 APIs are not advertised")
	}
	ctx := testContext(t, 60*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ok, want := equals(42)
	awaitSample(t, admin, "vltava_test_answer", map[string]string{"client_id": "telemetry-test"}, ok, want)
	// The client's own metrics: the produce connection it opened. (Its
	// request latencies are pushed only when at least 1 ms, which a
	// loopback produce need not take.)
	awaitSample(t, admin, "org_apache_kafka_producer_connection_creation_total", map[string]string{"client_id": "telemetry-test"},
		func(v float64) bool { return v >= 1 }, ">= 1")

	plain := StartBroker(t)
	if advertises(t, newClient(t, plain), kmsg.PushTelemetry) {
		t.Error("without telemetry.enable, PushTelemetry is advertised")
	}
}
