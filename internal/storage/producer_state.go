package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/record"
)

// maxBatchesPerProducer is how many recent batches are remembered per
// producer for duplicate detection; Kafka uses 5, matching the producer's
// max.in.flight.requests.per.connection limit for idempotence.
const maxBatchesPerProducer = 5

// batchMetadata describes one batch a producer wrote.
type batchMetadata struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTimestamp            int64
}

// producerEntry is the state kept for one producer id (Kafka's
// ProducerStateEntry).
type producerEntry struct {
	producerID            int64
	epoch                 int16
	coordinatorEpoch      int32
	currentTxnFirstOffset int64 // -1 if no transaction is open
	lastTimestamp         int64
	batches               [maxBatchesPerProducer]batchMetadata
	numBatches            int
}

func (e *producerEntry) lastBatch() (batchMetadata, bool) {
	if e.numBatches == 0 {
		return batchMetadata{}, false
	}
	return e.batches[e.numBatches-1], true
}

func (e *producerEntry) addBatch(b batchMetadata) {
	if e.numBatches == maxBatchesPerProducer {
		copy(e.batches[:], e.batches[1:])
		e.numBatches--
	}
	e.batches[e.numBatches] = b
	e.numBatches++
	e.lastTimestamp = b.maxTimestamp
}

// findDuplicate returns the remembered batch with the same epoch and
// sequence range, like Kafka's ProducerStateEntry.findDuplicateBatch.
func (e *producerEntry) findDuplicate(h *record.Header) (batchMetadata, bool) {
	if h.ProducerEpoch != e.epoch {
		return batchMetadata{}, false
	}
	first, last := h.BaseSequence, h.LastSequence()
	for i := 0; i < e.numBatches; i++ {
		if b := e.batches[i]; b.firstSeq == first && b.lastSeq == last {
			return b, true
		}
	}
	return batchMetadata{}, false
}

// producerStateManager tracks idempotent/transactional producers of one
// partition (Kafka's ProducerStateManager).
//
// Snapshots are files "<20-digit offset>.snapshot" in the partition dir; the
// offset is the log end offset the state reflects. Format (big-endian):
//
//	version int16 (=1) | crc uint32 (CRC-32C of all bytes after it) |
//	count int32 | count × producer:
//	  producerId int64 | epoch int16 | coordinatorEpoch int32 |
//	  currentTxnFirstOffset int64 | lastTimestamp int64 | numBatches int8 |
//	  numBatches × (firstSeq int32 | lastSeq int32 | firstOffset int64 |
//	                lastOffset int64 | maxTimestamp int64)
//
// Unlike Kafka (which keeps only the last batch per producer in snapshots),
// all remembered batches are stored so duplicate detection is as good after
// a restart as before it.
//
// Thread-safety: none; the owning Log's append lock guards every call.
type producerStateManager struct {
	dir          string
	expirationMs int64
	producers    map[int64]*producerEntry

	// ongoing maps each producer with an open transaction to the first
	// offset of its data (Kafka's ongoingTxns); derived from producers.
	ongoing map[int64]int64

	// verified holds the verification guard of each producer whose next
	// transaction was checked with its coordinator (KIP-890 part 1,
	// Kafka's VerificationStateEntry); a marker clears it. Not persisted:
	// a restarted or new leader verifies again.
	verified  map[int64]verification
	lastGuard VerificationGuard
}

// verification is a guard handed out and when (Unix ms), so one whose
// append never came is dropped with the idle producers.
type verification struct {
	guard VerificationGuard
	atMs  int64
	// epoch is the producer epoch verified, and epochBump whether the
	// producer is at transaction.version 2 (KIP-890 part 2), whose markers
	// carry the epoch its next transaction uses.
	epoch     int16
	epochBump bool
}

// VerificationGuard ties a transactional append to the coordinator check
// made for it (KIP-890): a batch that starts a transaction is appended only
// with the guard handed out before the check, so a marker written meanwhile
// (which ends the transaction and drops the guard) makes it fail with
// INVALID_TXN_STATE instead of opening a transaction the coordinator has
// already closed. NoVerification skips the check.
type VerificationGuard uint64

