package storage

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// epochEntry says leader epoch Epoch began at StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// leaderEpochCache is Kafka's LeaderEpochFileCache: the start offset of every
// leader epoch seen in the log, used to answer OffsetForLeaderEpoch (KIP-101,
// KIP-279) and to stamp ListOffsets answers.
//
// On disk: leader-epoch-checkpoint in the partition dir, Kafka's checkpoint
// text format "0\n<count>\n<epoch> <startOffset>\n...". A new epoch (assign,
// on the append path) only marks the cache dirty: the file is rewritten when
// the log is flushed, before the recovery point moves past the new entry, so
// a crash loses only entries above the recovery point, which recovery
// rebuilds from the batches' leader epochs. Truncations (from the start on
// retention and DeleteRecords, from the end on follower truncation) also
// change only memory; the log writes the file once its append lock is
// released (Kafka's truncateFromStartAsyncFlush, KAFKA-15046). Writing and
// fsyncing the file under the append lock cost a broker with many
// partitions most of its produce CPU on first writes, and made appends wait
// on the disk behind retention.
//
// Thread-safety: mu guards entries and is never held across I/O: flush
// copies the entries under it and writes them holding only fileMu, so the
// append path (latestEpoch, assign under the log's append lock) never waits
// on the disk. Lock order: fileMu, then mu. All methods are safe for
// concurrent use.
type leaderEpochCache struct {
	path string

	fileMu sync.Mutex // serializes writes of the checkpoint file

	mu struct {
		sync.RWMutex
		entries []epochEntry // increasing in both epoch and start offset
		dirty   bool         // entries changed since the file was written
		version uint64       // bumped by every change, so flush knows what it wrote
	}
}

// loadLeaderEpochCache reads the checkpoint. Each entry goes through
// assign, as Kafka's LeaderEpochFileCache loads its file: an entry that
// would break the order (a damaged or hand-edited file) drops the ones it
// conflicts with instead of loading a cache that breaks its invariant; the
// file is then rewritten at the next flush.
func loadLeaderEpochCache(path string) (*leaderEpochCache, error) {
	c := &leaderEpochCache{path: path}
	lines, err := readCheckpointLines(path)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed line %q", path, l)
		}
		if err := c.assign(int32(e), o); err != nil {
			return nil, err
		}
	}
	c.mu.dirty = len(c.mu.entries) != len(lines)
	return c, nil
}

// changedLocked marks the entries changed since the file was written; mu
// is held for writing.
func (c *leaderEpochCache) changedLocked() {
	c.mu.dirty = true
	c.mu.version++
}

// assign records that epoch starts at startOffset. As in Kafka, nothing
// changes if epoch is already the latest with an earlier or equal start, and
// entries that would break monotonicity (same or larger epoch, or same or
// larger start offset) are dropped first.
func (c *leaderEpochCache) assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.mu.entries); n > 0 {
		last := c.mu.entries[n-1]
		if last.Epoch == epoch && last.StartOffset <= startOffset {
			return nil
		}
	}
	kept := c.mu.entries[:0]
	for _, e := range c.mu.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			kept = append(kept, e)
		}
	}
	c.mu.entries = append(kept, epochEntry{Epoch: epoch, StartOffset: startOffset})
	c.changedLocked()
	c.assertOrderedLocked()
	return nil
}

// flush writes (and fsyncs) the file if the cache changed since the last
// write. The entries are copied under mu and written without it.
func (c *leaderEpochCache) flush() error {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	c.mu.RLock()
	if !c.mu.dirty {
		c.mu.RUnlock()
		return nil
	}
	lines := make([]string, len(c.mu.entries))
	for i, e := range c.mu.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	version := c.mu.version
	c.mu.RUnlock()
	if err := writeCheckpointLines(c.path, lines); err != nil {
		return err
	}
	c.mu.Lock()
	if c.mu.version == version {
		c.mu.dirty = false
	}
	c.mu.Unlock()
	return nil
}

