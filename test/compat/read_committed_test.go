package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/vltava/vltava/internal/record"
)

// TestReadCommittedClientsDropAbortedRecords drives the partition side of
// transactions the way a transaction coordinator would, with raw
// requests: two producers' transactions interleave on one partition, one
// is aborted and one committed through WriteTxnMarkers. librdkafka (kcat)
// and franz-go consumers with isolation.level=read_committed must drop the
// aborted records from the aborted_transactions the broker sends, and skip
// the markers; read_uncommitted consumers read every data record. It needs
// no transaction coordinator (the partition verification is off).
func TestReadCommittedClientsDropAbortedRecords(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "WriteTxnMarkers is a broker-to-broker request kfake does not serve")
	requireTool(t, "kcat")
	b := StartBroker(t, WithOverride("transaction.partition.verification.enable", "false"))
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, b), topic, 1, nil)
	// Kafka 3.9's versions: Produce v11, the transaction.version 1 path,
	// where producers add their partitions themselves (Produce v12 would
	// have the broker add them through the coordinator).
	cl := newClient(t, b, kgo.MaxVersions(kversion.V3_9_0()))

	batch := func(pid int64, seq int32, values ...string) []byte {
		ts := time.Now().UnixMilli()
		recs := make([]record.Record, len(values))
		for i, v := range values {
			recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(v)}
		}
		out, err := record.BuildBatch(record.Header{Attributes: 0x10, LastOffsetDelta: int32(len(values) - 1),
			FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}, recs, record.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	produce := func(pid int64, seq int32, values ...string) {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, kmsg.StringPtr(fmt.Sprintf("txn-%d", pid))
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch(pid, seq, values...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testContext(t, 15*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("transactional produce: error %d", code)
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = pid, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(testContext(t, 15*time.Second), cl.SeedBrokers()[0])
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("marker: error %d", code)
		}
	}

	produce(1000, 0, "c0", "c1")
	produce(1001, 0, "a0", "a1")
	produce(1000, 2, "c2")
	produce(1001, 2, "a2", "a3")
	marker(1001, false)
	produce(1000, 3, "c3")
	marker(1000, true)
	committed := []string{"c0", "c1", "c2", "c3"}
	all := []string{"c0", "c1", "a0", "a1", "c2", "a2", "a3", "c3"}

	kcat := func(isolation string) []string {
		return strings.Fields(runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+isolation, "-f", `%s\n`))
	}
	if got := kcat("read_committed"); !slices.Equal(got, committed) {
		t.Errorf("kcat read_committed read %q, want %q", got, committed)
	}
	if got := kcat("read_uncommitted"); !slices.Equal(got, all) {
		t.Errorf("kcat read_uncommitted read %q, want %q", got, all)
	}
	for isolation, want := range map[string][]string{"read_committed": committed, "read_uncommitted": all} {
		level := kgo.ReadUncommitted()
		if isolation == "read_committed" {
			level = kgo.ReadCommitted()
		}
		consumer := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level))
		var got []string
		for _, r := range consume(t, consumer, len(want), 30*time.Second) {
			got = append(got, string(r.Value))
		}
		if !slices.Equal(got, want) {
			t.Errorf("franz-go %s read %q, want %q", isolation, got, want)
		}
	}
}
