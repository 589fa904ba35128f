package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

func TestProduceErrors(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "p", 2, nil)
	createTopic(c, "small", 1, map[string]string{"max.message.bytes": "200"})
	createTopic(c, "__consumer_offsets", 1, nil)

	corrupt := batch(t, record.CodecNone, "hello")
	corrupt[len(corrupt)-1] ^= 0xff // in the CRC-covered records
	big := batch(t, record.CodecNone, string(make([]byte, 500)))

	tests := []struct {
		name      string
		v         int16
		topic     string
		partition int32
		acks      int16
		data      []byte
		want      int16
	}{
		{"acks=1", 11, "p", 0, 1, batch(t, record.CodecNone, "a"), 0},
		{"acks=-1", 11, "p", 1, -1, batch(t, record.CodecNone, "a"), 0},
		{"acks=2 is invalid", 11, "p", 0, 2, batch(t, record.CodecNone, "a"), kerr.InvalidRequiredAcks.Code},
		{"acks=-2 is invalid", 11, "p", 0, -2, batch(t, record.CodecNone, "a"), kerr.InvalidRequiredAcks.Code},
		{"unknown topic", 11, "nope", 0, 1, batch(t, record.CodecNone, "a"), kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", 11, "p", 7, 1, batch(t, record.CodecNone, "a"), kerr.UnknownTopicOrPartition.Code},
		{"internal topic", 11, "__consumer_offsets", 0, 1, batch(t, record.CodecNone, "a"), kerr.InvalidTopicException.Code},
		{"corrupt batch", 11, "p", 0, 1, corrupt, kerr.CorruptMessage.Code},
		{"batch over max.message.bytes", 11, "small", 0, 1, big, kerr.MessageTooLarge.Code},
		{"zstd at v3", 3, "p", 0, 1, batch(t, record.CodecZstd, "z"), kerr.UnsupportedCompressionType.Code},
		{"zstd at v6", 6, "p", 0, 1, batch(t, record.CodecZstd, "z"), kerr.UnsupportedCompressionType.Code},
		{"zstd at v7", 7, "p", 0, 1, batch(t, record.CodecZstd, "z"), 0},
		{"v2 carrying a v2 batch", 2, "p", 0, 1, batch(t, record.CodecNone, "a"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do[*kmsg.ProduceResponse](c, tt.v, produceReq(tt.topic, tt.partition, tt.acks, tt.data))
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tt.want {
				t.Fatalf("error %d (%v), want %d", p.ErrorCode, p.ErrorMessage, tt.want)
			}
			if tt.want == 0 && p.BaseOffset < 0 {
				t.Errorf("base offset %d", p.BaseOffset)
			}
			if tt.want != 0 && p.BaseOffset != -1 {
				t.Errorf("base offset %d on error, want -1", p.BaseOffset)
			}
		})
	}
}

func TestProduceOffsetsAndAcksZero(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "p", 1, nil)
	if off := produce(c, "p", 0, "a", "b", "c"); off != 0 {
		t.Fatalf("first base offset %d", off)
	}
	if off := produce(c, "p", 0, "d"); off != 3 {
		t.Fatalf("second base offset %d, want 3", off)
	}

	// acks=0 has no response: the next response on the connection is the
	// Metadata's, and the record is there.
	req := produceReq("p", 0, 0, batch(t, record.CodecNone, "e"))
	req.SetVersion(11)
	c.send(req)
	within(t, 5*time.Second, "acks=0 record to land", func() bool {
		lo := listOffsets(c, 8, "p", 0, -1, -1)
		return lo.Offset == 5
	})

	// An acks=0 produce that fails closes the connection.
	bad := produceReq("nope", 0, 0, batch(t, record.CodecNone, "e"))
	bad.SetVersion(11)
	c.send(bad)
	m := metadataReq()
	m.SetVersion(1)
	corr := c.send(m)
	if _, err := c.recv(m, corr, 5*time.Second); err == nil {
		t.Error("connection still answers after a failed acks=0 produce")
	}
}

func TestProduceLogAppendTime(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "lat", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	createTopic(c, "ct", 1, nil)

	before := time.Now().UnixMilli()
	resp := do[*kmsg.ProduceResponse](c, 11, produceReq("lat", 0, 1, batch(t, record.CodecNone, "x")))
	after := time.Now().UnixMilli()
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LogAppendTime < before || p.LogAppendTime > after {
		t.Fatalf("error %d, log append time %d outside [%d, %d]", p.ErrorCode, p.LogAppendTime, before, after)
	}
	// The stored batch says LogAppendTime and carries that time.
	fr := do[*kmsg.FetchResponse](c, 12, fetchReq("lat", [16]byte{}, 0, 0))
	hs := batchHeaders(t, fr.Topics[0].Partitions[0].RecordBatches)
	if len(hs) != 1 || hs[0].Attributes&0x08 == 0 || hs[0].MaxTimestamp != p.LogAppendTime {
		t.Errorf("stored batch %+v, want the log-append-time bit and max timestamp %d", hs, p.LogAppendTime)
	}

	resp = do[*kmsg.ProduceResponse](c, 11, produceReq("ct", 0, 1, batch(t, record.CodecNone, "x")))
	if got := resp.Topics[0].Partitions[0].LogAppendTime; got != -1 {
		t.Errorf("CreateTime topic: log append time %d, want -1", got)
	}
}

func TestProduceRecompression(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "gz", 1, map[string]string{"compression.type": "gzip"})
	createTopic(c, "keep", 1, nil) // compression.type=producer

	for _, tt := range []struct {
		topic string
		want  record.Codec
	}{
		{"gz", record.CodecGzip},
		{"keep", record.CodecLZ4},
	} {
		t.Run(tt.topic, func(t *testing.T) {
			resp := do[*kmsg.ProduceResponse](c, 11, produceReq(tt.topic, 0, 1, batch(t, record.CodecLZ4, "one", "two", "three")))
			if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != 0 {
				t.Fatalf("produce error %d", ec)
			}
			fr := do[*kmsg.FetchResponse](c, 12, fetchReq(tt.topic, [16]byte{}, 0, 0))
			data := fr.Topics[0].Partitions[0].RecordBatches
			hs := batchHeaders(t, data)
			if len(hs) != 1 {
				t.Fatalf("%d batches", len(hs))
			}
			if got := hs[0].Codec(); got != tt.want {
				t.Errorf("stored codec %v, want %v", got, tt.want)
			}
			_, recs, err := record.DecodeRecords(data)
			if err != nil || len(recs) != 3 || string(recs[2].Value) != "three" {
				t.Errorf("decoded %d records, err %v", len(recs), err)
			}
		})
	}
}
