package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/vltava/vltava/internal/storage/vfs"
)

// txnIndexFileSuffix names a segment's aborted-transaction index.
const txnIndexFileSuffix = ".txnindex"

// AbortedTxn is one aborted transaction of a partition, as a
// read_committed Fetch reports it: the producer, the first offset of its
// data and the offset of its abort marker, with the last stable offset the
// partition had once the marker was written (Kafka's AbortedTxn).
type AbortedTxn struct {
	ProducerID       int64 `json:"producer_id"`
	FirstOffset      int64 `json:"first_offset"`
	LastOffset       int64 `json:"last_offset"` // the abort marker's offset
	LastStableOffset int64 `json:"last_stable_offset"`
}

// txnIndex is a segment's aborted-transaction index (Kafka's
// TransactionIndex): one entry per abort marker written to the segment, in
// marker order, so consumers in read_committed mode learn which records to
// drop without reading the log backwards.
//
// On disk, <base>.txnindex is a plain sequence of 34-byte entries
// (big-endian), Kafka's format:
//
//	version int16 (=0) | producerId int64 | firstOffset int64 |
//	lastOffset int64 | lastStableOffset int64
//
// The file exists only once the segment has an aborted transaction. A torn
// last entry (a crash mid-write) is cut at load; a segment that is
// recovered has its index rebuilt from the log by the producer-state replay.
//
// Thread-safety: mutations run under the owning log's append lock; readers
// take the entries from an atomic pointer and never see a partial entry.
type txnIndex struct {
	fs      vfs.FS // the log dir's file system, which reports disk errors
	path    string // renamed with its segment (.deleted, .cleaned, .swap)
	entries atomic.Pointer[[]AbortedTxn]
}

const (
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

// errBadTxnIndex reports an index entry that cannot be trusted.
var errBadTxnIndex = errors.New("invalid transaction index")

// openTxnIndex reads the index at path, if any. Entries past a bad one (an
// unknown version, a torn tail, offsets out of order or at or past
// segmentEnd) are cut from the file; ok is false when that happened, so the
// caller rebuilds the index from the log.
func openTxnIndex(fs vfs.FS, path string, segmentEnd int64) (t *txnIndex, ok bool, err error) {
	t = &txnIndex{fs: fs, path: path}
	var entries []AbortedTxn
	t.entries.Store(&entries)
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return t, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	entries, err = decodeTxnIndex(data, segmentEnd)
	t.entries.Store(&entries)
	if err == nil {
		return t, true, nil
	}
	if terr := f.Truncate(int64(len(entries)) * txnIndexEntrySize); terr != nil {
		return nil, false, terr
	}
	return t, false, nil
}

// decodeTxnIndex decodes the entries of an index file; on a bad entry it
// returns the good ones before it and an error wrapping errBadTxnIndex.
func decodeTxnIndex(data []byte, segmentEnd int64) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for len(data) >= txnIndexEntrySize {
		if v := int16(binary.BigEndian.Uint16(data)); v != txnIndexVersion {
			return out, fmt.Errorf("%w: entry %d has version %d", errBadTxnIndex, len(out), v)
		}
		e := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(data[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(data[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(data[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(data[26:])),
		}
		if e.FirstOffset > e.LastOffset || e.LastOffset >= segmentEnd || (len(out) > 0 && e.LastOffset <= out[len(out)-1].LastOffset) {
			return out, fmt.Errorf("%w: entry %d [%d, %d] is out of order or past the segment end %d", errBadTxnIndex, len(out), e.FirstOffset, e.LastOffset, segmentEnd)
		}
		out = append(out, e)
		data = data[txnIndexEntrySize:]
	}
	if len(data) != 0 {
		return out, fmt.Errorf("%w: %d bytes of a torn entry", errBadTxnIndex, len(data))
	}
	return out, nil
}

func appendTxnIndexEntry(dst []byte, e AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, txnIndexVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(e.LastStableOffset))
}

// encodeTxnIndex is the file content of entries.
func encodeTxnIndex(entries []AbortedTxn) []byte {
	out := make([]byte, 0, len(entries)*txnIndexEntrySize)
	for _, e := range entries {
		out = appendTxnIndexEntry(out, e)
	}
	return out
}

// list is the index's entries; callers must not modify them.
func (t *txnIndex) list() []AbortedTxn { return *t.entries.Load() }

// append adds an entry. An entry whose marker is not past the last one is
// already indexed (a replay over a loaded index) and is skipped. The entry
// is written before it is published, so a reader never sees an entry a
// crash could lose while the marker survives; abort markers are rare, so
// opening the file per entry costs nothing that matters.
func (t *txnIndex) append(e AbortedTxn) error {
	cur := t.list()
	if n := len(cur); n > 0 && cur[n-1].LastOffset >= e.LastOffset {
		return nil
	}
	f, err := t.fs.OpenFile(t.path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(appendTxnIndexEntry(nil, e), int64(len(cur))*txnIndexEntrySize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// In place: readers hold shorter slices of the same array, and truncateTo
	// caps its result so a later append never overwrites what they read.
	next := append(cur, e)
	t.entries.Store(&next)
	return nil
}

// truncateTo drops the entries whose marker is at or after offset (log
// truncation).
func (t *txnIndex) truncateTo(offset int64) error {
	cur := t.list()
	n := len(cur)
	for n > 0 && cur[n-1].LastOffset >= offset {
		n--
	}
	if n == len(cur) {
		return nil
	}
	f, err := t.fs.OpenFile(t.path, os.O_WRONLY, 0)
	if err == nil {
		err = f.Truncate(int64(n) * txnIndexEntrySize)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	next := cur[:n:n]
	t.entries.Store(&next)
	return nil
}

// reset empties the index, before the replay that rebuilds it.
func (t *txnIndex) reset() error { return t.truncateTo(-1) }

// rename moves the file (if any) with its segment's.
func (t *txnIndex) rename(path string) error {
	if err := t.fs.Rename(t.path, path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	t.path = path
	return nil
}

// flush fsyncs the file, if any, with its segment.
func (t *txnIndex) flush() error {
	if len(t.list()) == 0 {
		return nil
	}
	f, err := t.fs.OpenFile(t.path, os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// collectAborted appends the entries of txns that overlap [from, upTo):
// whose marker is at or after from and whose data starts before upTo.
// complete reports an entry whose last stable offset passed upTo: every
// transaction starting below upTo was decided by then, so later segments
// hold none that overlap (Kafka's TxnIndexSearchResult.isComplete).
func (t *txnIndex) collectAborted(dst []AbortedTxn, from, upTo int64) (out []AbortedTxn, complete bool) {
	for _, e := range t.list() {
		if e.LastOffset >= from && e.FirstOffset < upTo {
			dst = append(dst, e)
		}
		if e.LastStableOffset > upTo {
			return dst, true
		}
	}
	return dst, false
}
