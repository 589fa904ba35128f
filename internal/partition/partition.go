// Package partition holds the state of the partition replicas hosted by this
// broker: each Partition wraps its storage log with the leader's view (leader
// epoch, high watermark, topic config) and wakes fetches parked on it when
// new data becomes readable. Manager keeps the set of partitions in step with
// the metadata image.
package partition

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// Partition is one replica of a topic partition hosted here.
//
// Appends are serialized by the log; validation happens before, outside any
// lock. The high watermark lives in the log (it is checkpointed with it); on
// the leader it is the smallest log end offset in the ISR (replica.go), on a
// follower the leader's, capped by its own log end offset.
type Partition struct {
	Topic   string
	Index   int32
	TopicID [16]byte

	log *storage.Log
	env *env

	// removed is set when the Manager drops the partition, so parked
	// produces stop waiting for it.
	removed atomic.Bool

	// settings is the partition's current view of its config and role,
	// replaced whole on change so the produce path reads it without a lock.
	settings atomic.Pointer[settings]

	// role is Kafka's leaderIsrUpdateLock: appends (as leader or as
	// follower) and follower truncations hold it shared from their role
	// check to the end of the log write; a role change (applySettings)
	// holds it exclusively. It closes the window in which an append
	// checked "leader" while a change made this replica a follower, and
	// wrote a batch stamped with a stale epoch into a log a fetcher is
	// about to truncate.
	//
	// Neither side waits on a disk: the exclusive side only updates
	// memory, and the shared side holds it for one log write (into the
	// page cache) — the flush.messages fsync and the validation of the
	// batch (CRC, decompression) run outside it. A role change thus waits
	// at most for the appends in progress, and the appends arriving
	// meanwhile wait behind it (a Go RWMutex lets a waiting writer in
	// first), so a stream of appends cannot starve it.
	role sync.RWMutex

	mu struct {
		sync.Mutex
		// waiters are parked fetches and produces to signal when the
		// log end offset, the high watermark or the role changes.
		waiters map[*Waiter]struct{}
		// leader is the replication view while this node leads.
		leader leaderState
	}
}

// settings is what a Partition needs from metadata and config.
type settings struct {
	topic          config.Topic
	validate       record.ValidateOptions
	leaderEpoch    int32
	partitionEpoch int32
	leader         int32
	replicas       []int32
	isr            []int32
}

func newPartition(topic string, index int32, topicID [16]byte, log *storage.Log, e *env) *Partition {
	p := &Partition{Topic: topic, Index: index, TopicID: topicID, log: log, env: e}
	p.mu.waiters = make(map[*Waiter]struct{})
	return p
}

// Log returns the partition's storage log.
func (p *Partition) Log() *storage.Log { return p.log }

// LeaderEpoch is the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 { return p.settings.Load().leaderEpoch }

// Leader is the broker id of the partition's leader.
func (p *Partition) Leader() int32 { return p.settings.Load().leader }

// Config is the partition's effective topic config.
func (p *Partition) Config() config.Topic { return p.settings.Load().topic }

// HighWatermark is the offset below which records are committed and
// visible to consumers.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// LastStableOffset is the offset below which every transaction is decided
// (storage.Log.LastStableOffset): read_committed consumers read up to it.
// It moves only with an append or the high watermark, whose changes wake
// the parked fetches, so it needs no wake-up of its own.
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset() }

// LogStartOffset is the first offset of the log.
func (p *Partition) LogStartOffset() int64 { return p.log.LogStartOffset() }

// LogEndOffset is the offset the next record will get.
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }

// ErrNotEnoughReplicas is returned for acks=all when the ISR is smaller than
// min.insync.replicas.
var ErrNotEnoughReplicas = kerr.NotEnoughReplicas

// Append validates one produce payload (a single v2 record batch), appends
// it and returns where it landed. Only the leader appends
// (NOT_LEADER_OR_FOLLOWER otherwise). acks=-1 requires the ISR to satisfy
// min.insync.replicas before anything is written, as Kafka checks it; the
// caller then waits for replication with AwaitReplication.
// produceVersion is the Produce request's version (zstd needs v7+).
func (p *Partition) Append(data []byte, acks int16, produceVersion int16) (storage.AppendInfo, error) {
	return p.AppendTxn(data, acks, produceVersion, storage.TxnAppend{})
}

// AppendTxn is Append with the batch's transactional context: the guard of
// its KIP-890 verification (what StartTransactionVerification returned
// before the check), or that a coordinator of this broker wrote it.
func (p *Partition) AppendTxn(data []byte, acks int16, produceVersion int16, txn storage.TxnAppend) (storage.AppendInfo, error) {
	return p.AppendChecked(data, acks, produceVersion, txn, nil)
}

