package compat

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzListOffsets checks ListOffsets for the earliest, latest and
// timestamp specs (kadm) and the KIP-734 max-timestamp spec (raw kmsg).
func TestFranzListOffsets(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)
	adm := newAdmin(t, b)
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testContext(t, 60*time.Second)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 3, nil)

	// Partition 0: ten records, one batch each, timestamps base+i s except
	// offset 6 which carries the largest timestamp. Partition 1: empty.
	// Partition 2 (below): one batch of ten records with ascending
	// timestamps, so lookups must look inside a batch.
	base := time.UnixMilli(time.Now().Add(-time.Hour).UnixMilli())
	tsOf := func(i int) time.Time {
		if i == 6 {
			return base.Add(30 * time.Minute)
		}
		return base.Add(time.Duration(i) * time.Second)
	}
	for i := range 10 {
		produceSync(t, cl, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i)), Timestamp: tsOf(i)})
	}

	expect := func(name string, got kadm.ListedOffsets, err error, want map[int32]int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for p, w := range want {
			o, ok := got.Lookup(topic, p)
			if !ok || o.Err != nil {
				t.Fatalf("%s: partition %d missing or failed (%v)", name, p, o.Err)
			}
			if o.Offset != w {
				t.Errorf("%s: partition %d offset %d, want %d", name, p, o.Offset, w)
			}
		}
	}
	var oneBatch []*kgo.Record
	for i := range 10 {
		// ~200-byte values: a lookup must not stop at an index entry or
		// at the batch start but find the exact record.
		oneBatch = append(oneBatch, testRecord(topic, 2, i, base.Add(time.Duration(i)*time.Second)))
	}
	produceSync(t, cl, oneBatch...) // one ProduceSync of one partition: one batch
	start, err := adm.ListStartOffsets(ctx, topic)
	expect("ListStartOffsets", start, err, map[int32]int64{0: 0, 1: 0, 2: 0})
	end, err := adm.ListEndOffsets(ctx, topic)
	expect("ListEndOffsets", end, err, map[int32]int64{0: 10, 1: 0, 2: 10})
	at3, err := adm.ListOffsetsAfterMilli(ctx, tsOf(3).UnixMilli(), topic)
	// Kafka answers with the exact record, also inside a batch (partition 2).
	expect("ListOffsetsAfterMilli(ts of offset 3)", at3, err, map[int32]int64{0: 3, 1: 0, 2: 3})
	if o, _ := at3.Lookup(topic, 0); o.Timestamp != tsOf(3).UnixMilli() {
		t.Errorf("ListOffsetsAfterMilli: timestamp %d, want %d", o.Timestamp, tsOf(3).UnixMilli())
	}
	between, err := adm.ListOffsetsAfterMilli(ctx, tsOf(7).UnixMilli()-1, topic)
	// The first record at or after the timestamp is offset 6 (its
	// timestamp is the largest), not 7: the search is by offset order.
	expect("ListOffsetsAfterMilli(just before offset 7)", between, err, map[int32]int64{0: 6})

	listRaw := func(version int16, timestamp int64) kmsg.ListOffsetsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = version
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = 0
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = timestamp
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ListOffsets v%d ts %d: %v", version, timestamp, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("ListOffsets: unexpected response shape %+v", resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}

	t.Run("MaxTimestamp", func(t *testing.T) {
		// KIP-734: timestamp -3 asks for the record with the largest
		// timestamp (ListOffsets v7+).
		p := listRaw(7, -3)
		if p.ErrorCode != 0 || p.Offset != 6 || p.Timestamp != tsOf(6).UnixMilli() {
			t.Fatalf("max timestamp: %s offset %d ts %d, want offset 6 ts %d", errName(p.ErrorCode), p.Offset, p.Timestamp, tsOf(6).UnixMilli())
		}
	})
	t.Run("TimestampAfterAllRecords", func(t *testing.T) {
		// No record is that new: Kafka answers offset -1, timestamp -1.
		p := listRaw(4, tsOf(6).UnixMilli()+1)
		if p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
			t.Fatalf("timestamp after all records: %s offset %d ts %d, want offset -1 ts -1", errName(p.ErrorCode), p.Offset, p.Timestamp)
		}
	})
	t.Run("EarliestLatestSpecs", func(t *testing.T) {
		if p := listRaw(4, -2); p.ErrorCode != 0 || p.Offset != 0 {
			t.Fatalf("earliest (-2): %s offset %d, want 0", errName(p.ErrorCode), p.Offset)
		}
		if p := listRaw(4, -1); p.ErrorCode != 0 || p.Offset != 10 {
			t.Fatalf("latest (-1): %s offset %d, want 10", errName(p.ErrorCode), p.Offset)
		}
	})
}

// TestFranzDeleteRecords deletes a prefix of a partition and checks that the
// log start moves, consuming from earliest starts there, and later offsets
// are untouched.
func TestFranzDeleteRecords(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)
	adm := newAdmin(t, b)
	ctx := testContext(t, 60*time.Second)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	p := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produceSync(t, p, &kgo.Record{Topic: topic, Value: []byte("v" + strconv.Itoa(i))})
	}

	resp, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	dr, ok := resp.Lookup(topic, 0)
	if !ok || dr.Err != nil {
		t.Fatalf("DeleteRecords: missing or failed (%v)", dr.Err)
	}
	if dr.LowWatermark != 4 {
		t.Fatalf("DeleteRecords low watermark %d, want 4", dr.LowWatermark)
	}

	start, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := start.Lookup(topic, 0); o.Offset != 4 {
		t.Fatalf("log start after DeleteRecords: %d, want 4", o.Offset)
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup(topic, 0); o.Offset != 10 {
		t.Fatalf("log end after DeleteRecords: %d, want 10 (unchanged)", o.Offset)
	}

	c := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	got := consume(t, c, 6, 20*time.Second)
	for i, r := range got {
		if r.Offset != int64(4+i) || string(r.Value) != "v"+strconv.Itoa(4+i) {
			t.Fatalf("record %d: offset %d %q, want offset %d %q", i, r.Offset, r.Value, 4+i, "v"+strconv.Itoa(4+i))
		}
	}

	// Deleting beyond the high watermark is OFFSET_OUT_OF_RANGE.
	resp, err = adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 11}}})
	if err != nil {
		t.Fatal(err)
	}
	if dr, _ := resp.Lookup(topic, 0); !errors.Is(dr.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords past the end: %v (low watermark %d), want OFFSET_OUT_OF_RANGE", dr.Err, dr.LowWatermark)
	}
}
