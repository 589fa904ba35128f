package storage

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/record"
)

// testBatch describes a v2 batch to build. Offsets are relative; the log
// assigns the base offset.
type testBatch struct {
	records       int
	firstTs       int64
	tsStep        int64   // timestamp of record i = firstTs + i*tsStep
	timestamps    []int64 // overrides firstTs/tsStep when set
	maxTs         int64   // overrides the header's MaxTimestamp when nonzero (LogAppendTime)
	valueSize     int
	producerID    int64
	producerEpoch int16
	baseSeq       int32
	attributes    int16
	leaderEpoch   int32
	codec         record.Codec
}

// build encodes a valid v2 record batch with record.BuildBatch.
func (tb testBatch) build() []byte {
	n := tb.records
	if n == 0 {
		n = 1
	}
	ts := make([]int64, n)
	for i := range ts {
		if tb.timestamps != nil {
			ts[i] = tb.timestamps[i]
		} else {
			ts[i] = tb.firstTs + int64(i)*tb.tsStep
		}
	}
	first, maxTs := ts[0], ts[0]
	for _, t := range ts {
		maxTs = max(maxTs, t)
	}
	if tb.maxTs != 0 {
		maxTs = tb.maxTs
	}
	pid := tb.producerID
	if pid == 0 {
		pid = -1
	}
	epoch, seq := tb.producerEpoch, tb.baseSeq
	if pid < 0 {
		epoch, seq = -1, -1
	}
	recs := make([]record.Record, n)
	for i := range recs {
		v := make([]byte, tb.valueSize)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		recs[i] = record.Record{TimestampDelta: ts[i] - first, OffsetDelta: int32(i), Value: v}
	}
	b, err := record.BuildBatch(record.Header{
		PartitionLeaderEpoch: tb.leaderEpoch,
		Attributes:           tb.attributes,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTs,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		BaseSequence:         seq,
	}, recs, tb.codec)
	if err != nil {
		panic(fmt.Sprintf("building test batch: %v", err))
	}
	return b
}

// simple returns a non-idempotent batch of n records with value size v.
func simple(n, v int, ts int64) []byte {
	return testBatch{records: n, valueSize: v, firstTs: ts, tsStep: 1}.build()
}

// splitBatches splits concatenated batches, failing on malformed data.
func splitBatches(t testing.TB, data []byte) []record.Header {
	t.Helper()
	var out []record.Header
	for len(data) > 0 {
		h, err := parseStoredHeader(data)
		if err != nil {
			t.Fatalf("malformed batch in read data: %v", err)
		}
		if len(data) < h.TotalSize() {
			t.Fatalf("partial batch in read data: have %d of %d bytes", len(data), h.TotalSize())
		}
		if err := verifyBatchCRC(data[:h.TotalSize()]); err != nil {
			t.Fatalf("read batch at %d: %v", h.BaseOffset, err)
		}
		out = append(out, h)
		data = data[h.TotalSize():]
	}
	return out
}

// fakeClock is a settable clock for tests.
type fakeClock struct{ ms int64 }

func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is a small-segment config with immediate file deletion.
func testConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	c.FileDeleteDelayMs = 0
	c.RetentionMs = -1
	return c
}

func openTestLog(t testing.TB, dir string, cfg Config, opts OpenOptions) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	if opts.Topic == "" {
		opts.Topic, opts.Partition = "t", 0
	}
	l, err := Open(dir, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, batch []byte, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.Append(batch, epoch)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return info
}

// readAll reads every batch from offset to the log end.
func readAll(t testing.TB, l *Log, from int64) []record.Header {
	t.Helper()
	var out []record.Header
	for off := from; off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		hs := splitBatches(t, res.Data)
		if len(hs) == 0 {
			t.Fatalf("Read(%d) returned nothing below LEO %d", off, l.LogEndOffset())
		}
		out = append(out, hs...)
		off = hs[len(hs)-1].LastOffset() + 1
	}
	return out
}

func TestBatchHelperProducesParsableBatch(t *testing.T) {
	b := testBatch{records: 3, firstTs: 100, tsStep: 5, valueSize: 10, producerID: 7, producerEpoch: 1, baseSeq: 4}.build()
	h, err := parseStoredHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyBatchCRC(b); err != nil {
		t.Fatal(err)
	}
	if h.TotalSize() != len(b) || h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.MaxTimestamp != 110 || h.LastSequence() != 6 || h.ProducerID != 7 {
		t.Fatalf("unexpected header %+v", h)
	}
}
