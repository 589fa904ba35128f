package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// TestFetchZstdBeforeV10: clients fetching below v10 cannot decode zstd
// (KIP-110): a zstd topic, or a zstd batch at the fetch offset, is
// UNSUPPORTED_COMPRESSION_TYPE; batches before a zstd one are still
// returned; v10+ gets everything.
func TestFetchZstdBeforeV10(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "mixed", 1, nil)
	zid := createTopic(c, "zt", 1, map[string]string{"compression.type": "zstd"})
	produce(c, "mixed", 0, "plain-0", "plain-1")
	for _, data := range [][]byte{batch(t, record.CodecZstd, "z"), batch(t, record.CodecNone, "after")} {
		if ec := do[*kmsg.ProduceResponse](c, 11, produceReq("mixed", 0, 1, data)).Topics[0].Partitions[0].ErrorCode; ec != 0 {
			t.Fatalf("produce: %d", ec)
		}
	}
	produce(c, "zt", 0, "x")

	fetch := func(v int16, topic string, id [16]byte, offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		return do[*kmsg.FetchResponse](c, v, fetchReq(topic, id, 0, offset)).Topics[0].Partitions[0]
	}
	for _, v := range []int16{4, 9} {
		p := fetch(v, "mixed", [16]byte{}, 0)
		if p.ErrorCode != 0 {
			t.Fatalf("v%d from 0: error %d", v, p.ErrorCode)
		}
		if hs := batchHeaders(t, p.RecordBatches); len(hs) != 1 || hs[0].Codec() != record.CodecNone {
			t.Errorf("v%d from 0: %d batches, want only the plain one before the zstd batch", v, len(hs))
		}
		if p := fetch(v, "mixed", [16]byte{}, 2); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
			t.Errorf("v%d at the zstd batch: error %d, want UNSUPPORTED_COMPRESSION_TYPE", v, p.ErrorCode)
		}
		if p := fetch(v, "mixed", [16]byte{}, 3); p.ErrorCode != 0 || len(batchHeaders(t, p.RecordBatches)) != 1 {
			t.Errorf("v%d past the zstd batch: error %d", v, p.ErrorCode)
		}
		if p := fetch(v, "zt", [16]byte{}, 0); p.ErrorCode != kerr.UnsupportedCompressionType.Code {
			t.Errorf("v%d zstd topic: error %d, want UNSUPPORTED_COMPRESSION_TYPE", v, p.ErrorCode)
		}
	}
	if p := fetch(10, "mixed", [16]byte{}, 0); p.ErrorCode != 0 || len(batchHeaders(t, p.RecordBatches)) != 3 {
		t.Errorf("v10: error %d, %d batches, want all 3", p.ErrorCode, len(batchHeaders(t, p.RecordBatches)))
	}
	if p := fetch(16, "zt", zid, 0); p.ErrorCode != 0 || len(batchHeaders(t, p.RecordBatches)) != 1 {
		t.Errorf("v16 zstd topic: error %d", p.ErrorCode)
	}
}
