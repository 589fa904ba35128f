package compat

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// codecs are every compression codec Kafka defines (KIP-110 added zstd).
var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// ackModes are the three produce acks Kafka accepts.
var ackModes = []struct {
	name string
	acks kgo.Acks
}{
	{"acks=0", kgo.NoAck()},
	{"acks=1", kgo.LeaderAck()},
	{"acks=all", kgo.AllISRAcks()},
}

// testRecord returns record i of a produced sequence: key, value and two
// headers all derived from i so that the read-back can be checked exactly.
func testRecord(topic string, partition int32, i int, ts time.Time) *kgo.Record {
	return &kgo.Record{
		Topic:     topic,
		Partition: partition,
		Key:       []byte("key-" + strconv.Itoa(i)),
		// Repetitive values give the codecs something to compress.
		Value:     bytes.Repeat([]byte("value-"+strconv.Itoa(i)+";"), 20),
		Headers:   []kgo.RecordHeader{{Key: "idx", Value: []byte(strconv.Itoa(i))}, {Key: "empty", Value: nil}},
		Timestamp: ts,
	}
}

// checkRecord asserts that got is testRecord(i) stored at offset.
func checkRecord(t *testing.T, got *kgo.Record, i int, offset int64, ts time.Time) {
	t.Helper()
	want := testRecord(got.Topic, got.Partition, i, ts)
	if got.Offset != offset {
		t.Fatalf("record %d at offset %d, want %d", i, got.Offset, offset)
	}
	if !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) {
		t.Fatalf("offset %d: key %q value %.40q..., want key %q value %.40q...", got.Offset, got.Key, got.Value, want.Key, want.Value)
	}
	if len(got.Headers) != 2 || got.Headers[0].Key != "idx" || string(got.Headers[0].Value) != strconv.Itoa(i) ||
		got.Headers[1].Key != "empty" || len(got.Headers[1].Value) != 0 {
		t.Fatalf("offset %d: headers %v, want [idx=%d empty=]", got.Offset, got.Headers, i)
	}
	if !ts.IsZero() && got.Timestamp.UnixMilli() != ts.UnixMilli() {
		t.Fatalf("offset %d: timestamp %d, want the producer's CreateTime %d", got.Offset, got.Timestamp.UnixMilli(), ts.UnixMilli())
	}
}

// TestFranzProduceCodecsAndAcks produces with every codec and every acks
// value and reads back every record: same keys, values, headers, timestamps,
// dense offsets from 0, in order.
func TestFranzProduceCodecsAndAcks(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)
	adm := newAdmin(t, b)
	const n = 200
	for _, c := range codecs {
		for _, a := range ackModes {
			t.Run(c.name+"/"+a.name, func(t *testing.T) {
				t.Parallel()
				topic := uniqueTopic(t)
				createTopic(t, adm, topic, 1, nil)
				opts := []kgo.Opt{
					kgo.ProducerBatchCompression(c.codec),
					kgo.RequiredAcks(a.acks),
					kgo.RecordPartitioner(kgo.ManualPartitioner()),
					kgo.ProducerLinger(20 * time.Millisecond),
					kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
				}
				if a.acks != kgo.AllISRAcks() {
					opts = append(opts, kgo.DisableIdempotentWrite()) // idempotence requires acks=all
				}
				cl := newClient(t, b, opts...)
				ts := time.UnixMilli(time.Now().UnixMilli() - 60_000)
				ctx := testContext(t, 30*time.Second)
				errs := make(chan error, n)
				for i := range n {
					cl.Produce(ctx, testRecord(topic, 0, i, ts), func(_ *kgo.Record, err error) { errs <- err })
				}
				if err := cl.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				for range n {
					if err := <-errs; err != nil {
						t.Fatalf("produce: %v", err)
					}
				}
				got := consume(t, cl, n, 30*time.Second)
				for i, r := range got {
					checkRecord(t, r, i, int64(i), ts)
				}
			})
		}
	}
}

