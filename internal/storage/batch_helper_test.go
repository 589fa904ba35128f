package storage

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"testing"
	"time"
)

// testBatch describes a v2 batch to build. Offsets are relative; the log
// assigns the base offset.
type testBatch struct {
	records       int
	firstTs       int64
	tsStep        int64   // timestamp of record i = firstTs + i*tsStep
	timestamps    []int64 // overrides firstTs/tsStep when set
	valueSize     int
	producerID    int64
	producerEpoch int16
	baseSeq       int32
	attributes    int16
	leaderEpoch   int32
}

// build encodes a valid v2 record batch with CRC-32C (Castagnoli).
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
	pid := tb.producerID
	if pid == 0 {
		pid = -1
	}
	epoch, seq := tb.producerEpoch, tb.baseSeq
	if pid < 0 {
		epoch, seq = -1, -1
	}
	b := make([]byte, batchHeaderSize)
	binary.BigEndian.PutUint32(b[12:], uint32(tb.leaderEpoch))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], uint16(tb.attributes))
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(first))
	binary.BigEndian.PutUint64(b[35:], uint64(maxTs))
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	for i := 0; i < n; i++ {
		var rec []byte
		rec = append(rec, 0) // attributes
		rec = binary.AppendVarint(rec, ts[i]-first)
		rec = binary.AppendVarint(rec, int64(i))
		rec = binary.AppendVarint(rec, -1) // null key
		rec = binary.AppendVarint(rec, int64(tb.valueSize))
		for j := 0; j < tb.valueSize; j++ {
			rec = append(rec, byte('a'+(i+j)%26))
		}
		rec = binary.AppendVarint(rec, 0) // headers
		b = binary.AppendVarint(b, int64(len(rec)))
		b = append(b, rec...)
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-logOverhead))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// simple returns a non-idempotent batch of n records with value size v.
func simple(n, v int, ts int64) []byte {
	return testBatch{records: n, valueSize: v, firstTs: ts, tsStep: 1}.build()
}

// splitBatches splits concatenated batches, failing on malformed data.
func splitBatches(t testing.TB, data []byte) []batchHeader {
	t.Helper()
	var out []batchHeader
	for len(data) > 0 {
		h, err := parseBatchHeader(data)
		if err != nil {
			t.Fatalf("malformed batch in read data: %v", err)
		}
		if int64(len(data)) < h.TotalSize() {
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
func readAll(t testing.TB, l *Log, from int64) []batchHeader {
	t.Helper()
	var out []batchHeader
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
	h, err := parseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyBatchCRC(b); err != nil {
		t.Fatal(err)
	}
	if h.TotalSize() != int64(len(b)) || h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.MaxTimestamp != 110 || h.LastSequence() != 6 || h.ProducerID != 7 {
		t.Fatalf("unexpected header %+v", h)
	}
}

func TestIncrementSequenceWraps(t *testing.T) {
	for _, tc := range []struct{ seq, delta, want int32 }{
		{0, 4, 4},
		{2147483647, 1, 0},
		{2147483645, 4, 1},
	} {
		if got := incrementSequence(tc.seq, tc.delta); got != tc.want {
			t.Errorf("incrementSequence(%d, %d) = %d, want %d", tc.seq, tc.delta, got, tc.want)
		}
	}
}