// latestEpoch returns the newest epoch, or -1.
func (c *leaderEpochCache) latestEpoch() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.mu.entries); n > 0 {
		return c.mu.entries[n-1].Epoch
	}
	return -1
}

// endOffsetFor implements Kafka's LeaderEpochFileCache.endOffsetFor: the
// largest epoch <= requested together with the start offset of the first
// epoch after the requested one (the log end offset if requested is the
// latest), or (-1, -1) when requested is unknown or newer than every epoch.
func (c *leaderEpochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.mu.entries
	if requested < 0 || len(e) == 0 {
		return -1, -1
	}
	if e[len(e)-1].Epoch == requested {
		return requested, logEndOffset
	}
	higher := sort.Search(len(e), func(i int) bool { return e[i].Epoch > requested })
	if higher == len(e) {
		return -1, -1
	}
	if higher == 0 {
		// Older than anything we know: Kafka answers with the requested
		// epoch and the first known epoch's start.
		return requested, e[0].StartOffset
	}
	return e[higher-1].Epoch, e[higher].StartOffset
}

// epochForOffset returns the epoch that was current at offset, or -1.
func (c *leaderEpochCache) epochForOffset(offset int64) int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].StartOffset > offset })
	if i == 0 {
		return -1
	}
	return e[i-1].Epoch
}

// truncateFromEnd drops epochs starting at or after endOffset (log
// truncation). Only memory changes: the caller writes the file with flush
// once the log's append lock is released (or the next flush does). The
// entries dropped start at or past the log end and describe no data, so a
// crash before the flush only leaves them for the next load to drop again;
// rewriting and fsyncing the checkpoint of every partition that was led at
// shutdown (its epoch starts at its log end) was half the start-up time of
// a broker with 10,000 partitions.
func (c *leaderEpochCache) truncateFromEnd(endOffset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropFromEndLocked(endOffset) {
		c.changedLocked()
	}
}

// dropFromEndLocked removes the entries starting at or after endOffset and
// reports whether there were any.
func (c *leaderEpochCache) dropFromEndLocked(endOffset int64) bool {
	n := len(c.mu.entries)
	for n > 0 && c.mu.entries[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(c.mu.entries) {
		return false
	}
	c.mu.entries = c.mu.entries[:n]
	return true
}

// truncateFromStart forgets epochs wholly before startOffset; the epoch that
// covers startOffset is kept with its start moved up to startOffset, as Kafka
// does when the log start offset advances. Only memory changes; the file
// is written by flush. A crash before that leaves entries below the log
// start offset on disk, which the next load drops again.
func (c *leaderEpochCache) truncateFromStart(startOffset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].StartOffset > startOffset })
	if i == 0 || (i == 1 && e[0].StartOffset == startOffset) {
		return
	}
	covering := epochEntry{Epoch: e[i-1].Epoch, StartOffset: startOffset}
	rest := append([]epochEntry{covering}, e[i:]...)
	c.mu.entries = rest
	c.changedLocked()
}

// snapshot returns a copy of the entries.
func (c *leaderEpochCache) snapshot() []epochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]epochEntry(nil), c.mu.entries...)
}

// clear removes every entry (the log was emptied). Only memory changes;
// the file is written by flush.
func (c *leaderEpochCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.entries = nil
	c.changedLocked()
}

// assertOrderedLocked panics unless the entries increase in both epoch and
// start offset, the cache's invariant; assign keeps it by construction.
func (c *leaderEpochCache) assertOrderedLocked() {
	e := c.mu.entries
	for i := 1; i < len(e); i++ {
		if e[i].Epoch <= e[i-1].Epoch || e[i].StartOffset <= e[i-1].StartOffset {
			panic(fmt.Sprintf("storage: leader epoch cache %s out of order at %d: %+v after %+v", c.path, i, e[i], e[i-1]))
		}
	}
}
