package storage

import (
	"cmp"
	"slices"
	"time"
)

// LegacyOffsetsBefore answers ListOffsets v0 (Kafka 3.9's
// UnifiedLog.legacyFetchOffsetsBefore, dropped by Kafka 4 with KIP-896):
// the candidate offsets are each segment's base offset (at least the log
// start offset) dated by the segment file's modification time, plus the
// log end offset dated now when the active segment holds data. LATEST (-1)
// starts from the last candidate, EARLIEST (-2) from the first, any other
// timestamp from the last candidate dated at or before it; up to maxNum
// offsets are returned from there towards the start, largest first.
//
// It reads the segment list without the log's lock and stats the files
// (fstat), which a deleted segment still answers while its file is open.
func (l *Log) LegacyOffsetsBefore(timestamp int64, maxNum int, now time.Time) []int64 {
	segs := l.segmentList()
	if len(segs) == 0 {
		return []int64{} // a closed log
	}
	type candidate struct{ offset, mtime int64 }
	cands := make([]candidate, 0, len(segs)+1)
	start := l.LogStartOffset()
	for _, s := range segs {
		var mtime int64
		if fi, err := s.log.Stat(); err == nil {
			mtime = fi.ModTime().UnixMilli()
		}
		cands = append(cands, candidate{offset: max(s.baseOffset, start), mtime: mtime})
	}
	if segs[len(segs)-1].size.Load() > 0 {
		cands = append(cands, candidate{offset: l.LogEndOffset(), mtime: now.UnixMilli()})
	}
	var from int
	switch timestamp {
	case -1:
		from = len(cands) - 1
	case -2:
		from = 0
	default:
		from = len(cands) - 1
		for from >= 0 && cands[from].mtime > timestamp {
			from--
		}
	}
	n := min(maxNum, from+1)
	if n <= 0 {
		return []int64{}
	}
	out := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, cands[from-i].offset)
	}
	slices.SortFunc(out, func(a, b int64) int { return cmp.Compare(b, a) }) // descending, as Kafka sorts them
	return out
}
