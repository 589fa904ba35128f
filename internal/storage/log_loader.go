package storage

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage/vfs"
)

// OpenOptions carries what the Manager knows about a log from its log dir's
// checkpoints.
type OpenOptions struct {
	Topic          string
	Partition      int32
	TopicID        [16]byte
	RecoveryPoint  int64 // from recovery-point-offset-checkpoint (0 if unknown)
	LogStartOffset int64 // from log-start-offset-checkpoint
	HighWatermark  int64 // from replication-offset-checkpoint
	CleanShutdown  bool  // the log dir had a clean-shutdown marker: trust indexes
	Logger         *slog.Logger
	Now            func() time.Time // for tests
	// FS is the file system of the segment files (vfs.OS when nil); the
	// Manager passes its dir's error-reporting one.
	FS vfs.FS
}

// Open opens the log in dir, creating it if missing, and recovers it (Kafka's
// LogLoader):
//   - leftover .deleted, .tmp and orphan index files are removed;
//   - after an unclean shutdown every segment that may hold data past the
//     recovery point is rescanned: batches are validated (length, magic,
//     CRC, offsets) and indexes rebuilt; the first invalid batch and
//     everything after it, including later segments, is removed;
//   - other segments keep their indexes unless those are missing or fail a
//     sanity check, in which case they are rebuilt;
//   - producer state is loaded from the newest snapshot at or below the log
//     end offset and the batch headers after it are replayed;
//   - partition.metadata records the topic id.
func Open(dir string, cfg Config, opts OpenOptions) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FS == nil {
		opts.FS = vfs.OS
	}
	if opts.Topic == "" {
		tp, ok := parsePartitionDirName(filepath.Base(dir))
		if !ok {
			return nil, fmt.Errorf("log dir %q is not named <topic>-<partition> and no topic was given", dir)
		}
		opts.Topic, opts.Partition = tp.Topic, tp.Partition
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	c := cfg.normalized()
	l := &Log{
		fs:        opts.FS,
		dir:       dir,
		topic:     opts.Topic,
		partition: opts.Partition,
		logger:    opts.Logger.With("topic", opts.Topic, "partition", opts.Partition),
		now:       opts.Now,
	}
	l.cfg.Store(&c)
	l.remoteStart.Store(-1)
	l.remoteCopiedUpTo.Store(-1)
	l.deletedBefore.Store(-1)
	l.mu.producers = newProducerStateManager(dir, c.ProducerIDExpirationMs)
	id, err := syncPartitionMetadata(dir, opts.TopicID)
	if err != nil {
		return nil, err
	}
	l.topicID = id
	if l.epochs, err = loadLeaderEpochCache(filepath.Join(dir, LeaderEpochCheckpointFile)); err != nil {
		// The cache is rebuilt from batch epochs below, so a bad file is
		// not fatal.
		l.logger.Warn("discarding unreadable leader epoch checkpoint", "err", err)
		l.epochs = &leaderEpochCache{path: filepath.Join(dir, LeaderEpochCheckpointFile)}
	}
	if err := l.load(opts); err != nil {
		for _, s := range *l.segments.Load() {
			s.closeNoFlush()
		}
		return nil, fmt.Errorf("%w: loading %s: %v", kerr.KafkaStorageError, dir, err)
	}
	l.lastFlushMs.Store(l.now().UnixMilli())
	return l, nil
}