// AppendChecked is AppendTxn that also asks check about every record's key
// and value while the batch is validated (record.ValidateOptions.CheckRecord),
// before any lock is taken; nil checks nothing.
func (p *Partition) AppendChecked(data []byte, acks int16, produceVersion int16, txn storage.TxnAppend, check func(key, value []byte) string) (storage.AppendInfo, error) {
	s := p.settings.Load()
	if s.leader != p.env.nodeID {
		return storage.AppendInfo{}, fmt.Errorf("%w: broker %d does not lead %s-%d (leader %d)", kerr.NotLeaderForPartition, p.env.nodeID, p.Topic, p.Index, s.leader)
	}
	if acks == -1 && int32(len(s.isr)) < s.topic.MinInsyncReplicas {
		return storage.AppendInfo{}, fmt.Errorf("%w: the in-sync replicas of %s-%d are %v, fewer than min.insync.replicas=%d",
			kerr.NotEnoughReplicas, p.Topic, p.Index, s.isr, s.topic.MinInsyncReplicas)
	}
	opts := s.validate
	txn.KeepBaseOffset = opts.KeepBaseOffset // vltava.preserve.offsets
	opts.Now = time.Now().UnixMilli()
	opts.ProduceVersion = produceVersion
	opts.CheckRecord = check
	v, err := record.ValidateProduce(data, opts)
	if err != nil {
		return storage.AppendInfo{}, err
	}
	logAppendTime := int64(-1)
	if s.topic.MessageTimestampType == "LogAppendTime" {
		logAppendTime = opts.Now
		record.SetLogAppendTime(v.Batch, logAppendTime)
	}
	// The role is checked again under the role lock, and the epoch
	// stamped is the one that holds while the batch is written.
	p.role.RLock()
	cur := p.settings.Load()
	if cur.leader != p.env.nodeID {
		p.role.RUnlock()
		return storage.AppendInfo{}, fmt.Errorf("%w: broker %d no longer leads %s-%d (leader %d)", kerr.NotLeaderForPartition, p.env.nodeID, p.Topic, p.Index, cur.leader)
	}
	info, needsFlush, err := p.log.AppendTxnUnflushed(v.Batch, cur.leaderEpoch, txn)
	p.role.RUnlock()
	if err != nil {
		return info, err
	}
	if needsFlush {
		if err := p.log.Flush(); err != nil {
			return info, fmt.Errorf("%w: flushing %s-%d: %v", kerr.KafkaStorageError, p.Topic, p.Index, err)
		}
	}
	if !info.Duplicate {
		info.LogAppendTime = logAppendTime
	}
	p.advanceHighWatermark()
	return info, nil
}

// StartTransactionVerification begins the KIP-890 check of a producer's
// transactional append here (storage.Log.StartTransactionVerification).
func (p *Partition) StartTransactionVerification(producerID int64, producerEpoch int16, epochBump bool) (storage.VerificationGuard, bool) {
	return p.log.StartTransactionVerification(producerID, producerEpoch, epochBump)
}

// AppendMarker writes a transaction marker (WriteTxnMarkers) as the
// leader: a control batch ending producerID's transaction, checked against
// its producer and coordinator epochs. The caller waits for replication
// with AwaitReplication, as for an acks=all produce.
//
// bumpsEpoch: the marker is transaction.version 2's (KIP-890 part 2), whose
// epoch must be above the transaction's.
func (p *Partition) AppendMarker(producerID int64, producerEpoch int16, marker record.Marker, bumpsEpoch bool) (storage.AppendInfo, error) {
	batch, err := record.BuildMarkerBatch(producerID, producerEpoch, marker, time.Now().UnixMilli())
	if err != nil {
		return storage.AppendInfo{}, err
	}
	p.role.RLock()
	cur := p.settings.Load()
	if cur.leader != p.env.nodeID {
		p.role.RUnlock()
		return storage.AppendInfo{}, fmt.Errorf("%w: broker %d does not lead %s-%d (leader %d)", kerr.NotLeaderForPartition, p.env.nodeID, p.Topic, p.Index, cur.leader)
	}
	info, needsFlush, err := p.log.AppendTxnUnflushed(batch, cur.leaderEpoch, storage.TxnAppend{MarkerBumpsEpoch: bumpsEpoch})
	p.role.RUnlock()
	if err != nil {
		return info, err
	}
	if needsFlush {
		if err := p.log.Flush(); err != nil {
			return info, fmt.Errorf("%w: flushing %s-%d: %v", kerr.KafkaStorageError, p.Topic, p.Index, err)
		}
	}
	p.advanceHighWatermark()
	return info, nil
}

// Read returns committed batches from offset on.
func (p *Partition) Read(offset int64, maxBytes int, minOneBatch bool) (storage.ReadResult, error) {
	return p.log.Read(offset, maxBytes, p.log.HighWatermark(), minOneBatch)
}

// ReadRegion is Read without copying: where the committed batches from
// offset lie in a segment file, for sending with sendfile.
func (p *Partition) ReadRegion(offset int64, maxBytes int, minOneBatch bool) (storage.ReadResult, error) {
	return p.log.ReadRegion(offset, maxBytes, p.log.HighWatermark(), minOneBatch)
}

// DeleteRecordsBefore moves the log start offset to offset (-1 = the high
// watermark), as the DeleteRecords API does.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	hw := p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("%w: offset %d is outside [0, high watermark %d]", kerr.OffsetOutOfRange, offset, hw)
	}
	start, err := p.log.DeleteRecordsBefore(offset)
	if err != nil {
		return 0, err
	}
	p.notify()
	return start, nil
}

// Waiter is a parked fetch. Signal is non-blocking: a Waiter has room for
// one pending wake-up, which is all a fetch needs to recheck its
// partitions.
type Waiter struct {
	C chan struct{}
}

// NewWaiter returns a Waiter ready to Watch partitions.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

func (w *Waiter) signal() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// Watch registers w to be signalled when the partition's readable data
// changes. Callers re-check the partition after Watch, so a change between
// their read and Watch is never missed.
func (p *Partition) Watch(w *Waiter) {
	p.mu.Lock()
	p.mu.waiters[w] = struct{}{}
	p.mu.Unlock()
}

// Unwatch removes w.
func (p *Partition) Unwatch(w *Waiter) {
	p.mu.Lock()
	delete(p.mu.waiters, w)
	p.mu.Unlock()
}

func (p *Partition) notify() {
	p.mu.Lock()
	for w := range p.mu.waiters {
		w.signal()
	}
	p.mu.Unlock()
}