// TestFranzConsumeFrom starts consumers at the earliest offset, the latest,
// a given offset and a timestamp, and checks where each one starts.
func TestFranzConsumeFrom(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)

	// Record i has timestamp base+i seconds, so a timestamp maps to an offset.
	const n = 20
	base := time.UnixMilli(time.Now().Add(-time.Hour).UnixMilli())
	tsOf := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	producer := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, testRecord(topic, 0, i, tsOf(i)))
	}
	// One ProduceSync to one partition: the records share a batch, so
	// timestamp lookups must find the record inside it, not the batch start.
	produceSync(t, producer, rs...)

	from := func(t *testing.T, o kgo.Offset) *kgo.Client {
		return newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: o}}))
	}

	for _, tc := range []struct {
		name      string
		offset    kgo.Offset
		wantFirst int
	}{
		{"Earliest", kgo.NewOffset().AtStart(), 0},
		{"Offset7", kgo.NewOffset().At(7), 7},
		{"OffsetEnd-3", kgo.NewOffset().AtEnd().Relative(-3), n - 3},
		{"ExactTimestamp", kgo.NewOffset().AfterMilli(tsOf(12).UnixMilli()), 12},
		{"BetweenTimestamps", kgo.NewOffset().AfterMilli(tsOf(12).UnixMilli() - 500), 12},
		{"BeforeFirstTimestamp", kgo.NewOffset().AfterMilli(base.UnixMilli() - 10_000), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := consume(t, from(t, tc.offset), n-tc.wantFirst, 20*time.Second)
			for j, r := range got {
				checkRecord(t, r, tc.wantFirst+j, int64(tc.wantFirst+j), tsOf(tc.wantFirst+j))
			}
		})
	}

	t.Run("Latest", func(t *testing.T) {
		t.Parallel()
		// Its own topic: the markers below must not disturb the others.
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, nil)
		p := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for i := range n {
			produceSync(t, p, testRecord(topic, 0, i, tsOf(i)))
		}
		cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}))
		// The consumer resolves "latest" asynchronously, so keep producing
		// markers until one arrives; nothing produced before it started
		// (offsets < n) may ever be returned.
		ctx := testContext(t, 30*time.Second)
		for marker := 0; ; marker++ {
			produceSync(t, p, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("marker-" + strconv.Itoa(marker))})
			pollCtx, cancel := ctxWithTimeout(ctx, time.Second)
			fs := cl.PollFetches(pollCtx)
			cancel()
			if ctx.Err() != nil {
				t.Fatal("no marker consumed from the latest offset before the deadline")
			}
			if errs := fs.Errors(); len(errs) > 0 && pollCtx.Err() == nil {
				t.Fatalf("fetch errors: %v", fetchErrors(errs))
			}
			recs := fs.Records()
			for _, r := range recs {
				if r.Offset < n || !bytes.HasPrefix(r.Value, []byte("marker-")) {
					t.Fatalf("consumer at latest returned pre-existing record at offset %d (%q)", r.Offset, r.Value)
				}
			}
			if len(recs) > 0 {
				return
			}
		}
	})

	t.Run("TimestampAfterLastRecord", func(t *testing.T) {
		t.Parallel()
		// No record is that new: the consumer starts at the end and sees
		// only what is produced afterwards.
		topic2 := uniqueTopic(t)
		createTopic(t, adm, topic2, 1, nil)
		p := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		produceSync(t, p, &kgo.Record{Topic: topic2, Value: []byte("old"), Timestamp: base})
		cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic2: {0: kgo.NewOffset().AfterMilli(base.Add(time.Hour).UnixMilli())},
		}))
		ctx := testContext(t, 30*time.Second)
		for {
			produceSync(t, p, &kgo.Record{Topic: topic2, Value: []byte("new"), Timestamp: time.Now()})
			pollCtx, cancel := ctxWithTimeout(ctx, time.Second)
			recs := cl.PollFetches(pollCtx).Records()
			cancel()
			if ctx.Err() != nil {
				t.Fatal("nothing consumed before the deadline")
			}
			for _, r := range recs {
				if string(r.Value) != "new" || r.Offset == 0 {
					t.Fatalf("consumed %q at offset %d, want only records newer than the timestamp", r.Value, r.Offset)
				}
			}
			if len(recs) > 0 {
				return
			}
		}
	})
}

// TestFranzHeadersAndNulls checks the record fields Kafka passes through
// untouched: null vs empty keys and values, binary data, many headers.
func TestFranzHeadersAndNulls(t *testing.T) {
	t.Parallel()
	b := StartBroker(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	var many []kgo.RecordHeader
	for i := range 50 {
		many = append(many, kgo.RecordHeader{Key: fmt.Sprintf("h%02d", i), Value: []byte{byte(i)}})
	}
	want := []*kgo.Record{
		{Topic: topic, Key: nil, Value: []byte("null key")},
		{Topic: topic, Key: []byte{}, Value: []byte("empty key")},
		{Topic: topic, Key: []byte("null value"), Value: nil},
		{Topic: topic, Key: binary, Value: binary},
		{Topic: topic, Key: []byte("dup headers"), Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "a", Value: []byte("2")}}},
		{Topic: topic, Key: []byte("many headers"), Headers: many},
	}
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	produceSync(t, cl, want...)
	got := consume(t, cl, len(want), 20*time.Second)
	for i, r := range got {
		w := want[i]
		if (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Key, w.Key) {
			t.Errorf("offset %d: key %q (nil %v), want %q (nil %v)", r.Offset, r.Key, r.Key == nil, w.Key, w.Key == nil)
		}
		if (r.Value == nil) != (w.Value == nil) || !bytes.Equal(r.Value, w.Value) {
			t.Errorf("offset %d: value %q (nil %v), want %q (nil %v)", r.Offset, r.Value, r.Value == nil, w.Value, w.Value == nil)
		}
		if len(r.Headers) != len(w.Headers) {
			t.Errorf("offset %d: %d headers, want %d", r.Offset, len(r.Headers), len(w.Headers))
			continue
		}
		for j := range w.Headers {
			if r.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(r.Headers[j].Value, w.Headers[j].Value) {
				t.Errorf("offset %d header %d: %s=%q, want %s=%q", r.Offset, j, r.Headers[j].Key, r.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
}
