package storage

// Read-only views of a partition directory's files for offline inspection
// (vltava dump-log, the equivalent of kafka-dump-log.sh). They decode with
// the same code the log uses to load, so the tool and the broker never
// disagree on a format, and they never write or create a file.

import (
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/vltava/vltava/internal/storage/vfs"
)

// File kinds as ParseLogFileName reports them.
const (
	LogFileSuffix       = logFileSuffix
	IndexFileSuffix     = indexFileSuffix
	TimeIndexFileSuffix = timeIndexFileSuffix
	SnapshotFileSuffix  = snapshotFileSuffix
	TxnIndexFileSuffix  = txnIndexFileSuffix
)

// ParseLogFileName splits "<20-digit offset><suffix>" for the .log, .index,
// .timeindex, .txnindex and .snapshot files of a partition directory.
func ParseLogFileName(path string) (offset int64, suffix string, ok bool) {
	name := filepath.Base(path)
	for _, s := range []string{logFileSuffix, indexFileSuffix, timeIndexFileSuffix, txnIndexFileSuffix, snapshotFileSuffix} {
		if o, ok := parseOffsetFileName(name, s); ok {
			return o, s, true
		}
	}
	return 0, "", false
}

// OffsetIndexEntry maps the last offset of a batch to the byte position
// where the batch starts in the segment's .log.
type OffsetIndexEntry struct {
	Offset   int64 `json:"offset"`
	Position int64 `json:"position"`
}

// ReadOffsetIndex decodes an .index file of the segment starting at
// baseOffset. It applies the load-time sanity check (whole entries,
// increasing offsets and positions, positions below logSize); logSize < 0
// skips the position bound. A failed check returns the error and no
// entries.
func ReadOffsetIndex(path string, baseOffset, logSize int64) ([]OffsetIndexEntry, error) {
	if logSize < 0 {
		logSize = math.MaxInt64
	}
	idx, err := openOffsetIndex(vfs.OS, path, baseOffset, math.MaxInt32, logSize)
	if err != nil {
		return nil, err
	}
	out := make([]OffsetIndexEntry, len(idx.mu.entries))
	for i, e := range idx.mu.entries {
		out[i] = OffsetIndexEntry{Offset: baseOffset + int64(e.relOffset), Position: int64(e.position)}
	}
	return out, nil
}

// TimeIndexEntry says the records up to Offset have timestamps up to
// Timestamp.
type TimeIndexEntry struct {
	Timestamp int64 `json:"timestamp"`
	Offset    int64 `json:"offset"`
}

// ReadTimeIndex decodes a .timeindex file with its load-time sanity check
// (whole entries, increasing timestamps, non-decreasing offsets).
func ReadTimeIndex(path string, baseOffset int64) ([]TimeIndexEntry, error) {
	idx, err := openTimeIndex(vfs.OS, path, baseOffset, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	out := make([]TimeIndexEntry, len(idx.mu.entries))
	for i, e := range idx.mu.entries {
		out[i] = TimeIndexEntry{Timestamp: e.timestamp, Offset: baseOffset + int64(e.relOffset)}
	}
	return out, nil
}

// ProducerSnapshotEntry is one producer's state in a .snapshot file.
type ProducerSnapshotEntry struct {
	ProducerID            int64                   `json:"producer_id"`
	Epoch                 int16                   `json:"producer_epoch"`
	CoordinatorEpoch      int32                   `json:"coordinator_epoch"`
	CurrentTxnFirstOffset int64                   `json:"current_txn_first_offset"` // -1: no open transaction
	LastTimestamp         int64                   `json:"last_timestamp"`
	Batches               []ProducerSnapshotBatch `json:"batches"` // oldest first
}

// ProducerSnapshotBatch is one of the recent batches kept per producer for
// duplicate detection.
type ProducerSnapshotBatch struct {
	FirstSequence int32 `json:"first_sequence"`
	LastSequence  int32 `json:"last_sequence"`
	FirstOffset   int64 `json:"first_offset"`
	LastOffset    int64 `json:"last_offset"`
	MaxTimestamp  int64 `json:"max_timestamp"`
}

// ReadProducerSnapshot decodes a producer state .snapshot file, checking
// its version and checksum. Entries are ordered by producer id.
func ReadProducerSnapshot(path string) ([]ProducerSnapshotEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	producers, err := decodeSnapshot(data)
	if err != nil {
		return nil, err
	}
	out := make([]ProducerSnapshotEntry, 0, len(producers))
	for _, e := range producers {
		pe := ProducerSnapshotEntry{ProducerID: e.producerID, Epoch: e.epoch, CoordinatorEpoch: e.coordinatorEpoch,
			CurrentTxnFirstOffset: e.currentTxnFirstOffset, LastTimestamp: e.lastTimestamp}
		for _, b := range e.batches[:e.numBatches] {
			pe.Batches = append(pe.Batches, ProducerSnapshotBatch{FirstSequence: b.firstSeq, LastSequence: b.lastSeq,
				FirstOffset: b.firstOffset, LastOffset: b.lastOffset, MaxTimestamp: b.maxTimestamp})
		}
		out = append(out, pe)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out, nil
}

// LeaderEpochEntry says leader epoch Epoch began at StartOffset.
type LeaderEpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// ReadLeaderEpochCheckpoint decodes a leader-epoch-checkpoint file.
func ReadLeaderEpochCheckpoint(path string) ([]LeaderEpochEntry, error) {
	c, err := loadLeaderEpochCache(path)
	if err != nil {
		return nil, err
	}
	var out []LeaderEpochEntry
	for _, e := range c.snapshot() {
		out = append(out, LeaderEpochEntry(e))
	}
	return out, nil
}

// ReadTxnIndex decodes a .txnindex file with its load-time check (whole
// 34-byte entries of version 0, markers in increasing order). On a bad
// entry it returns the good ones before it and the error.
func ReadTxnIndex(path string) ([]AbortedTxn, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeTxnIndex(data, math.MaxInt64)
}
