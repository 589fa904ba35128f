// Package tiered is tiered storage (KIP-405): rolled segments of topics with
// remote.storage.enable copied to an object store by their partition's
// leader, their metadata kept in __remote_log_metadata, read back for
// fetches below the local log start, and deleted by remote retention.
//
// The pieces: RemoteStorage (Kafka's RemoteStorageManager: copy, fetch and
// delete one segment's objects; the S3 implementation is tiered/s3), the
// metadata store (Kafka's RemoteLogMetadataManager, over the
// __remote_log_metadata topic), and the Manager (Kafka's RemoteLogManager:
// per-partition copy and expiry on the leader, remote reads for the fetch
// path off the network goroutines).
package tiered

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
)

// SegmentState is a remote segment's state, with KIP-405's ids.
type SegmentState int8

// The KIP-405 states and their legal order.
const (
	CopyStarted    SegmentState = 0 // COPY_SEGMENT_STARTED
	CopyFinished   SegmentState = 1 // COPY_SEGMENT_FINISHED
	DeleteStarted  SegmentState = 2 // DELETE_SEGMENT_STARTED
	DeleteFinished SegmentState = 3 // DELETE_SEGMENT_FINISHED
)

func (s SegmentState) String() string {
	switch s {
	case CopyStarted:
		return "COPY_SEGMENT_STARTED"
	case CopyFinished:
		return "COPY_SEGMENT_FINISHED"
	case DeleteStarted:
		return "DELETE_SEGMENT_STARTED"
	case DeleteFinished:
		return "DELETE_SEGMENT_FINISHED"
	}
	return fmt.Sprintf("SegmentState(%d)", int8(s))
}

// CanMoveTo reports whether KIP-405 allows the transition s → next:
// STARTED → FINISHED for copies, any copy state → DELETE_STARTED (an
// unfinished copy is deleted as an orphan), DELETE_STARTED → FINISHED.
func (s SegmentState) CanMoveTo(next SegmentState) bool {
	switch s {
	case CopyStarted:
		return next == CopyFinished || next == DeleteStarted
	case CopyFinished:
		return next == DeleteStarted
	case DeleteStarted:
		return next == DeleteFinished
	}
	return false
}

// EpochEntry is one leader epoch of a segment and the offset it starts at.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// SegmentID names one remote segment: its partition and a random id (a
// segment re-uploaded after a failed copy gets a new id).
type SegmentID struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
	ID        [16]byte
}

func (id SegmentID) String() string {
	return fmt.Sprintf("%s-%d/%s", id.Topic, id.Partition, base64.RawURLEncoding.EncodeToString(id.ID[:]))
}

// SegmentMetadata is Kafka's RemoteLogSegmentMetadata.
type SegmentMetadata struct {
	SegmentID
	StartOffset    int64
	EndOffset      int64 // inclusive
	MaxTimestamp   int64
	BrokerID       int32
	EventTimestamp int64
	LeaderEpochs   []EpochEntry // ascending
	SizeInBytes    int64
	State          SegmentState
	CustomMetadata []byte
}

// SegmentData is what a copy uploads: the files of one rolled segment and
// the slice of the leader-epoch checkpoint it covers.
type SegmentData struct {
	Log              string // the .log file
	OffsetIndex      string
	TimeIndex        string
	TxnIndex         string // "" when the segment has none
	ProducerSnapshot string // "" when none was taken at the segment's end
	LeaderEpochs     []byte // the leader-epoch-checkpoint file's form
}

// IndexType names an index fetched with a segment (Kafka's IndexType).
type IndexType int8

// The index types.
const (
	OffsetIndex IndexType = iota
	TimeIndex
	ProducerSnapshotIndex
	TransactionIndex
	LeaderEpochIndex
)

func (t IndexType) suffix() string {
	switch t {
	case OffsetIndex:
		return "index"
	case TimeIndex:
		return "timeindex"
	case ProducerSnapshotIndex:
		return "snapshot"
	case TransactionIndex:
		return "txnindex"
	case LeaderEpochIndex:
		return "leader-epoch-checkpoint"
	}
	return fmt.Sprintf("index%d", t)
}

// Suffix is the object name suffix of the index type.
func (t IndexType) Suffix() string { return t.suffix() }

// ErrNotFound is returned when a segment's objects (or the asked index) are
// not in the store.
var ErrNotFound = fmt.Errorf("remote object not found")

// ErrCorrupt is returned when an object read back does not match the
// checksum recorded at upload, after a refetch.
var ErrCorrupt = fmt.Errorf("remote object corrupt")

// RemoteStorage is Kafka's RemoteStorageManager: the object store side.
// Every method may be slow (network); none is called under a partition or
// log lock.
type RemoteStorage interface {
	// Copy uploads one segment's data; the segment is complete in the store
	// only once Copy returns nil. It returns custom metadata to keep with the
	// segment's metadata (may be nil).
	Copy(ctx context.Context, md SegmentMetadata, data SegmentData) ([]byte, error)
	// FetchSegment reads the segment's log bytes from start to end
	// (inclusive), checked against the upload's checksums.
	FetchSegment(ctx context.Context, md SegmentMetadata, start, end int64) (io.ReadCloser, error)
	// FetchIndex reads one of the segment's indexes; ErrNotFound for an
	// optional index the segment has none of.
	FetchIndex(ctx context.Context, md SegmentMetadata, t IndexType) (io.ReadCloser, error)
	// Delete removes every object of the segment; deleting what is not
	// there is not an error.
	Delete(ctx context.Context, md SegmentMetadata) error
	// Close releases the store's resources.
	Close() error
}