// TxnAppend says how a leader append relates to transactions, and where
// its offsets come from.
type TxnAppend struct {
	// Guard is the KIP-890 verification the append was made under;
	// NoVerification when none was needed.
	Guard VerificationGuard
	// FromCoordinator marks a batch written by a coordinator of this
	// broker rather than a client: its sequence is not checked.
	FromCoordinator bool
	// MarkerBumpsEpoch marks a transaction marker written at
	// transaction.version 2 (KIP-890 part 2), whose epoch must be above
	// the epoch of the transaction it ends.
	MarkerBumpsEpoch bool
	// KeepBaseOffset appends the batch at its own base offset instead of
	// the log end offset (a topic with vltava.preserve.offsets): gaps are
	// kept, and a batch starting below the log end offset is refused with
	// OFFSET_OUT_OF_RANGE, so nothing is written twice or out of order.
	KeepBaseOffset bool
}

// NoVerification is the guard of appends that are not verified.
const NoVerification VerificationGuard = 0

// verifiedOngoing is the guard handed out when the producer's transaction
// was already open: it matches no stored guard, so if a marker closes the
// transaction before the append, the append cannot open a new one
// (Kafka's VerificationGuard.SENTINEL).
const verifiedOngoing VerificationGuard = math.MaxUint64

// completedTxn is a transaction ended by a marker (Kafka's CompletedTxn).
type completedTxn struct {
	producerID              int64
	firstOffset, lastOffset int64 // data start; the marker's offset
	aborted                 bool
}

// crc32c is the Castagnoli table the snapshot checksum uses.
var crc32c = crc32.MakeTable(crc32.Castagnoli)

const (
	producerSnapshotVersion = 1
	keptProducerSnapshots   = 3
)

func newProducerStateManager(dir string, expirationMs int64) *producerStateManager {
	return &producerStateManager{dir: dir, expirationMs: expirationMs, producers: make(map[int64]*producerEntry),
		ongoing: make(map[int64]int64), verified: make(map[int64]verification)}
}

// setProducers replaces the state (a snapshot load, a reset) and derives
// the open transactions from it.
func (m *producerStateManager) setProducers(producers map[int64]*producerEntry) {
	m.producers = producers
	m.ongoing = make(map[int64]int64)
	for id, e := range producers {
		if e.currentTxnFirstOffset >= 0 {
			m.ongoing[id] = e.currentTxnFirstOffset
		}
	}
}

// firstUnstableOffset is the first offset of the earliest open
// transaction, or math.MaxInt64 with none open.
func (m *producerStateManager) firstUnstableOffset() int64 {
	first := int64(math.MaxInt64)
	for _, off := range m.ongoing {
		first = min(first, off)
	}
	return first
}

// lastStableOffsetAfter is the last stable offset once t completed: the
// first offset of the earliest other open transaction, else the offset
// after its marker (Kafka's ProducerStateManager.lastStableOffset).
func (m *producerStateManager) lastStableOffsetAfter(t completedTxn) int64 {
	first := t.lastOffset + 1
	for id, off := range m.ongoing {
		if id != t.producerID {
			first = min(first, off)
		}
	}
	return first
}

// startVerification returns the guard for producerID's next transactional
// append, and whether the coordinator must be asked at all: a producer
// whose transaction is already open here was verified when it began.
func (m *producerStateManager) startVerification(producerID int64, epoch int16, epochBump bool, nowMs int64) (VerificationGuard, bool) {
	if m.openAt(producerID, epoch) {
		return verifiedOngoing, false
	}
	if v, ok := m.verified[producerID]; ok {
		// The guard is reused; it now speaks for the latest epoch asked
		// about (Kafka's maybeUpdateLowestSequenceAndEpoch).
		if epoch > v.epoch {
			v.epoch, v.epochBump = epoch, epochBump
			m.verified[producerID] = v
		}
		return v.guard, true
	}
	m.lastGuard++
	m.verified[producerID] = verification{guard: m.lastGuard, atMs: nowMs, epoch: epoch, epochBump: epochBump}
	return m.lastGuard, true
}

