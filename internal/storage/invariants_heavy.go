//go:build invariants

package storage

import (
	"fmt"
	"io"

	"github.com/vltava/vltava/internal/record"
)

// heavyInvariants turns on the checks below; `make unit` builds with
// -tags invariants.
const heavyInvariants = true

// assertSegmentsLocked checks the segment list against the offsets: base
// offsets increase, each segment ends at or before the next one's base, the
// active segment ends at the log end offset and the first segment starts at
// or before the log start offset. The append lock is held.
func (l *Log) assertSegmentsLocked(where string) {
	segs := l.segmentList()
	if len(segs) == 0 {
		panic(fmt.Sprintf("storage: %s: %s left no segments", l.dir, where))
	}
	for i, s := range segs {
		if s.nextOffset < s.baseOffset {
			panic(fmt.Sprintf("storage: %s: %s: segment %d ends at %d", l.dir, where, s.baseOffset, s.nextOffset))
		}
		if i+1 < len(segs) && (segs[i+1].baseOffset <= s.baseOffset || s.nextOffset > segs[i+1].baseOffset) {
			panic(fmt.Sprintf("storage: %s: %s: segment %d (ends %d) overlaps the next at %d", l.dir, where, s.baseOffset, s.nextOffset, segs[i+1].baseOffset))
		}
	}
	for _, s := range segs {
		s.assertOffsetIndex(l.dir, where)
	}
	if last := segs[len(segs)-1]; last.size.Load() > 0 && last.nextOffset != l.logEndOffset.Load() {
		panic(fmt.Sprintf("storage: %s: %s: active segment ends at %d, log end offset %d", l.dir, where, last.nextOffset, l.logEndOffset.Load()))
	}
	if segs[0].baseOffset > l.logStartOffset.Load() {
		panic(fmt.Sprintf("storage: %s: %s: first segment starts at %d, past the log start offset %d", l.dir, where, segs[0].baseOffset, l.logStartOffset.Load()))
	}
}

// assertRegion reads back the whole batches of a region returned for a
// read at offset bounded by maxOffset and checks them: the first contains
// or follows offset, offsets increase, and none reaches maxOffset. A
// segment deleted meanwhile (its file closed) is not an error: the region
// is the caller's to send or retry.
func (l *Log) assertRegion(res ReadResult, offset, maxOffset int64) {
	if res.File == nil || res.Size == 0 {
		return
	}
	buf := make([]byte, res.Size)
	if _, err := res.File.ReadAt(buf, res.Position); err != nil && err != io.EOF {
		return
	}
	l.assertBatches(buf, offset, maxOffset)
}

// assertData checks the batches Read returned, as assertRegion does.
func (l *Log) assertData(res ReadResult, offset, maxOffset int64) {
	l.assertBatches(res.Data, offset, maxOffset)
}

// assertBatches checks the batches of a read at offset bounded by
// maxOffset: the first contains or follows offset, offsets increase, none
// reaches maxOffset; a trailing partial batch (a byte limit) is allowed.
func (l *Log) assertBatches(buf []byte, offset, maxOffset int64) {
	prevLast := int64(-1)
	for first := true; len(buf) >= record.BatchHeaderSize; first = false {
		h, err := record.ParseHeader(buf)
		if err != nil {
			panic(fmt.Sprintf("storage: %s: read at offset %d: %v", l.dir, offset, err))
		}
		n := 12 + int(h.Length)
		if n > len(buf) {
			return // a trailing partial batch, as a byte limit may cut
		}
		switch {
		case first && h.LastOffset() < offset:
			panic(fmt.Sprintf("storage: %s: read at offset %d starts with batch [%d, %d]", l.dir, offset, h.BaseOffset, h.LastOffset()))
		case h.BaseOffset <= prevLast:
			panic(fmt.Sprintf("storage: %s: read at offset %d: batch at %d after one ending at %d", l.dir, offset, h.BaseOffset, prevLast))
		case h.LastOffset() >= maxOffset:
			panic(fmt.Sprintf("storage: %s: read at offset %d: batch [%d, %d] reaches the bound %d", l.dir, offset, h.BaseOffset, h.LastOffset(), maxOffset))
		}
		prevLast = h.LastOffset()
		buf = buf[n:]
	}
}

// assertOffsetIndex checks a segment's offset index against its data:
// entries increase in offset and position, and each points inside the
// segment (an entry maps a batch's last offset to where the batch starts).
func (s *segment) assertOffsetIndex(dir, where string) {
	x := s.offsetIndex
	if x == nil {
		return
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	size := s.size.Load()
	for i, e := range x.mu.entries {
		if i > 0 && (e.relOffset <= x.mu.entries[i-1].relOffset || e.position <= x.mu.entries[i-1].position) {
			panic(fmt.Sprintf("storage: %s: %s: offset index of segment %d out of order at entry %d", dir, where, s.baseOffset, i))
		}
		if s.baseOffset+int64(e.relOffset) >= s.nextOffset || int64(e.position) >= size {
			panic(fmt.Sprintf("storage: %s: %s: offset index entry (%d, %d) of segment %d past its data (next offset %d, %d bytes)",
				dir, where, s.baseOffset+int64(e.relOffset), e.position, s.baseOffset, s.nextOffset, size))
		}
	}
}
