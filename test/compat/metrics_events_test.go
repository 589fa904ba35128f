package compat

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMetricsEventSeries checks the series the broker's events feed, after
// the events: a log fsync (a topic with flush.messages=1) in the log flush
// histogram, the open client connection per listener, a consumer's fetch
// parked at the end of the log in the Fetch purgatory and gone once a record
// answers it, and the metadata quorum's raft gauges on this single-node
// quorum (this node the leader, the high watermark past 0).
func TestMetricsEventSeries(t *testing.T) {
	t.Parallel()
	b, admin := startBrokerWithAdmin(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	one := "1"
	createTopic(t, adm, topic, 1, map[string]*string{"flush.messages": &one})

	fams := scrape(t, admin)
	flushesBefore, _ := sample(fams, "kafka_log_logflushstats_logflushrateandtimems", nil)
	producer := newClient(t, b, kgo.DefaultProduceTopic(topic))
	ctx := testContext(t, 90*time.Second)
	for i := range 5 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	awaitSample(t, admin, "kafka_log_logflushstats_logflushrateandtimems", nil,
		func(v float64) bool { return v >= flushesBefore+5 }, "at least 5 more fsyncs (flush.messages=1)")
	awaitSample(t, admin, "kafka_server_socket_server_metrics_connection_count", map[string]string{"listener": "PLAINTEXT"},
		func(v float64) bool { return v >= 1 }, ">= 1 (the producer's connection)")

	// A consumer at the end of the log waits in the broker for data.
	consumer := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchMaxWait(20*time.Second))
	polled := make(chan kgo.Fetches, 1)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			f := consumer.PollFetches(pctx)
			if f.NumRecords() > 0 || pctx.Err() != nil {
				polled <- f
				return
			}
		}
	}()
	parked := map[string]string{"delayedOperation": "Fetch"}
	awaitSample(t, admin, "kafka_server_delayedoperationpurgatory_purgatorysize", parked,
		func(v float64) bool { return v >= 1 }, ">= 1 (the consumer's fetch waiting for data)")
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("wake")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-polled:
		if f.NumRecords() != 1 {
			t.Fatalf("the parked fetch returned %d records (%v), want the one produced", f.NumRecords(), f.Errors())
		}
	case <-ctx.Done():
		t.Fatal("the parked fetch was not answered by the produce")
	}
	cancel()
	consumer.Close()
	awaitSample(t, admin, "kafka_server_delayedoperationpurgatory_purgatorysize", parked,
		func(v float64) bool { return v == 0 }, "0 once the consumer is gone")

	leader := awaitSample(t, admin, "kafka_server_raftmetrics_current_leader", nil,
		func(v float64) bool { return v >= 0 }, "this node's id")
	if leader != 1 { // the harness's node takes the default node.id=1
		t.Errorf("kafka_server_raftmetrics_current_leader = %v, want this node, 1", leader)
	}
	awaitSample(t, admin, "kafka_server_raftmetrics_high_watermark", nil,
		func(v float64) bool { return v > 0 }, "> 0")
}