// check validates a batch against the producer's state without changing it.
// It returns the original batch if this is a retry of one of the last
// batches, an error wrapping kerr.InvalidProducerEpoch for a fenced epoch, or
// kerr.OutOfOrderSequenceNumber for a gap (ProducerAppendInfo.checkSequence).
//
// A batch from a coordinator (opts.FromCoordinator: the group
// coordinator's transactional offsets) has its epoch checked but neither
// duplicates nor sequences, as Kafka checks only AppendOrigin.CLIENT.
func (m *producerStateManager) check(h *record.Header, opts TxnAppend) (dup batchMetadata, isDup bool, err error) {
	if h.ProducerID < 0 {
		return batchMetadata{}, false, nil
	}
	if err := m.checkTransaction(h, opts.Guard); err != nil {
		return batchMetadata{}, false, err
	}
	e := m.producers[h.ProducerID]
	if opts.FromCoordinator {
		if e != nil && h.ProducerEpoch < e.epoch {
			return batchMetadata{}, false, fmt.Errorf("%w: producer %d epoch %d is older than current epoch %d", kerr.InvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
		}
		return batchMetadata{}, false, nil
	}
	if e == nil {
		// No state (new producer, or its batches were removed by retention
		// or DeleteRecords): Kafka accepts any sequence.
		return batchMetadata{}, false, nil
	}
	if !h.IsControl() {
		if b, ok := e.findDuplicate(h); ok {
			return b, true, nil
		}
	}
	if h.ProducerEpoch < e.epoch {
		return batchMetadata{}, false, fmt.Errorf("%w: producer %d epoch %d is older than current epoch %d", kerr.InvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	if h.IsControl() {
		return batchMetadata{}, false, nil
	}
	if h.ProducerEpoch != e.epoch {
		if h.BaseSequence != 0 {
			return batchMetadata{}, false, fmt.Errorf("%w: producer %d bumped epoch to %d with sequence %d, expected 0", kerr.OutOfOrderSequenceNumber, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return batchMetadata{}, false, nil
	}
	last, ok := e.lastBatch()
	if !ok {
		return batchMetadata{}, false, nil
	}
	if !inSequence(last.lastSeq, h.BaseSequence) {
		return batchMetadata{}, false, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d", kerr.OutOfOrderSequenceNumber, h.ProducerID, h.ProducerEpoch, h.BaseSequence, nextSequence(last.lastSeq))
	}
	return batchMetadata{}, false, nil
}

// openAt reports whether producerID's transaction is open here at epoch
// (Kafka's UnifiedLog.hasOngoingTransaction).
func (m *producerStateManager) openAt(producerID int64, epoch int16) bool {
	if _, open := m.ongoing[producerID]; !open {
		return false
	}
	e := m.producers[producerID]
	return e != nil && e.epoch == epoch
}

// checkTransaction applies Kafka's transactional rules to a data batch
// (ProducerAppendInfo.checkProducerEpoch and the verification of
// UnifiedLog.analyzeAndValidateProducerState): a plain batch while the
// producer's transaction is open is INVALID_TXN_STATE, and so is a
// transactional batch that opens a transaction without the guard of a
// verification made for it (when the caller verifies, guard is not
// NoVerification).
func (m *producerStateManager) checkTransaction(h *record.Header, guard VerificationGuard) error {
	if h.IsControl() {
		return nil
	}
	_, open := m.ongoing[h.ProducerID]
	if !h.IsTransactional() {
		if open {
			return fmt.Errorf("%w: producer %d wrote a non-transactional batch inside its open transaction", kerr.InvalidTxnState, h.ProducerID)
		}
		return nil
	}
	// A batch of a later epoch while the earlier epoch's transaction is
	// still open here starts a new transaction (KIP-890 part 2 bumps the
	// epoch per transaction): it needs its own verification, which the
	// coordinator grants only once its markers are written.
	if m.openAt(h.ProducerID, h.ProducerEpoch) || guard == NoVerification {
		return nil
	}
	if v, ok := m.verified[h.ProducerID]; !ok || v.guard != guard {
		return fmt.Errorf("%w: the transaction of producer %d was not verified, or ended while it was", kerr.InvalidTxnState, h.ProducerID)
	}
	return nil
}

// checkMarker is Kafka's check of a marker against the producer state
// (ProducerAppendInfo.appendEndTxnMarker): a producer epoch older than the
// current one is INVALID_PRODUCER_EPOCH, and so is one not above it for a
// transaction.version 2 marker (bumpsEpoch, KIP-890 part 2: each
// transaction ends with an epoch bump, so a marker at the epoch of the
// open transaction's data is a zombie's); a coordinator epoch older than
// the one of the producer's last marker is TRANSACTION_COORDINATOR_FENCED.
//
// A transaction.version 2 marker at the current epoch with no transaction
// open is the same marker again: the coordinator that took over after a
// failover sends the markers of every transaction it loads prepared, and
// the previous coordinator may have written them already (the marker set
// the producer's epoch to its bumped one). It completes nothing and is
// accepted, as a retried transaction.version 1 marker is; refusing it would
// leave the new coordinator unable to complete the transaction, which
// would then stay prepared and the transactional id unusable.
func (m *producerStateManager) checkMarker(producerID int64, epoch int16, coordinatorEpoch int32, bumpsEpoch bool) error {
	e := m.producers[producerID]
	if e == nil {
		return nil
	}
	if epoch < e.epoch || (bumpsEpoch && epoch == e.epoch && e.currentTxnFirstOffset >= 0) {
		return fmt.Errorf("%w: marker for producer %d has epoch %d, current epoch %d", kerr.InvalidProducerEpoch, producerID, epoch, e.epoch)
	}
	if coordinatorEpoch < e.coordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, older than %d", kerr.TransactionCoordinatorFenced, producerID, coordinatorEpoch, e.coordinatorEpoch)
	}
	return nil
}

// inSequence is Kafka's ProducerAppendInfo.inSequence: next follows last,
// wrapping from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// nextSequence is the sequence expected after seq (for error messages).
func nextSequence(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 0
	}
	return seq + 1
}

// update applies a batch already in the log (after check, or during
// replay). marker is the decoded marker of a control batch. It returns the
// transaction a marker completed, if any.
func (m *producerStateManager) update(h *record.Header, marker *record.Marker) (completedTxn, bool) {
	if h.ProducerID < 0 {
		return completedTxn{}, false
	}
	e := m.producers[h.ProducerID]
	if e == nil {
		e = &producerEntry{producerID: h.ProducerID, epoch: h.ProducerEpoch, coordinatorEpoch: -1, currentTxnFirstOffset: -1}
		m.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.epoch {
		// A new epoch starts a fresh sequence space.
		e.epoch = h.ProducerEpoch
		e.numBatches = 0
	}
	if h.IsControl() {
		// A commit/abort marker closes the producer's transaction and
		// ends any verification made for it.
		t := completedTxn{producerID: h.ProducerID, firstOffset: e.currentTxnFirstOffset, lastOffset: h.BaseOffset}
		if marker != nil {
			t.aborted = marker.Type == record.ControlAbort
			e.coordinatorEpoch = max(e.coordinatorEpoch, marker.CoordinatorEpoch)
		}
		e.currentTxnFirstOffset = -1
		e.lastTimestamp = h.MaxTimestamp
		delete(m.ongoing, h.ProducerID)
		// At transaction.version 2 the marker carries the bumped epoch
		// the producer's next transaction uses: a verification of that
		// epoch was made for the next transaction, which the coordinator
		// let start only once this one was complete, so the marker leaves
		// it in place (as Kafka's UnifiedLog does). Any other marker ends
		// what was verified.
		if v, ok := m.verified[h.ProducerID]; !ok || !v.epochBump || v.epoch != h.ProducerEpoch {
			delete(m.verified, h.ProducerID)
		}
		// A marker with no open transaction (a retried marker, an abort
		// of a transaction that wrote nothing here) completes nothing.
		return t, t.firstOffset >= 0
	}
	if h.IsTransactional() && e.currentTxnFirstOffset < 0 {
		e.currentTxnFirstOffset = h.BaseOffset
		m.ongoing[h.ProducerID] = h.BaseOffset
		delete(m.verified, h.ProducerID)
	}
	e.addBatch(batchMetadata{
		firstSeq:     h.BaseSequence,
		lastSeq:      h.LastSequence(),
		firstOffset:  h.BaseOffset,
		lastOffset:   h.LastOffset(),
		maxTimestamp: h.MaxTimestamp,
	})
	return completedTxn{}, false
}

// removeExpired drops producers idle for producer.id.expiration.ms with no
// open transaction (Kafka's removeExpiredProducers). It returns how many.
func (m *producerStateManager) removeExpired(nowMs int64) int {
	for id, v := range m.verified {
		if nowMs-v.atMs >= m.expirationMs {
			delete(m.verified, id)
		}
	}
	n := 0
	for id, e := range m.producers {
		if e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= m.expirationMs {
			delete(m.producers, id)
			n++
		}
	}
	return n
}

// truncateHead forgets producers whose last batch is below logStartOffset and
// snapshots below it, as Kafka does when the log start offset moves.
func (m *producerStateManager) truncateHead(logStartOffset int64) error {
	m.forgetBefore(logStartOffset)
	return m.removeSnapshotsBelow(logStartOffset)
}

// forgetBefore is truncateHead's in-memory part: producers whose last
// batch is below logStartOffset are forgotten.
func (m *producerStateManager) forgetBefore(logStartOffset int64) {
	for id, e := range m.producers {
		if b, ok := e.lastBatch(); ok && b.lastOffset < logStartOffset && e.currentTxnFirstOffset < 0 {
			delete(m.producers, id)
		}
	}
}

// removeSnapshotsBelow is truncateHead's file part: it lists the partition
// dir and removes the snapshots below logStartOffset. It touches no
// in-memory state, so it runs without the log's append lock.
func (m *producerStateManager) removeSnapshotsBelow(logStartOffset int64) error {
	offs, err := m.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, o := range offs {
		if o < logStartOffset {
			m.removeSnapshot(o)
		}
	}
	return nil
}

func (m *producerStateManager) snapshotPath(offset int64) string {
	return segmentFileName(m.dir, offset, snapshotFileSuffix)
}

// snapshotOffsets lists the offsets of snapshot files, ascending.
func (m *producerStateManager) snapshotOffsets() ([]int64, error) {
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, de := range ents {
		if o, ok := parseOffsetFileName(de.Name(), snapshotFileSuffix); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (m *producerStateManager) removeSnapshot(offset int64) {
	_ = os.Remove(m.snapshotPath(offset))
}

// deleteSnapshotsAbove removes snapshots newer than offset (log truncation).
func (m *producerStateManager) deleteSnapshotsAbove(offset int64) error {
	offs, err := m.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, o := range offs {
		if o > offset {
			m.removeSnapshot(o)
		}
	}
	return nil
}

// encodeSnapshot serializes the current state in the documented format.
func (m *producerStateManager) encodeSnapshot() []byte {
	ids := make([]int64, 0, len(m.producers))
	for id := range m.producers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	buf := make([]byte, 10, 10+len(ids)*(35+maxBatchesPerProducer*32))
	binary.BigEndian.PutUint16(buf[0:], producerSnapshotVersion)
	binary.BigEndian.PutUint32(buf[6:], uint32(len(ids)))
	for _, id := range ids {
		e := m.producers[id]
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.producerID))
		buf = binary.BigEndian.AppendUint16(buf, uint16(e.epoch))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.coordinatorEpoch))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.currentTxnFirstOffset))
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.lastTimestamp))
		buf = append(buf, byte(e.numBatches))
		for i := 0; i < e.numBatches; i++ {
			b := e.batches[i]
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.firstSeq))
			buf = binary.BigEndian.AppendUint32(buf, uint32(b.lastSeq))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.firstOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.lastOffset))
			buf = binary.BigEndian.AppendUint64(buf, uint64(b.maxTimestamp))
		}
	}
	binary.BigEndian.PutUint32(buf[2:], crc32.Checksum(buf[6:], crc32c))
	return buf
}

