package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vltava/vltava/internal/record"
)

// kv is one record to produce: a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

func val(s string) []byte { return []byte(s) }

// keyedBatch builds a batch of keyed records with timestamps ts, ts+1, ...
func keyedBatch(t testing.TB, ts int64, codec record.Codec, pid int64, epoch int16, seq int32, recs ...kv) []byte {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{TimestampDelta: int64(i), OffsetDelta: int32(i), Key: []byte(r.key), Value: r.value}
	}
	if pid < 0 {
		epoch, seq = -1, -1
	}
	b, err := record.BuildBatch(record.Header{
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  ts,
		MaxTimestamp:    ts + int64(len(recs)-1),
		ProducerID:      pid,
		ProducerEpoch:   epoch,
		BaseSequence:    seq,
	}, rs, codec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compactedRecord is one record read back from a log.
type compactedRecord struct {
	offset    int64
	timestamp int64
	key       string
	value     []byte
	horizon   bool // its batch carries a KIP-534 delete horizon
}

// readRecords reads the whole log as a consumer starting at offset 0 would
// and checks that batches and records come in strictly increasing offset
// order, inside their batch's range.
func readRecords(t testing.TB, l *Log) []compactedRecord {
	t.Helper()
	var out []compactedRecord
	prev := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(res.Data) == 0 {
			t.Fatalf("Read(%d) returned nothing below LEO %d", off, l.LogEndOffset())
		}
		it := record.NewBatches(res.Data)
		for it.Next() {
			if err := verifyBatchCRC(it.Batch()); err != nil {
				t.Fatal(err)
			}
			h, recs, err := record.DecodeRecords(it.Batch())
			if err != nil {
				t.Fatalf("decoding batch at %d: %v", it.Header().BaseOffset, err)
			}
			if h.BaseOffset <= prev && prev >= 0 && h.LastOffset() <= prev {
				t.Fatalf("batch [%d, %d] does not advance past offset %d", h.BaseOffset, h.LastOffset(), prev)
			}
			for _, r := range recs {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o <= prev || o > h.LastOffset() {
					t.Fatalf("record offset %d after %d (batch [%d, %d])", o, prev, h.BaseOffset, h.LastOffset())
				}
				prev = o
				out = append(out, compactedRecord{offset: o, timestamp: h.FirstTimestamp + r.TimestampDelta, key: string(r.Key), value: r.Value, horizon: h.HasDeleteHorizon()})
			}
			off = h.LastOffset() + 1
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	return out
}

// compactTestConfig is a compacted log with small segments.
func compactTestConfig() Config {
	c := testConfig()
	c.Compact, c.Delete = true, false
	c.SegmentBytes = 1024
	c.DeleteRetentionMs = 1000
	c.MinCleanableDirtyRatio = 0.5
	return c
}

// produced tracks every record a test appended and the latest per key.
type produced struct {
	all    []compactedRecord
	latest map[string]compactedRecord
}

func appendKeyed(t testing.TB, l *Log, p *produced, ts int64, codec record.Codec, recs ...kv) {
	t.Helper()
	info := mustAppend(t, l, keyedBatch(t, ts, codec, -1, 0, 0, recs...), 0)
	if p.latest == nil {
		p.latest = make(map[string]compactedRecord)
	}
	for i, r := range recs {
		c := compactedRecord{offset: info.BaseOffset + int64(i), timestamp: ts + int64(i), key: r.key, value: r.value}
		p.all = append(p.all, c)
		p.latest[r.key] = c
	}
}

// expectCompacted is the model of a log whose records below cleanedBelow
// were compacted against an offset map built up to mapEnd: there, a record
// survives only if no record of its key follows it below mapEnd (and
// tombstones only when keepTombstones); everything else is untouched.
func (p *produced) expectCompacted(cleanedBelow, mapEnd int64, keepTombstones bool) []compactedRecord {
	last := map[string]int64{}
	for _, r := range p.all {
		if r.offset < mapEnd {
			last[r.key] = r.offset
		}
	}
	var out []compactedRecord
	for _, r := range p.all {
		if r.offset < cleanedBelow && (last[r.key] != r.offset || (r.value == nil && !keepTombstones)) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// checkCompacted asserts that a consumer reading the log from its start
// sees exactly expectCompacted(upTo, keepTombstones): same offsets, keys,
// values and timestamps. It returns what was read.
func checkCompacted(t testing.TB, l *Log, p *produced, upTo int64, keepTombstones bool) []compactedRecord {
	t.Helper()
	got := readRecords(t, l)
	want := p.expectCompacted(upTo, upTo, keepTombstones)
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Fatalf("record %d missing: want %s", i, want[i])
		case i >= len(want):
			t.Fatalf("unexpected record %d: %s", i, got[i])
		case got[i].String() != want[i].String():
			t.Fatalf("record %d: got %s, want %s", i, got[i], want[i])
		}
	}
	return got
}

func (r compactedRecord) String() string {
	v := "<tombstone>"
	if r.value != nil {
		v = string(r.value)
	}
	return fmt.Sprintf("{offset %d key %q value %s ts %d}", r.offset, r.key, v, r.timestamp)
}

func TestCompactKeepsOnlyLatestRecordPerKeyAtItsOffset(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	l := openTestLog(t, t.TempDir(), compactTestConfig(), OpenOptions{Now: clock.now})
	defer l.Close()
	var p produced
	for i := range 200 {
		appendKeyed(t, l, &p, clock.ms+int64(i), record.CodecNone, kv{fmt.Sprintf("k%d", i%5), val(fmt.Sprintf("v%d", i))})
	}
	// A multi-record batch in which only some records are superseded.
	appendKeyed(t, l, &p, clock.ms+300, record.CodecNone, kv{"k0", val("a")}, kv{"x", val("b")}, kv{"k0", val("c")})
	for i := range 10 {
		appendKeyed(t, l, &p, clock.ms+400+int64(i), record.CodecNone, kv{"k1", val(fmt.Sprintf("late%d", i))})
	}
	l.SetHighWatermark(l.LogEndOffset())
	leo, sizeBefore, segsBefore := l.LogEndOffset(), l.Size(), l.NumSegments()
	if segsBefore < 5 {
		t.Fatalf("test needs several segments, have %d", segsBefore)
	}

	res, err := l.Compact(clock.now(), 0, CleanerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	active := l.segmentList()[l.NumSegments()-1].baseOffset
	if res.EndOffset != active || res.FirstDirtyOffset != 0 {
		t.Fatalf("cleaned [%d, %d), want [0, %d)", res.FirstDirtyOffset, res.EndOffset, active)
	}
	if l.LogEndOffset() != leo || l.LogStartOffset() != 0 {
		t.Fatalf("offsets moved: LEO %d (was %d), start %d", l.LogEndOffset(), leo, l.LogStartOffset())
	}
	if l.Size() >= sizeBefore/2 {
		t.Fatalf("compaction did not shrink the log: %d bytes, was %d", l.Size(), sizeBefore)
	}
	checkCompacted(t, l, &p, active, true)
	// The segments, now tiny, are merged by the next clean.
	if _, err := l.Compact(clock.now(), res.EndOffset, CleanerOptions{}); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() > 2 {
		t.Fatalf("%d segments after a second clean, want the cleaned ones merged into one plus the active", l.NumSegments())
	}
	checkCompacted(t, l, &p, active, true)

	// Appends continue after the swap, and a reopened log (indexes and
	// all) reads the same.
	appendKeyed(t, l, &p, clock.ms+500, record.CodecNone, kv{"k2", val("after")})
	before := readRecords(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, l.Dir(), compactTestConfig(), OpenOptions{Now: clock.now, RecoveryPoint: 0})
	defer l2.Close()
	after := readRecords(t, l2)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("reopened log differs:\n%v\n%v", before, after)
	}
	// Index lookups land on the right batch for every surviving offset.
	for _, r := range after {
		res, err := l2.Read(r.offset, 1, l2.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := parseStoredHeader(res.Data)
		if h.BaseOffset > r.offset || h.LastOffset() < r.offset {
			t.Fatalf("Read(%d) returned batch [%d, %d]", r.offset, h.BaseOffset, h.LastOffset())
		}
	}
}

func TestCompactTombstonesVanishAfterDeleteRetention(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	cfg := compactTestConfig()
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{Now: clock.now})
	defer l.Close()
	var p produced
	for i := range 60 {
		appendKeyed(t, l, &p, clock.ms, record.CodecNone, kv{fmt.Sprintf("k%d", i%3), val(fmt.Sprintf("v%d", i))})
	}
	appendKeyed(t, l, &p, clock.ms, record.CodecNone, kv{"k1", nil}) // delete k1
	for i := range 40 {
		appendKeyed(t, l, &p, clock.ms, record.CodecNone, kv{"k0", val(fmt.Sprintf("w%d", i))})
	}
	l.SetHighWatermark(l.LogEndOffset())

	res, err := l.Compact(clock.now(), 0, CleanerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := clock.ms + cfg.DeleteRetentionMs; res.NextDeleteHorizonMs != want {
		t.Fatalf("next delete horizon %d, want %d", res.NextDeleteHorizonMs, want)
	}
	got := checkCompacted(t, l, &p, res.EndOffset, true)
	var tomb *compactedRecord
	for i := range got {
		if got[i].key == "k1" {
			tomb = &got[i]
		}
	}
	if tomb == nil || tomb.value != nil || !tomb.horizon {
		t.Fatalf("k1's tombstone should be kept with a delete horizon set, got %+v", tomb)
	}

	tests := []struct {
		name          string
		advanceMs     int64
		wantTombstone bool
	}{
		{"before the horizon the tombstone stays", cfg.DeleteRetentionMs - 1, true},
		{"once the horizon has passed it is removed", 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock.ms += tc.advanceMs
			if _, err := l.Compact(clock.now(), res.EndOffset, CleanerOptions{}); err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, l, &p, res.EndOffset, tc.wantTombstone)
			found := false
			for _, r := range readRecords(t, l) {
				found = found || r.key == "k1"
			}
			if found != tc.wantTombstone {
				t.Fatalf("k1 present=%v, want %v", found, tc.wantTombstone)
			}
		})
	}
}

func TestCompactCompressedBatches(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecLZ4, record.CodecZstd, record.CodecGzip, record.CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			clock := &fakeClock{ms: 5_000_000}
			l := openTestLog(t, t.TempDir(), compactTestConfig(), OpenOptions{Now: clock.now})
			defer l.Close()
			var p produced
			for i := range 60 {
				recs := []kv{{fmt.Sprintf("k%d", i%4), val(strings.Repeat("v", 40) + fmt.Sprint(i))}, {fmt.Sprintf("u%d", i), val("unique")}}
				appendKeyed(t, l, &p, clock.ms+int64(i*2), codec, recs...)
			}
			l.SetHighWatermark(l.LogEndOffset())
			res, err := l.Compact(clock.now(), 0, CleanerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, l, &p, res.EndOffset, true)
			for _, s := range l.segmentList() {
				err := forEachBatch(s, func(h *record.Header, _ []byte) (bool, error) {
					if h.Codec() != codec {
						return false, fmt.Errorf("batch at %d has codec %s, want %s", h.BaseOffset, h.Codec(), codec)
					}
					return true, nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestCompactRespectsMinCompactionLag(t *testing.T) {
	clock := &fakeClock{ms: 10_000_000}
	cfg := compactTestConfig()
	cfg.MinCompactionLagMs = 60_000
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{Now: clock.now})
	defer l.Close()
	var p produced
	// Old data, then data written "now" that must stay uncompacted.
	for i := range 60 {
		appendKeyed(t, l, &p, clock.ms-120_000, record.CodecNone, kv{"k", val(fmt.Sprint("old", i))})
	}
	boundary := l.LogEndOffset()
	for i := range 60 {
		appendKeyed(t, l, &p, clock.ms, record.CodecNone, kv{"k", val(fmt.Sprint("new", i))})
	}
	l.SetHighWatermark(l.LogEndOffset())
	res, err := l.Compact(clock.now(), 0, CleanerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.EndOffset > boundary {
		t.Fatalf("cleaned up to %d, past the last segment older than the lag (data from %d is young)", res.EndOffset, boundary)
	}
	checkCompacted(t, l, &p, res.EndOffset, true)
}

func TestCompactKeepsLastBatchOfIdempotentProducer(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	dir := t.TempDir()
	l := openTestLog(t, dir, compactTestConfig(), OpenOptions{Now: clock.now})
	const pid = 42
	seq := int32(0)
	for i := range 40 {
		mustAppend(t, l, keyedBatch(t, clock.ms, record.CodecNone, pid, 0, seq, kv{"k", val(fmt.Sprint(i))}), 0)
		seq++
	}
	lastIdem := l.LogEndOffset() - 1
	// A later, non-idempotent write supersedes the producer's last record.
	for range 30 {
		mustAppend(t, l, keyedBatch(t, clock.ms, record.CodecNone, -1, 0, 0, kv{"k", val("other")}), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.Compact(clock.now(), 0, CleanerOptions{}); err != nil {
		t.Fatal(err)
	}
	var kept *record.Header
	for _, h := range readAll(t, l, 0) {
		if h.ProducerID == pid {
			if kept != nil {
				t.Fatalf("more than one batch of producer %d kept", pid)
			}
			hh := h
			kept = &hh
		}
	}
	if kept == nil || kept.LastOffset() != lastIdem || kept.NumRecords != 0 || kept.LastSequence() != seq-1 {
		t.Fatalf("want an empty batch ending at %d with last sequence %d, got %+v", lastIdem, seq-1, kept)
	}
	// After an unclean restart rebuilt from the log alone, the producer's
	// sequence is still known: a retry is a duplicate and a gap is refused.
	l.Close()
	snaps, _ := filepath.Glob(filepath.Join(dir, "*"+snapshotFileSuffix))
	for _, s := range snaps {
		os.Remove(s)
	}
	l2 := openTestLog(t, dir, compactTestConfig(), OpenOptions{Now: clock.now})
	defer l2.Close()
	if _, err := l2.Append(keyedBatch(t, clock.ms, record.CodecNone, pid, 0, seq+5, kv{"k", val("gap")}), 0); err == nil {
		t.Fatal("a sequence gap was accepted: producer state was lost by compaction")
	}
	if info := mustAppend(t, l2, keyedBatch(t, clock.ms, record.CodecNone, pid, 0, seq, kv{"k", val("next")}), 0); info.Duplicate {
		t.Fatal("next in-sequence batch reported as duplicate")
	}
}

func TestCompactCrashMidCleanLeavesValidLog(t *testing.T) {
	tests := []struct {
		name          string
		stage         cleanStage
		wantCompacted bool // the swap was committed before the crash
	}{
		{"after writing .cleaned files", stageCleaned, false},
		{"after renaming to .swap", stageSwap, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{ms: 1_000_000}
			dir := t.TempDir()
			l := openTestLog(t, dir, compactTestConfig(), OpenOptions{Now: clock.now})
			var p produced
			for i := range 150 {
				appendKeyed(t, l, &p, clock.ms+int64(i), record.CodecNone, kv{fmt.Sprintf("k%d", i%3), val(fmt.Sprint(i))})
			}
			l.SetHighWatermark(l.LogEndOffset())
			all := readRecords(t, l)
			mapEnd := l.segmentList()[l.NumSegments()-1].baseOffset
			_, err := l.Compact(clock.now(), 0, CleanerOptions{crashAfter: tc.stage})
			if !errors.Is(err, errInjectedCrash) {
				t.Fatalf("Compact: %v, want the injected crash", err)
			}
			leftovers, _ := filepath.Glob(filepath.Join(dir, "*"+[]string{"", cleanedFileSuffix, swapFileSuffix}[tc.stage]))
			if len(leftovers) == 0 {
				t.Fatal("the crash left no cleaner files behind; the test proves nothing")
			}
			// Simulate the crash: no clean shutdown, recovery from 0.
			l.Close()
			os.Remove(filepath.Join(dir, CleanShutdownFile))
			l2 := openTestLog(t, dir, compactTestConfig(), OpenOptions{Now: clock.now, HighWatermark: 150})
			defer l2.Close()
			for _, pat := range []string{"*" + cleanedFileSuffix, "*" + swapFileSuffix} {
				if m, _ := filepath.Glob(filepath.Join(dir, pat)); len(m) > 0 {
					t.Fatalf("leftover files after reopen: %v", m)
				}
			}
			if l2.LogEndOffset() != 150 {
				t.Fatalf("LEO %d after reopen, want 150", l2.LogEndOffset())
			}
			got := readRecords(t, l2)
			if tc.wantCompacted {
				if len(got) >= len(all) {
					t.Fatalf("committed swap was not completed: %d records, had %d", len(got), len(all))
				}
				// Only the first group had been swapped; it was
				// compacted against the map of the whole dirty range.
				first := l2.segmentList()[1].baseOffset
				want := p.expectCompacted(first, mapEnd, true)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("after completing the swap:\n got %v\nwant %v", got, want)
				}
			} else if fmt.Sprint(got) != fmt.Sprint(all) {
				t.Fatal("uncommitted clean changed the log")
			}
			// The log keeps working and can be compacted fully now.
			l2.SetHighWatermark(l2.LogEndOffset())
			res, err := l2.Compact(clock.now(), 0, CleanerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, l2, &p, res.EndOffset, true)
		})
	}
}

func TestCompactInPassesWhenOffsetMapIsSmall(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	l := openTestLog(t, t.TempDir(), compactTestConfig(), OpenOptions{Now: clock.now})
	defer l.Close()
	var p produced
	for i := range 300 {
		appendKeyed(t, l, &p, clock.ms, record.CodecNone, kv{fmt.Sprintf("k%d", i%40), val(fmt.Sprint(i))})
	}
	l.SetHighWatermark(l.LogEndOffset())
	active := l.segmentList()[l.NumSegments()-1].baseOffset
	// Room for 9 keys (10 slots at 0.9 load): the 40 keys take passes.
	opts := CleanerOptions{DedupeBufferBytes: 10 * offsetMapSlotSize}
	checkpoint, passes := int64(0), 0
	for checkpoint < active {
		res, err := l.Compact(clock.now(), checkpoint, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.EndOffset <= checkpoint {
			t.Fatalf("pass %d made no progress from %d", passes, checkpoint)
		}
		checkpoint = res.EndOffset
		passes++
	}
	if passes < 2 {
		t.Fatalf("a %d-entry map cleaned 40 keys in %d pass", 9, passes)
	}
	// One more pass from the start, as after a checkpoint reset, finds
	// nothing left to remove below the active segment.
	if _, err := l.Compact(clock.now(), 0, CleanerOptions{}); err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, l, &p, active, true)
}

func TestCompactConcurrentWithReadsAndAppends(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	l := openTestLog(t, t.TempDir(), compactTestConfig(), OpenOptions{Now: clock.now})
	defer l.Close()
	var p produced
	for i := range 200 {
		appendKeyed(t, l, &p, clock.ms, record.CodecNone, kv{fmt.Sprintf("k%d", i%7), val(fmt.Sprint(i))})
	}
	l.SetHighWatermark(l.LogEndOffset())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() { // a consumer re-reading from offset 0
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			prev := int64(-1)
			for off := int64(0); off < l.HighWatermark(); {
				res, err := l.Read(off, 4096, l.HighWatermark(), true)
				if err != nil {
					errs <- err
					return
				}
				it := record.NewBatches(res.Data)
				for it.Next() {
					h := it.Header()
					if h.LastOffset() <= prev {
						errs <- fmt.Errorf("offsets went backwards: %d after %d", h.LastOffset(), prev)
						return
					}
					prev, off = h.LastOffset(), h.LastOffset()+1
				}
			}
		}
	}()
	go func() { // a producer
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := l.Append(keyedBatch(t, clock.ms, record.CodecNone, -1, 0, 0, kv{"live", val(fmt.Sprint(i))}), 0); err != nil {
				errs <- err
				return
			}
			if i > 2000 {
				return
			}
		}
	}()
	for range 3 {
		if _, err := l.Compact(clock.now(), 0, CleanerOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestOffsetMapBoundedAndLatestWins(t *testing.T) {
	m := newOffsetMap(100*offsetMapSlotSize, 0)
	for i := range 90 {
		if !m.put([]byte(fmt.Sprint("key", i)), int64(i)) {
			t.Fatalf("put %d refused below capacity", i)
		}
	}
	if m.put([]byte("one too many"), 1000) {
		t.Fatal("put beyond log.cleaner.dedupe.buffer.size accepted")
	}
	if !m.put([]byte("key3"), 500) {
		t.Fatal("updating an existing key refused when full")
	}
	if off, ok := m.get([]byte("key3")); !ok || off != 500 {
		t.Fatalf("key3 -> %d, %v; want 500", off, ok)
	}
	if _, ok := m.get([]byte("absent")); ok {
		t.Fatal("absent key found")
	}
	if len(m.slots) > 100*offsetMapSlotSize {
		t.Fatalf("map grew to %d bytes, beyond its %d-byte budget", len(m.slots), 100*offsetMapSlotSize)
	}
}

// log.cleaner.io.buffer.load.factor decides when the map counts as full.
func TestOffsetMapLoadFactor(t *testing.T) {
	for _, lf := range []float64{0.5, 0.9} {
		m := newOffsetMap(100*offsetMapSlotSize, lf)
		n := 0
		for m.put([]byte(fmt.Sprint("key", n)), int64(n)) {
			n++
		}
		if want := int(100 * lf); n != want {
			t.Errorf("load factor %v: map full after %d keys, want %d", lf, n, want)
		}
	}
}
