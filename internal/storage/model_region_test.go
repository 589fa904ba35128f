package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/testing/poll"
)

// regionRecordKey is the key of the record at offset o: few keys, so
// compaction removes most records.
func regionRecordKey(o int64) string { return "k" + strconv.FormatInt(o%13, 10) }

// TestReadRegionConcurrentWithRetentionAndCompaction reads through
// ReadRegion as a fetch does — the bytes of the file region it returns,
// read back with pread as sendfile would — while one goroutine appends,
// and retention (segments deleted), DeleteRecords and compaction run at the
// same time. Every record's value is its own offset and its key a function
// of it, so a read that returns the wrong bytes is caught, not only one
// that returns malformed ones. Each read must answer whole, CRC-valid
// batches (a byte limit may cut the last one), in increasing offsets, the
// first containing or following the offset asked for, all below the bound;
// or OFFSET_OUT_OF_RANGE for an offset the log start has passed meanwhile.
func TestReadRegionConcurrentWithRetentionAndCompaction(t *testing.T) {
	cfg := testConfig()
	cfg.Compact, cfg.Delete = true, true
	cfg.SegmentBytes = 1024
	cfg.RetentionBytes = 8 << 10
	cfg.MinCleanableDirtyRatio = 0.01
	// As in production (file.delete.delay.ms): a deleted segment's file
	// stays open long enough for the regions already handed out.
	cfg.FileDeleteDelayMs = 60_000
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()

	const appends = 1500
	stop := make(chan struct{})     // everything stops
	produced := make(chan struct{}) // the producer is done
	var cleaned, aborted atomic.Int32
	errs := make(chan error, 16)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	// The producer, the only appender: it knows each record's offset.
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(produced)
		rng := rand.New(rand.NewPCG(1, 2))
		for range appends {
			base := l.LogEndOffset()
			n := 1 + rng.IntN(3)
			recs := make([]record.Record, n)
			for i := range recs {
				o := base + int64(i)
				recs[i] = record.Record{OffsetDelta: int32(i), Key: []byte(regionRecordKey(o)), Value: []byte(strconv.FormatInt(o, 10))}
			}
			now := time.Now().UnixMilli()
			b, err := record.BuildBatch(record.Header{LastOffsetDelta: int32(n - 1), FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
			if err != nil {
				fail(err)
				return
			}
			info, err := l.Append(b, 0)
			if err != nil {
				fail(err)
				return
			}
			if info.BaseOffset != base {
				fail(fmt.Errorf("appended at %d, expected %d", info.BaseOffset, base))
				return
			}
			l.SetHighWatermark(l.LogEndOffset())
		}
	}()
	// Background work, each until the producer is done.
	background := func(name string, work func(rng *rand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(len(name)), 3))
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if err := work(rng); err != nil {
					fail(fmt.Errorf("%s: %w", name, err))
					return
				}
			}
		}()
	}
	background("retention", func(rng *rand.Rand) error {
		if rng.IntN(20) != 0 {
			return nil
		}
		_, err := l.EnforceRetention()
		return err
	})
	background("compaction", func(*rand.Rand) error {
		_, err := l.Compact(time.Now(), 0, CleanerOptions{})
		if errors.Is(err, errCleaningAborted) {
			// Retention or DeleteRecords changed the segments under the
			// pass, which then leaves the log as it was (as Kafka's
			// cleaner aborts); the next pass tries again.
			aborted.Add(1)
			return nil
		}
		if err == nil {
			cleaned.Add(1)
		}
		return err
	})
	background("DeleteRecords", func(rng *rand.Rand) error {
		select {
		case <-produced:
			return nil // let the last compaction passes complete
		default:
		}
		if rng.IntN(50) != 0 {
			return nil
		}
		lso, hw := l.LogStartOffset(), l.HighWatermark()
		if hw <= lso {
			return nil
		}
		_, err := l.DeleteRecordsBefore(lso + rng.Int64N((hw-lso)/4+1))
		return err
	})
	// The readers.
	var reads, nonEmpty int64
	var countMu sync.Mutex
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 4))
			for {
				select {
				case <-stop:
					return
				default:
				}
				lso, hw := l.LogStartOffset(), l.HighWatermark()
				off := lso + rng.Int64N(hw-lso+1)
				got, err := readRegionBack(l, off, 100+rng.IntN(3000), hw)
				if err != nil {
					fail(err)
					return
				}
				countMu.Lock()
				reads++
				if got > 0 {
					nonEmpty++
				}
				countMu.Unlock()
			}
		}()
	}
	// Keep reading until the producer is done and two compaction passes
	// have completed over what it wrote.
	<-produced
	if err := poll.Err(60*time.Second, func() error {
		if cleaned.Load() >= 2 || len(errs) > 0 {
			return nil
		}
		return fmt.Errorf("%d compaction passes completed, %d aborted", cleaned.Load(), aborted.Load())
	}); err != nil {
		t.Error(err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if nonEmpty == 0 {
		t.Fatalf("%d reads, none returned data", reads)
	}
	t.Logf("%d reads (%d with data), %d compaction passes (%d aborted)", reads, nonEmpty, cleaned.Load(), aborted.Load())
}

// readRegionBack does one ReadRegion at offset, bounded by maxOffset, and
// checks the bytes of the region it returns. It returns how many batches
// the region held.
func readRegionBack(l *Log, offset int64, maxBytes int, maxOffset int64) (int, error) {
	res, err := l.ReadRegion(offset, maxBytes, maxOffset, true)
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) && offset < l.LogStartOffset() {
			return 0, nil // retention or DeleteRecords passed it meanwhile
		}
		return 0, fmt.Errorf("ReadRegion(%d, bound %d): %w", offset, maxOffset, err)
	}
	if res.Size == 0 {
		return 0, nil
	}
	buf := make([]byte, res.Size)
	if _, err := res.File.ReadAt(buf, res.Position); err != nil {
		return 0, fmt.Errorf("reading the region of ReadRegion(%d): %d bytes at %d of %s: %w", offset, res.Size, res.Position, res.File.Name(), err)
	}
	prev := int64(-1)
	batches := 0
	for len(buf) > 0 {
		if batches > 0 && len(buf) < record.BatchHeaderSize {
			break // a byte limit cut the last batch's header
		}
		h, err := record.ParseHeader(buf)
		if err != nil {
			return 0, fmt.Errorf("ReadRegion(%d): batch %d: %w", offset, batches, err)
		}
		if h.TotalSize() > len(buf) {
			if batches == 0 {
				return 0, fmt.Errorf("ReadRegion(%d): first batch cut: %d of %d bytes", offset, len(buf), h.TotalSize())
			}
			break // a byte limit cut the last batch
		}
		batch := buf[:h.TotalSize()]
		buf = buf[h.TotalSize():]
		if err := verifyBatchCRC(batch); err != nil {
			return 0, fmt.Errorf("ReadRegion(%d): batch [%d, %d]: %w", offset, h.BaseOffset, h.LastOffset(), err)
		}
		switch {
		case batches == 0 && h.LastOffset() < offset:
			return 0, fmt.Errorf("ReadRegion(%d) starts with batch [%d, %d]", offset, h.BaseOffset, h.LastOffset())
		case h.BaseOffset <= prev:
			return 0, fmt.Errorf("ReadRegion(%d): batch [%d, %d] after offset %d", offset, h.BaseOffset, h.LastOffset(), prev)
		case h.LastOffset() >= maxOffset:
			return 0, fmt.Errorf("ReadRegion(%d): batch [%d, %d] at or past the bound %d", offset, h.BaseOffset, h.LastOffset(), maxOffset)
		}
		_, recs, err := record.DecodeRecords(batch)
		if err != nil {
			return 0, fmt.Errorf("ReadRegion(%d): batch [%d, %d]: %w", offset, h.BaseOffset, h.LastOffset(), err)
		}
		for _, r := range recs {
			o := h.BaseOffset + int64(r.OffsetDelta)
			if string(r.Value) != strconv.FormatInt(o, 10) || string(r.Key) != regionRecordKey(o) {
				return 0, fmt.Errorf("ReadRegion(%d): record at %d is %q=%q: wrong data", offset, o, r.Key, r.Value)
			}
		}
		prev = h.LastOffset()
		batches++
	}
	return batches, nil
}