var errBadSnapshot = errors.New("invalid producer state snapshot")

func decodeSnapshot(data []byte) (map[int64]*producerEntry, error) {
	if len(data) < 10 {
		return nil, fmt.Errorf("%w: %d bytes", errBadSnapshot, len(data))
	}
	if v := binary.BigEndian.Uint16(data); v != producerSnapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errBadSnapshot, v)
	}
	if crc32.Checksum(data[6:], crc32c) != binary.BigEndian.Uint32(data[2:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadSnapshot)
	}
	n := int(binary.BigEndian.Uint32(data[6:]))
	p := data[10:]
	// Each entry takes at least 31 bytes: the hint never exceeds what the
	// data can hold, whatever the count says.
	out := make(map[int64]*producerEntry, min(n, len(p)/31))
	for range n {
		if len(p) < 31 {
			return nil, fmt.Errorf("%w: truncated producer entry", errBadSnapshot)
		}
		e := &producerEntry{
			producerID:            int64(binary.BigEndian.Uint64(p)),
			epoch:                 int16(binary.BigEndian.Uint16(p[8:])),
			coordinatorEpoch:      int32(binary.BigEndian.Uint32(p[10:])),
			currentTxnFirstOffset: int64(binary.BigEndian.Uint64(p[14:])),
			lastTimestamp:         int64(binary.BigEndian.Uint64(p[22:])),
			numBatches:            int(p[30]),
		}
		p = p[31:]
		if e.numBatches > maxBatchesPerProducer || len(p) < e.numBatches*32 {
			return nil, fmt.Errorf("%w: bad batch count %d", errBadSnapshot, e.numBatches)
		}
		for i := 0; i < e.numBatches; i++ {
			e.batches[i] = batchMetadata{
				firstSeq:     int32(binary.BigEndian.Uint32(p)),
				lastSeq:      int32(binary.BigEndian.Uint32(p[4:])),
				firstOffset:  int64(binary.BigEndian.Uint64(p[8:])),
				lastOffset:   int64(binary.BigEndian.Uint64(p[16:])),
				maxTimestamp: int64(binary.BigEndian.Uint64(p[24:])),
			}
			p = p[32:]
		}
		out[e.producerID] = e
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBadSnapshot, len(p))
	}
	return out, nil
}

