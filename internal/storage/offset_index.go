package storage

import (
	"encoding/binary"
	"fmt"
	"github.com/vltava/vltava/internal/storage/vfs"
	"sort"
	"sync"
)

// offsetIndexEntrySize is the size of one .index entry.
const offsetIndexEntrySize = 8

// offsetIndex is a segment's sparse offset index (Kafka's OffsetIndex).
//
// On disk (<base>.index): 8-byte big-endian entries, relativeOffset uint32
// (offset - segment base) then position uint32 (byte position in the .log
// file), strictly increasing in both. As in Kafka, an entry maps the last
// offset of a batch to the position where that batch starts, and one entry is
// added for every index.interval.bytes of appended data.
//
// Thread-safety: mu guards the in-memory entries; the appender adds entries
// while readers look them up.
type offsetIndex struct {
	baseOffset int64
	maxEntries int
	file       *indexFile

	mu struct {
		sync.RWMutex
		entries []offsetIndexEntry
	}
}

type offsetIndexEntry struct {
	relOffset uint32
	position  uint32
}

// openOffsetIndex opens (creating if missing) the index at path and loads its
// entries. A file that fails the sanity check yields errCorruptIndex together
// with a usable, empty index the caller is expected to rebuild.
func openOffsetIndex(fs vfs.FS, path string, baseOffset int64, maxIndexBytes int32, logSize int64) (*offsetIndex, error) {
	file, data, err := openIndexFile(fs, path, offsetIndexEntrySize)
	if err != nil {
		return nil, err
	}
	idx := &offsetIndex{baseOffset: baseOffset, maxEntries: maxEntries(maxIndexBytes, offsetIndexEntrySize), file: file}
	if err := idx.loadLocked(data, logSize); err != nil {
		idx.mu.entries = nil
		return idx, err
	}
	return idx, nil
}

func maxEntries(maxIndexBytes int32, entrySize int) int {
	if n := int(maxIndexBytes) / entrySize; n > 0 {
		return n
	}
	return 1
}

// errCorruptIndex marks an index file that must be rebuilt from the log.
var errCorruptIndex = fmt.Errorf("corrupt index")

// loadLocked decodes and sanity-checks file contents, like Kafka's
// OffsetIndex.sanityCheck: whole entries, increasing offsets and positions,
// and positions inside the log file.
func (x *offsetIndex) loadLocked(data []byte, logSize int64) error {
	if len(data)%offsetIndexEntrySize != 0 {
		return fmt.Errorf("%w: offset index size %d is not a multiple of %d", errCorruptIndex, len(data), offsetIndexEntrySize)
	}
	n := len(data) / offsetIndexEntrySize
	entries := make([]offsetIndexEntry, n, max(n, 16))
	for i := range n {
		e := offsetIndexEntry{
			relOffset: binary.BigEndian.Uint32(data[i*8:]),
			position:  binary.BigEndian.Uint32(data[i*8+4:]),
		}
		if i > 0 && (e.relOffset <= entries[i-1].relOffset || e.position <= entries[i-1].position) {
			return fmt.Errorf("%w: offset index entries out of order at entry %d", errCorruptIndex, i)
		}
		if int64(e.position) >= logSize {
			return fmt.Errorf("%w: offset index position %d beyond log size %d", errCorruptIndex, e.position, logSize)
		}
		entries[i] = e
	}
	x.mu.entries = entries
	return nil
}

// append adds an entry for offset at position. Entries that do not advance
// the index are ignored (they can only come from a rebuilt segment).
func (x *offsetIndex) append(offset int64, position int64) {
	rel := uint32(offset - x.baseOffset)
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.mu.entries); n > 0 && (x.mu.entries[n-1].relOffset >= rel || x.mu.entries[n-1].position >= uint32(position)) {
		return
	}
	x.mu.entries = append(x.mu.entries, offsetIndexEntry{relOffset: rel, position: uint32(position)})
}

// lookup returns the largest indexed offset <= target and its position, or
// (baseOffset, 0) when no entry qualifies.
func (x *offsetIndex) lookup(target int64) (offset int64, position int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return x.baseOffset+int64(e[i].relOffset) > target })
	if i == 0 {
		return x.baseOffset, 0
	}
	return x.baseOffset + int64(e[i-1].relOffset), int64(e[i-1].position)
}

func (x *offsetIndex) isFull() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.mu.entries) >= x.maxEntries
}

func (x *offsetIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.mu.entries)
}

// lastEntry returns the last entry, or (baseOffset, 0) if empty.
func (x *offsetIndex) lastEntry() (offset int64, position int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n := len(x.mu.entries); n > 0 {
		return x.baseOffset + int64(x.mu.entries[n-1].relOffset), int64(x.mu.entries[n-1].position)
	}
	return x.baseOffset, 0
}

// truncateTo removes every entry for an offset >= offset.
func (x *offsetIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return x.baseOffset+int64(e[i].relOffset) >= offset })
	x.mu.entries = e[:i]
	x.mu.Unlock()
	return x.file.truncate(i)
}

// reset drops all entries, in memory and on disk, before a rebuild.
func (x *offsetIndex) reset() error { return x.truncateTo(x.baseOffset) }

// flush writes entries not yet on disk and optionally fsyncs.
func (x *offsetIndex) flush(sync bool) error {
	first := x.file.persisted()
	x.mu.RLock()
	pending := x.mu.entries[min(first, len(x.mu.entries)):]
	buf := make([]byte, len(pending)*offsetIndexEntrySize)
	for i, e := range pending {
		binary.BigEndian.PutUint32(buf[i*8:], e.relOffset)
		binary.BigEndian.PutUint32(buf[i*8+4:], e.position)
	}
	x.mu.RUnlock()
	return x.file.write(first, buf, sync)
}
