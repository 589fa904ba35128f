package cluster

import (
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceResult is the outcome of one hand-built Produce request.
type produceResult struct {
	Code       int16 // the partition's error code; meaningful when Err is nil
	BaseOffset int64
	Err        error // transport failure or client-side timeout
	Took       time.Duration
}

func (r produceResult) String() string {
	if r.Err != nil {
		return fmt.Sprintf("no response after %v: %v", r.Took.Round(time.Millisecond), r.Err)
	}
	if r.Code != 0 {
		return fmt.Sprintf("%v after %v", kerr.ErrorForCode(r.Code), r.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("acknowledged at offset %d after %v", r.BaseOffset, r.Took.Round(time.Millisecond))
}

// acknowledged reports whether the broker accepted the write.
func (r produceResult) acknowledged() bool { return r.Err == nil && r.Code == 0 }

// produceTo sends one non-idempotent Produce request for values straight
// to node id, with the given acks and broker-side timeout, and returns
// exactly what that broker answered: the tests that check a leader's
// refusal (NOT_ENOUGH_REPLICAS, …) must see the code itself, not a client
// that retries it away.
func (c *Cluster) produceTo(id int32, topic string, partition int32, acks int16, timeout time.Duration, values ...string) produceResult {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = encodeBatch(time.Now(), values...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	start := time.Now()
	// kgo rewrites a raw Produce request's acks to the client's setting,
	// so the client is configured with the acks under test.
	ackOpt := kgo.RequiredAcks(kgo.AllISRAcks())
	switch acks {
	case 0:
		ackOpt = kgo.RequiredAcks(kgo.NoAck())
	case 1:
		ackOpt = kgo.RequiredAcks(kgo.LeaderAck())
	}
	resp, err := c.requestFrom(id, req, timeout+5*time.Second, ackOpt, kgo.DisableIdempotentWrite())
	res := produceResult{Took: time.Since(start), Err: err}
	if err != nil {
		return res
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		res.Err = errors.New("malformed Produce response")
		return res
	}
	p := pr.Topics[0].Partitions[0]
	res.Code, res.BaseOffset = p.ErrorCode, p.BaseOffset
	return res
}

// encodeBatch builds an uncompressed v2 record batch of values (key =
// value) without a producer id, as a non-idempotent client sends it.
func encodeBatch(ts time.Time, values ...string) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(v), Value: []byte(v)}
		// Length is the varint-prefixed size of the rest: encode once with
		// a one-byte zero length to measure it.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	ms := ts.UnixMilli()
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  ms,
		MaxTimestamp:    ms,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(values)),
		Records:         records,
	}
	// Length counts everything after the offset and length fields.
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	enc := b.AppendTo(nil)
	// The CRC-32C covers attributes through the end of the batch.
	b.CRC = int32(crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}
