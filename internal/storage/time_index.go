package storage

import (
	"encoding/binary"
	"fmt"
	"github.com/vltava/vltava/internal/storage/vfs"
	"sort"
	"sync"
)

// timeIndexEntrySize is the size of one .timeindex entry.
const timeIndexEntrySize = 12

// timeIndex is a segment's sparse time index (Kafka's TimeIndex, KIP-33).
//
// On disk (<base>.timeindex): 12-byte big-endian entries, timestamp int64
// then relativeOffset uint32. Timestamps strictly increase: an entry is only
// added when the segment's max timestamp so far grows, and it maps that
// timestamp to the (last) offset of the batch that carried it. When a segment
// is rolled a final entry records its max timestamp, so the last entry of an
// inactive segment is the segment's largest timestamp.
//
// Thread-safety: mu guards the in-memory entries.
type timeIndex struct {
	baseOffset int64
	maxEntries int
	file       *indexFile

	mu struct {
		sync.RWMutex
		entries []timeIndexEntry
	}
}

type timeIndexEntry struct {
	timestamp int64
	relOffset uint32
}

func openTimeIndex(fs vfs.FS, path string, baseOffset int64, maxIndexBytes int32) (*timeIndex, error) {
	file, data, err := openIndexFile(fs, path, timeIndexEntrySize)
	if err != nil {
		return nil, err
	}
	idx := &timeIndex{baseOffset: baseOffset, maxEntries: maxEntries(maxIndexBytes, timeIndexEntrySize), file: file}
	if err := idx.loadLocked(data); err != nil {
		idx.mu.entries = nil
		return idx, err
	}
	return idx, nil
}

func (x *timeIndex) loadLocked(data []byte) error {
	if len(data)%timeIndexEntrySize != 0 {
		return fmt.Errorf("%w: time index size %d is not a multiple of %d", errCorruptIndex, len(data), timeIndexEntrySize)
	}
	n := len(data) / timeIndexEntrySize
	entries := make([]timeIndexEntry, n, max(n, 16))
	for i := range n {
		e := timeIndexEntry{
			timestamp: int64(binary.BigEndian.Uint64(data[i*12:])),
			relOffset: binary.BigEndian.Uint32(data[i*12+8:]),
		}
		if i > 0 && (e.timestamp <= entries[i-1].timestamp || e.relOffset < entries[i-1].relOffset) {
			return fmt.Errorf("%w: time index entries out of order at entry %d", errCorruptIndex, i)
		}
		entries[i] = e
	}
	x.mu.entries = entries
	return nil
}

// maybeAppend adds (timestamp, offset) if timestamp is larger than the last
// entry's, as Kafka's TimeIndex.maybeAppend does.
func (x *timeIndex) maybeAppend(timestamp, offset int64) {
	rel := uint32(offset - x.baseOffset)
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.mu.entries); n > 0 && (x.mu.entries[n-1].timestamp >= timestamp || x.mu.entries[n-1].relOffset > rel) {
		return
	}
	x.mu.entries = append(x.mu.entries, timeIndexEntry{timestamp: timestamp, relOffset: rel})
}

// lookup returns the entry with the largest timestamp <= ts, or
// (-1, baseOffset) if there is none: scanning must then start at the segment
// start.
func (x *timeIndex) lookup(ts int64) (timestamp int64, offset int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].timestamp > ts })
	if i == 0 {
		return -1, x.baseOffset
	}
	return e[i-1].timestamp, x.baseOffset + int64(e[i-1].relOffset)
}

// lastEntry returns the newest entry, or (-1, baseOffset) if empty.
func (x *timeIndex) lastEntry() (timestamp int64, offset int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n := len(x.mu.entries); n > 0 {
		return x.mu.entries[n-1].timestamp, x.baseOffset + int64(x.mu.entries[n-1].relOffset)
	}
	return -1, x.baseOffset
}

func (x *timeIndex) isFull() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.mu.entries) >= x.maxEntries
}

func (x *timeIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.mu.entries)
}

// truncateTo removes every entry for an offset >= offset.
func (x *timeIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return x.baseOffset+int64(e[i].relOffset) >= offset })
	x.mu.entries = e[:i]
	x.mu.Unlock()
	return x.file.truncate(i)
}

func (x *timeIndex) reset() error { return x.truncateTo(x.baseOffset) }

func (x *timeIndex) flush(sync bool) error {
	first := x.file.persisted()
	x.mu.RLock()
	pending := x.mu.entries[min(first, len(x.mu.entries)):]
	buf := make([]byte, len(pending)*timeIndexEntrySize)
	for i, e := range pending {
		binary.BigEndian.PutUint64(buf[i*12:], uint64(e.timestamp))
		binary.BigEndian.PutUint32(buf[i*12+8:], e.relOffset)
	}
	x.mu.RUnlock()
	return x.file.write(first, buf, sync)
}
