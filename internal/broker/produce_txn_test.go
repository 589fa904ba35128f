package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// txnBatch builds a v2 batch with the given attribute bits (transactional
// 0x10, control 0x20) from a producer id.
func txnBatch(t *testing.T, attrs int16, values ...string) []byte {
	t.Helper()
	ts := time.Now().UnixMilli()
	h := record.Header{
		Magic: 2, Attributes: attrs, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0,
		LastOffsetDelta: int32(len(values) - 1), NumRecords: int32(len(values)),
	}
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte(v)}
	}
	b, err := record.BuildBatch(h, recs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestProduceTransactionalBatches: a transactional batch without a
// transactional id is refused for the whole request; with one, the
// transaction cannot be verified while no transaction coordinator exists
// (no __transaction_state), which Kafka answers with the retriable
// NOT_ENOUGH_REPLICAS (KIP-890); a control batch from a client is
// INVALID_RECORD. Nothing of them is appended.
func TestProduceTransactionalBatches(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "txn", 2, nil)

	// Without a transactional id Kafka fails the whole request, so the
	// plain batch in partition 1 is not appended either.
	req := produceReq("txn", 0, 1, txnBatch(t, 0x10, "a"))
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 1, batch(t, record.CodecNone, "plain")
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	resp := do[*kmsg.ProduceResponse](c, 11, req)
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Errorf("no transactional id, partition %d: error %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", p.Partition, p.ErrorCode)
		}
	}

	withID := func(data []byte) *kmsg.ProduceRequest {
		r := produceReq("txn", 0, 1, data)
		r.TransactionID = kmsg.StringPtr("tx-1")
		return r
	}
	for _, tt := range []struct {
		name string
		req  *kmsg.ProduceRequest
		want int16
	}{
		{"transactional id, no coordinator to verify with", withID(txnBatch(t, 0x10, "a")), kerr.NotEnoughReplicas.Code},
		{"control batch", produceReq("txn", 0, 1, txnBatch(t, 0x20, "a")), kerr.InvalidRecord.Code},
		{"transactional id, plain batch", withID(batch(t, record.CodecNone, "b")), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := do[*kmsg.ProduceResponse](c, 11, tt.req).Topics[0].Partitions[0]
			if p.ErrorCode != tt.want {
				t.Fatalf("error %d (%v), want %d", p.ErrorCode, p.ErrorMessage, tt.want)
			}
		})
	}
	// Only the plain batch with a transactional id reached the logs.
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "txn"
	for p := int32(0); p < 2; p++ {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	ends := do[*kmsg.ListOffsetsResponse](c, 8, lo).Topics[0].Partitions
	if ends[0].Offset != 1 || ends[1].Offset != 0 {
		t.Errorf("log ends %d and %d, want 1 and 0", ends[0].Offset, ends[1].Offset)
	}
}