// takeSnapshot writes the state as of offset and prunes old snapshots,
// keeping the newest few and every one above pruneBound (a tiered log's
// segments not yet copied, each copied with its snapshot). sync requests an
// fsync; roll-time snapshots skip it because a torn snapshot fails its
// checksum and recovery falls back to an older one plus replay.
func (m *producerStateManager) takeSnapshot(offset int64, sync bool, pruneBound int64) error {
	data := m.encodeSnapshot()
	path := m.snapshotPath(offset)
	var err error
	if sync {
		err = writeFileAtomically(path, data)
	} else {
		tmp := path + ".tmp"
		if err = os.WriteFile(tmp, data, 0o644); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		return err
	}
	offs, err := m.snapshotOffsets()
	if err != nil {
		return err
	}
	for len(offs) > keptProducerSnapshots && offs[0] <= pruneBound {
		m.removeSnapshot(offs[0])
		offs = offs[1:]
	}
	return nil
}

// loadLatestSnapshot replaces the state with the newest valid snapshot at or
// below maxOffset and returns its offset; unreadable snapshots are deleted.
// With no usable snapshot the state is empty and ok is false.
func (m *producerStateManager) loadLatestSnapshot(maxOffset int64) (offset int64, ok bool, err error) {
	m.setProducers(make(map[int64]*producerEntry))
	offs, err := m.snapshotOffsets()
	if err != nil {
		return 0, false, err
	}
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > maxOffset {
			continue
		}
		data, err := os.ReadFile(m.snapshotPath(offs[i]))
		if err == nil {
			var producers map[int64]*producerEntry
			if producers, err = decodeSnapshot(data); err == nil {
				m.setProducers(producers)
				return offs[i], true, nil
			}
		}
		m.removeSnapshot(offs[i])
	}
	return 0, false, nil
}

// clearSnapshots removes every snapshot file (the log was emptied).
func (m *producerStateManager) clearSnapshots() error {
	offs, err := m.snapshotOffsets()
	if err != nil {
		return err
	}
	for _, o := range offs {
		m.removeSnapshot(o)
	}
	return nil
}
