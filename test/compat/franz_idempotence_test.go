package compat

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzIdempotentConcurrent produces concurrently from several
// goroutines of one idempotent kgo client (kgo's default) to many partitions
// and reads everything back exactly once, each producer's records in order.
func TestFranzIdempotentConcurrent(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	const partitions, producers, perProducer = 12, 4, 600
	createTopic(t, adm, topic, partitions, nil)

	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(1000), kgo.ProducerLinger(5*time.Millisecond))
	ctx := testContext(t, 60*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, producers*perProducer)
	for g := range producers {
		wg.Go(func() {
			for i := range perProducer {
				r := &kgo.Record{
					Topic:     topic,
					Partition: int32((g*perProducer + i) % partitions),
					Key:       fmt.Appendf(nil, "p%d", g),
					Value:     fmt.Appendf(nil, "%d", i),
				}
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
					if err != nil {
						errs <- err
					}
				})
			}
		})
	}
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}

	offsets := make(map[int32]kgo.Offset, partitions)
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	c := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	got := consume(t, c, producers*perProducer, 60*time.Second)

	nextOffset := make(map[int32]int64) // offsets dense from 0 per partition
	lastSeq := make(map[[2]int32]int)   // (partition, producer) -> last i
	seen := make(map[[2]int]bool)       // (producer, i) exactly once
	for _, r := range got {
		if r.Offset != nextOffset[r.Partition] {
			t.Fatalf("partition %d: offset %d after %d (gap or reorder)", r.Partition, r.Offset, nextOffset[r.Partition]-1)
		}
		nextOffset[r.Partition]++
		var g, i int
		if _, err := fmt.Sscanf(string(r.Key)+" "+string(r.Value), "p%d %d", &g, &i); err != nil {
			t.Fatalf("unparseable record %q=%q: %v", r.Key, r.Value, err)
		}
		if seen[[2]int{g, i}] {
			t.Fatalf("record p%d/%d consumed twice", g, i)
		}
		seen[[2]int{g, i}] = true
		if want := int32((g*perProducer + i) % partitions); r.Partition != want {
			t.Fatalf("record p%d/%d in partition %d, want %d", g, i, r.Partition, want)
		}
		k := [2]int32{r.Partition, int32(g)}
		if last, ok := lastSeq[k]; ok && i <= last {
			t.Fatalf("partition %d: producer %d record %d after %d (out of order)", r.Partition, g, i, last)
		}
		lastSeq[k] = i
	}
	if len(seen) != producers*perProducer {
		t.Fatalf("%d distinct records, want %d", len(seen), producers*perProducer)
	}
}

// idempotentSession is a raw connection with a producer id from
// InitProducerID, for hand-made idempotent batches.
type idempotentSession struct {
	conn  *rawConn
	topic string
	pid   int64
	epoch int16
}