func (l *Log) load(opts OpenOptions) error {
	l.setSegmentsLocked(nil)
	if err := completeInterruptedCleaning(l.dir, l.logger); err != nil {
		return err
	}
	bases, err := cleanDirAndListSegments(l.dir)
	if err != nil {
		return err
	}
	cfg := l.cfg.Load()
	var segs []*segment
	// firstRecovered is the base of the first segment rebuilt from its
	// batches: its transaction index is rebuilt too, by a producer-state
	// replay from a snapshot at or below it.
	firstRecovered := int64(math.MaxInt64)
	for i, base := range bases {
		s, indexesOK, err := openSegment(l.fs, l.dir, base, cfg, l.now())
		if err != nil {
			return err
		}
		segs = append(segs, s)
		l.setSegmentsLocked(segs)
		mayHoldUnflushed := i+1 == len(bases) || bases[i+1] > opts.RecoveryPoint
		if !opts.CleanShutdown && mayHoldUnflushed {
			indexesOK = false
		} else if indexesOK {
			if err := s.loadTail(); err != nil {
				l.logger.Warn("rebuilding indexes of segment", "base_offset", base, "err", err)
				indexesOK = false
			}
		} else {
			l.logger.Warn("rebuilding missing or corrupt indexes of segment", "base_offset", base)
		}
		if indexesOK {
			continue
		}
		if err := s.txn.reset(); err != nil {
			return err
		}
		firstRecovered = min(firstRecovered, base)
		res, err := s.recover(cfg.IndexIntervalBytes, l.rebuildEpochFromBatch)
		if err != nil {
			return err
		}
		if res.truncatedBytes == 0 {
			continue
		}
		l.logger.Warn("truncated invalid tail of segment during recovery",
			"base_offset", base, "valid_bytes", res.validBytes, "truncated_bytes", res.truncatedBytes, "reason", res.reason)
		// Like Kafka, nothing after a corrupt batch can be trusted.
		for _, later := range bases[i+1:] {
			l.logger.Warn("deleting segment after corruption", "base_offset", later)
			for _, suf := range segmentFileSuffixes {
				if err := os.Remove(segmentFileName(l.dir, later, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		break
	}
	if len(segs) == 0 {
		s, err := createSegment(l.fs, l.dir, max(opts.LogStartOffset, 0), cfg, l.now())
		if err != nil {
			return err
		}
		segs = []*segment{s}
		l.setSegmentsLocked(segs)
	}
	// Empty segments before the last carry no data; keep them (Kafka does)
	// but the log end offset comes from the last segment holding data.
	leo := segs[len(segs)-1].nextOffset
	for i := len(segs) - 1; i >= 0 && segs[i].size.Load() == 0; i-- {
		leo = max(segs[i].baseOffset, leo)
	}
	l.logEndOffset.Store(leo)
	lso := max(opts.LogStartOffset, segs[0].baseOffset)
	if lso > leo {
		l.logger.Warn("log start offset beyond log end offset; starting empty", "log_start_offset", lso, "log_end_offset", leo)
		l.mu.Lock()
		err := l.truncateFullyAndStartAtLocked(lso)
		l.mu.Unlock()
		if err != nil {
			return err
		}
		return l.epochs.flush()
	}
	l.logStartOffset.Store(lso)
	if cfg.RemoteStorageEnable && opts.LogStartOffset >= 0 && opts.LogStartOffset < lso {
		// The checkpoint holds the log start over both tiers (Kafka's
		// logStartOffset): the remote tier's start, known before its
		// metadata is read again, so a consumer at an offset only the
		// remote tier holds is not answered OFFSET_OUT_OF_RANGE meanwhile.
		// What the remote tier has copied stays unknown (-1), so local
		// retention waits for that metadata.
		// Nothing below it is served, whatever the remote tier still holds
		// (records deleted by DeleteRecords whose remote segments are not
		// removed yet).
		l.remoteStart.Store(opts.LogStartOffset)
		l.deletedBefore.Store(opts.LogStartOffset)
	}
	if opts.CleanShutdown {
		l.recoveryPoint.Store(leo)
	} else {
		l.recoveryPoint.Store(max(min(opts.RecoveryPoint, leo), lso))
	}
	// The checkpointed offsets are bounded by the log found on disk, as
	// Kafka's log loading does (updateHighWatermark; a recovery point past
	// the end): a crash may leave the checkpoints ahead of a log whose
	// unflushed tail recovery cut. This is input from disk, not an
	// invariant of the running log.
	l.highWatermark.Store(max(min(opts.HighWatermark, leo), lso))
	// Entries past the log end or before its start describe no data: drop
	// them in memory, the next flush rewrites the file (as Kafka's
	// truncateFromEndAsyncFlush at load).
	l.epochs.truncateFromEnd(leo)
	l.epochs.truncateFromStart(lso)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.mu.producers.deleteSnapshotsAbove(leo); err != nil {
		return err
	}
	for _, s := range segs {
		// Entries past the log end describe markers a crash cut off.
		if err := s.txn.truncateTo(leo); err != nil {
			return err
		}
	}
	return l.rebuildProducerStateFromLocked(firstRecovered)
}

// rebuildEpochFromBatch restores leader epoch entries from recovered batches,
// as Kafka's recovery does, in case the checkpoint lagged the log.
func (l *Log) rebuildEpochFromBatch(h *record.Header) {
	if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.epochs.latestEpoch() {
		if err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
			l.logger.Warn("writing leader epoch checkpoint", "err", err)
		}
	}
}

// rebuildProducerStateLocked loads the newest snapshot at or below the log
// end offset and replays the batch headers after it (Kafka's
// rebuildProducerState), then drops producers below the log start offset.
// The replay also rebuilds the transaction indexes after the snapshot
// (entries already indexed are skipped) and the last stable offset.
func (l *Log) rebuildProducerStateLocked() error {
	return l.rebuildProducerStateFromLocked(l.logEndOffset.Load())
}

// rebuildProducerStateFromLocked is rebuildProducerStateLocked replaying
// from a snapshot at or below maxSnapshot: the base of the first segment
// whose transaction index is rebuilt, so the replay covers it.
func (l *Log) rebuildProducerStateFromLocked(maxSnapshot int64) error {
	pm := l.mu.producers
	leo := l.logEndOffset.Load()
	lso := l.logStartOffset.Load()
	l.beginTxnReplayLocked()
	defer l.endTxnReplayLocked()
	from, ok, err := pm.loadLatestSnapshot(min(leo, maxSnapshot))
	if err != nil {
		return err
	}
	if !ok || from < lso {
		from = lso
	}
	if from < leo {
		for _, s := range l.segmentList() {
			if s.nextOffset <= from && s.size.Load() > 0 {
				continue
			}
			pos, _, found, err := s.findBatch(from, s.size.Load())
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			err = s.scanHeaders(pos, func(h *record.Header, at int64) error {
				if h.LastOffset() < from {
					return nil
				}
				var batch []byte
				if h.IsControl() {
					// Markers are one small record: read it for its type.
					batch = make([]byte, h.TotalSize())
					if _, err := s.log.ReadAt(batch, at); err != nil {
						return err
					}
				}
				return l.applyBatchLocked(s, h, batch)
			})
			if err != nil {
				return err
			}
		}
	}
	return pm.truncateHead(lso)
}

// cleanDirAndListSegments removes leftovers of interrupted operations and
// returns the base offsets of the segments in dir, ascending.
func cleanDirAndListSegments(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	for _, de := range ents {
		if base, ok := parseOffsetFileName(de.Name(), logFileSuffix); ok {
			logs[base] = true
		}
	}
	var bases []int64
	for _, de := range ents {
		name := de.Name()
		path := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, deletedFileSuffix), strings.HasSuffix(name, ".tmp"):
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		case strings.HasSuffix(name, indexFileSuffix), strings.HasSuffix(name, timeIndexFileSuffix), strings.HasSuffix(name, txnIndexFileSuffix):
			base, ok := parseOffsetFileName(name, filepath.Ext(name))
			if ok && !logs[base] {
				if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
					return nil, err
				}
			}
		case strings.HasSuffix(name, logFileSuffix):
			if base, ok := parseOffsetFileName(name, logFileSuffix); ok {
				bases = append(bases, base)
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// MetadataDirName is the metadata log's directory in the first log dir
// (Kafka's __cluster_metadata-0). It looks like a partition dir but is not
// one of ours: the metadata package owns it.
const MetadataDirName = "__cluster_metadata-0"

// parsePartitionDirName splits "<topic>-<partition>"; topics may contain '-'.
func parsePartitionDirName(name string) (TopicPartition, bool) {
	if name == MetadataDirName {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// deleteDirName is Kafka's name for a log dir being deleted:
// "<topic>-<partition>.<uuid without dashes>-delete", next to dir.
func deleteDirName(dir, topic string, partition int32) (string, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(dir), fmt.Sprintf("%s-%d.%s-delete", topic, partition, hex.EncodeToString(id[:]))), nil
}

// encodeTopicID renders a topic id as Kafka's Uuid.toString does: URL-safe
// base64 without padding.
func encodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// readPartitionMetadata parses partition.metadata
// ("version: 0\ntopic_id: <base64>\n"). ok is false if the file is missing.
func readPartitionMetadata(dir string) (id [16]byte, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		// Written without fsync (see syncPartitionMetadata): a crash
		// can leave it empty. The topic id is then unknown and is
		// taken from the caller, as for a missing file.
		return id, false, nil
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, found := strings.Cut(string(line), ":")
		if !found || strings.TrimSpace(k) != "topic_id" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(raw) != 16 {
			return id, false, fmt.Errorf("%s: bad topic_id %q", PartitionMetadataFile, strings.TrimSpace(v))
		}
		copy(id[:], raw)
		return id, true, nil
	}
	return id, false, fmt.Errorf("%s: no topic_id", PartitionMetadataFile)
}

// syncPartitionMetadata reconciles the topic id on disk with want: a zero
// want adopts the stored id, a missing file is written, and a different
// stored id is kerr.InconsistentTopicID.
func syncPartitionMetadata(dir string, want [16]byte) ([16]byte, error) {
	have, ok, err := readPartitionMetadata(dir)
	if err != nil {
		return have, err
	}
	var zero [16]byte
	switch {
	case want == zero:
		return have, nil
	case ok && have != want:
		return have, fmt.Errorf("%w: %s has topic id %s, expected %s", kerr.InconsistentTopicID, dir, encodeTopicID(have), encodeTopicID(want))
	case ok:
		return have, nil
	}
	// Not fsynced: the file only confirms a topic id the metadata log
	// already holds durably, and a lost or empty file is rewritten at the
	// next open. Fsyncing it (and the directory) for every new partition
	// was a third of the time to create a 10,000-partition topic.
	data := fmt.Sprintf("version: 0\ntopic_id: %s\n", encodeTopicID(want))
	return want, writeFileReplacing(filepath.Join(dir, PartitionMetadataFile), []byte(data))
}
