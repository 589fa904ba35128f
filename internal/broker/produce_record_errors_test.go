package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// keyedBatch builds a v2 batch of one record per timestamp; a nil key in
// keys leaves that record without a key.
func keyedBatch(t *testing.T, ts []int64, keys [][]byte) []byte {
	t.Helper()
	h := record.Header{
		Magic: 2, FirstTimestamp: ts[0], MaxTimestamp: ts[0],
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LastOffsetDelta: int32(len(ts) - 1), NumRecords: int32(len(ts)),
	}
	recs := make([]record.Record, len(ts))
	for i := range ts {
		h.MaxTimestamp = max(h.MaxTimestamp, ts[i])
		recs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: ts[i] - ts[0], Key: keys[i], Value: []byte("v")}
	}
	b, err := record.BuildBatch(h, recs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProduceRecordErrors: per-record validation failures name each
// refused record (KIP-467) from Produce v8, with Kafka's summary as the
// partition's error message; before v8 only the error code is sent.
func TestProduceRecordErrors(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "ts", 1, map[string]string{"message.timestamp.before.max.ms": "60000"})
	createTopic(c, "compact", 1, map[string]string{"cleanup.policy": "compact"})
	now := time.Now().UnixMilli()
	old := now - 3600_000
	k := []byte("k")

	tests := []struct {
		name      string
		v         int16
		topic     string
		data      []byte
		want      int16
		indexes   []int32
		summary   string
		perRecord string
	}{
		{"timestamps", 11, "ts", keyedBatch(t, []int64{now, old, now, old}, [][]byte{k, k, k, k}),
			kerr.InvalidTimestamp.Code, []int32{1, 3}, "One or more records have been rejected due to invalid timestamp", "is out of range"},
		{"timestamps at v8", 8, "ts", keyedBatch(t, []int64{old, now}, [][]byte{k, k}),
			kerr.InvalidTimestamp.Code, []int32{0}, "invalid timestamp", "of message with offset 0"},
		{"timestamps at v7", 7, "ts", keyedBatch(t, []int64{old, now}, [][]byte{k, k}),
			kerr.InvalidTimestamp.Code, nil, "", ""},
		{"null keys on a compacted topic", 11, "compact", keyedBatch(t, []int64{now, now, now}, [][]byte{k, nil, nil}),
			kerr.InvalidRecord.Code, []int32{1, 2}, "2 record errors in total", "Compacted topic cannot accept message without key in topic partition compact-0."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := do[*kmsg.ProduceResponse](c, tt.v, produceReq(tt.topic, 0, 1, tt.data)).Topics[0].Partitions[0]
			if p.ErrorCode != tt.want {
				t.Fatalf("error %d (%v), want %d", p.ErrorCode, p.ErrorMessage, tt.want)
			}
			if len(p.ErrorRecords) != len(tt.indexes) {
				t.Fatalf("%d record errors %+v, want indexes %v", len(p.ErrorRecords), p.ErrorRecords, tt.indexes)
			}
			for i, er := range p.ErrorRecords {
				if er.RelativeOffset != tt.indexes[i] || er.ErrorMessage == nil || !strings.Contains(*er.ErrorMessage, tt.perRecord) {
					t.Errorf("record error %d: %d %v, want index %d with %q", i, er.RelativeOffset, er.ErrorMessage, tt.indexes[i], tt.perRecord)
				}
			}
			if tt.summary != "" && (p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, tt.summary)) {
				t.Errorf("error message %v, want it to contain %q", p.ErrorMessage, tt.summary)
			}
		})
	}
	// Nothing of a refused batch was written.
	if off := produce(c, "ts", 0, "ok"); off != 0 {
		t.Errorf("next append at %d, want 0", off)
	}
}