func newIdempotentSession(t *testing.T, b *Broker) *idempotentSession {
	t.Helper()
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	conn := dialRaw(t, b.Addr())
	conn.waitLeaderReady(t, topic, 0)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := conn.roundTrip(req)
	if err != nil {
		t.Fatalf("InitProducerID: %v", err)
	}
	ip := resp.(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 || ip.ProducerID < 0 || ip.ProducerEpoch < 0 {
		t.Fatalf("InitProducerID: %s pid %d epoch %d", errName(ip.ErrorCode), ip.ProducerID, ip.ProducerEpoch)
	}
	return &idempotentSession{conn: conn, topic: topic, pid: ip.ProducerID, epoch: ip.ProducerEpoch}
}

// produce sends one batch of values with the given epoch and base sequence
// (acks=all) and returns the partition response.
func (s *idempotentSession) produce(t *testing.T, epoch int16, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	var recs []rawRecord
	for _, v := range values {
		recs = append(recs, rawRecord{value: []byte(v)})
	}
	batch := encodeBatch(batchSpec{producerID: s.pid, producerEpoch: epoch, baseSequence: seq,
		timestamp: time.Now().UnixMilli(), records: recs})
	resp, err := s.conn.roundTrip(produceRequest(s.topic, 0, -1, batch))
	if err != nil {
		t.Fatalf("produce epoch %d seq %d: %v", epoch, seq, err)
	}
	return singlePartitionResponse(t, resp)
}

// readAll consumes the whole partition and returns its values in order,
// after checking that offsets are dense from 0.
func readAll(t *testing.T, b *Broker, topic string, n int) []string {
	t.Helper()
	c := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var vals []string
	for i, r := range consume(t, c, n, 20*time.Second) {
		if r.Offset != int64(i) {
			t.Fatalf("offset %d at position %d", r.Offset, i)
		}
		vals = append(vals, string(r.Value))
	}
	return vals
}

// TestFranzIdempotentRaw drives the broker's idempotence checks with
// hand-made batches: a retried duplicate, a sequence gap and a stale epoch.
func TestFranzIdempotentRaw(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)

	t.Run("DuplicateBatchKeepsOneCopy", func(t *testing.T) {
		t.Parallel()
		s := newIdempotentSession(t, b)
		first := s.produce(t, s.epoch, 0, "a", "b", "c")
		if first.ErrorCode != 0 || first.BaseOffset != 0 {
			t.Fatalf("first send: %s base offset %d, want NONE at 0", errName(first.ErrorCode), first.BaseOffset)
		}
		// A retry of the same batch (same pid, epoch, sequence) is
		// acknowledged with the original base offset and not appended.
		retry := s.produce(t, s.epoch, 0, "a", "b", "c")
		if retry.ErrorCode != 0 || retry.BaseOffset != 0 {
			t.Fatalf("retried send: %s base offset %d, want NONE at the original offset 0", errName(retry.ErrorCode), retry.BaseOffset)
		}
		next := s.produce(t, s.epoch, 3, "d")
		if next.ErrorCode != 0 || next.BaseOffset != 3 {
			t.Fatalf("next batch: %s base offset %d, want NONE at 3", errName(next.ErrorCode), next.BaseOffset)
		}
		if got := readAll(t, b, s.topic, 4); fmt.Sprint(got) != "[a b c d]" {
			t.Fatalf("log holds %v, want [a b c d]", got)
		}
	})

	t.Run("SequenceGapIsOutOfOrder", func(t *testing.T) {
		t.Parallel()
		s := newIdempotentSession(t, b)
		if r := s.produce(t, s.epoch, 0, "a", "b"); r.ErrorCode != 0 {
			t.Fatalf("first send: %s", errName(r.ErrorCode))
		}
		// Sequence 2 is expected; 5 leaves a gap.
		r := s.produce(t, s.epoch, 5, "x")
		if r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("gap: %s, want %s", errName(r.ErrorCode), errName(kerr.OutOfOrderSequenceNumber.Code))
		}
		if r := s.produce(t, s.epoch, 2, "c"); r.ErrorCode != 0 || r.BaseOffset != 2 {
			t.Fatalf("in-sequence send after the rejected gap: %s at %d, want NONE at 2", errName(r.ErrorCode), r.BaseOffset)
		}
		if got := readAll(t, b, s.topic, 3); fmt.Sprint(got) != "[a b c]" {
			t.Fatalf("log holds %v, want [a b c]", got)
		}
	})

	t.Run("StaleEpochIsInvalidProducerEpoch", func(t *testing.T) {
		t.Parallel()
		s := newIdempotentSession(t, b)
		if r := s.produce(t, s.epoch, 0, "a"); r.ErrorCode != 0 {
			t.Fatalf("first send: %s", errName(r.ErrorCode))
		}
		// KIP-360: an idempotent producer bumps its epoch itself and
		// restarts its sequence at 0; the broker accepts the newer epoch.
		if r := s.produce(t, s.epoch+1, 0, "b"); r.ErrorCode != 0 || r.BaseOffset != 1 {
			t.Fatalf("bumped epoch: %s at %d, want NONE at 1", errName(r.ErrorCode), r.BaseOffset)
		}
		// From then on the old epoch is fenced.
		r := s.produce(t, s.epoch, 1, "stale")
		if r.ErrorCode != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("old epoch: %s, want %s", errName(r.ErrorCode), errName(kerr.InvalidProducerEpoch.Code))
		}
		if got := readAll(t, b, s.topic, 2); fmt.Sprint(got) != "[a b]" {
			t.Fatalf("log holds %v, want [a b]", got)
		}
	})
}
