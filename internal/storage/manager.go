package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/storage/vfs"
)

// ManagerConfig configures a Manager (Kafka's LogManager settings).
type ManagerConfig struct {
	Dirs                   []string      // log.dirs
	RetentionCheckInterval time.Duration // log.retention.check.interval.ms (300000)
	// ProducerExpirationCheckInterval is
	// producer.id.expiration.check.interval.ms (600000): how often idle
	// producers are dropped (producer.id.expiration.ms).
	ProducerExpirationCheckInterval time.Duration
	FlushCheckInterval              time.Duration // log.flush.scheduler.interval.ms (default here: 1s; Kafka's is MaxLong)
	CheckpointInterval              time.Duration // log.flush.offset.checkpoint.interval.ms (60000)
	Logger                          *slog.Logger

	// Log cleaner (cleaner_manager.go). The zero value runs it with
	// Kafka's defaults, as log.cleaner.enable=true does.
	CleanerDisabled          bool          // log.cleaner.enable=false
	CleanerBackoff           time.Duration // log.cleaner.backoff.ms (15000)
	CleanerDedupeBufferBytes int64         // log.cleaner.dedupe.buffer.size (128 MiB)

	// Replica moves between log dirs (manager_move.go).
	MoveThreads        int   // num.replica.alter.log.dirs.threads (0: one per dir)
	MoveBytesPerSecond int64 // replica.alter.log.dirs.io.max.bytes.per.second (<= 0: unthrottled)

	// FS is the file system of the segment files (vfs.OS when nil; the
	// fault-injecting vfs.Faulty in tests). Each dir wraps it so that a
	// disk error takes that dir offline (manager_dirs.go).
	FS vfs.FS
	// CleanerThreads is log.cleaner.threads: cleaner goroutines (1 when
	// <= 0; log.cleaner.threads=0 is CleanerDisabled).
	CleanerThreads int
	// CleanerIOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second,
	// shared by the cleaner goroutines; <= 0 or Double.MAX_VALUE: none.
	CleanerIOMaxBytesPerSecond float64
	// CleanerLoadFactor is log.cleaner.io.buffer.load.factor (0.9 when <= 0).
	CleanerLoadFactor float64
}

// Manager owns the logs in a set of log dirs (Kafka's LogManager): it reads
// and writes each dir's checkpoint files and clean-shutdown marker, creates
// and opens logs, and runs retention, flush and checkpoint in the background.
//
// Per log dir, on disk: the partition directories "<topic>-<partition>", the
// checkpoints recovery-point-offset-checkpoint, log-start-offset-checkpoint
// and replication-offset-checkpoint ("0\n<count>\n<topic> <partition>
// <offset>\n..."), and .vltava_cleanshutdown after a clean Close.
//
// Thread-safety: all methods are safe for concurrent use; mu guards the maps
// of logs. No log I/O (opening, recovery, deletion) happens under mu: a
// partition being opened has a placeholder in mu.opening that later callers
// for the same partition wait on, so a log is never opened twice while
// other partitions open in parallel (see OpenAll).
type Manager struct {
	logger *slog.Logger
	cfg    ManagerConfig
	dirs   []*logDir

	checkpointMu sync.Mutex // serializes checkpoint file writes
	cleaner      *logCleaner
	stop         chan struct{}
	wg           sync.WaitGroup
	startOnce    sync.Once

	// failures carries each dir that went offline to the failure handler
	// (manager_dirs.go); onDirFailure is told once its logs are closed.
	failures     chan *logDir
	onDirFailure atomic.Pointer[DirFailureHandler]

	// moveSlots bounds the moves copying at once; moveThrottle paces
	// their copying (manager_move.go).
	moveSlots    chan struct{}
	moveThrottle *throttle

	mu struct {
		sync.Mutex
		logs     map[TopicPartition]*Log
		dirOf    map[TopicPartition]*logDir
		existing map[TopicPartition]*logDir // on disk, not yet opened
		opening  map[TopicPartition]*pendingChange
		// offline are the partitions of offline dirs: they are not opened
		// or created again (in any dir) until the broker restarts, as
		// Kafka's offline partitions.
		offline map[TopicPartition]*logDir
		// preferred are the dirs AlterReplicaLogDirs chose for partitions
		// not hosted yet (manager_move.go).
		preferred map[TopicPartition]*logDir
		// moves are the logs being moved to another dir.
		moves  map[TopicPartition]*MoveProgress
		closed bool
	}
}

// pendingChange is a partition whose log is being opened (and possibly
// recovered) or deleted without the manager lock held; GetOrCreate and
// Delete of the same partition wait for it. done is closed once log or err
// is set; both are read-only after that.
type pendingChange struct {
	dir      *logDir
	isNew    bool // opening a partition not on disk, in a dir chosen by load
	deleting bool
	done     chan struct{}
	log      *Log
	err      error
}

// logDir is one entry of log.dirs with what was read from it at start.
type logDir struct {
	path            string
	fs              vfs.FS      // ManagerConfig.FS, reporting errors as this dir's failure
	offline         atomic.Bool // set once, by the first disk error
	failure         atomic.Pointer[dirFailure]
	offlineAtStart  bool         // could not be read at start: what it holds is unknown
	usableBytes     atomic.Int64 // free space, refreshed in the background (placement)
	totalBytes      atomic.Int64
	cleanShutdown   bool
	recoveryPoints  map[TopicPartition]int64
	logStartOffsets map[TopicPartition]int64
	highWatermarks  map[TopicPartition]int64
}

// OpenManager opens every log dir: reads its checkpoints, notes and removes
// the clean-shutdown marker, removes leftover "-delete" directories and
// finds the partition directories present.
func OpenManager(cfg ManagerConfig) (*Manager, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("storage: no log dirs configured")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ProducerExpirationCheckInterval <= 0 {
		cfg.ProducerExpirationCheckInterval = 10 * time.Minute
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 5 * time.Minute
	}
	if cfg.FlushCheckInterval <= 0 {
		cfg.FlushCheckInterval = time.Second
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Minute
	}
	if cfg.FS == nil {
		cfg.FS = vfs.OS
	}
	if cfg.MoveThreads <= 0 {
		cfg.MoveThreads = len(cfg.Dirs)
	}
	m := &Manager{logger: cfg.Logger, cfg: cfg, stop: make(chan struct{}), failures: make(chan *logDir, len(cfg.Dirs)),
		moveSlots: make(chan struct{}, cfg.MoveThreads), moveThrottle: newThrottle(cfg.MoveBytesPerSecond)}
	m.mu.logs = make(map[TopicPartition]*Log)
	m.mu.dirOf = make(map[TopicPartition]*logDir)
	m.mu.existing = make(map[TopicPartition]*logDir)
	m.mu.opening = make(map[TopicPartition]*pendingChange)
	m.mu.offline = make(map[TopicPartition]*logDir)
	m.mu.preferred = make(map[TopicPartition]*logDir)
	m.mu.moves = make(map[TopicPartition]*MoveProgress)
	online := 0
	for _, path := range cfg.Dirs {
		d, err := m.openDir(path)
		switch {
		case err == nil:
			online++
		case d != nil && vfs.IsDiskError(err) && !errors.Is(err, errPartitionInTwoDirs):
			// A dir that cannot be read starts offline (KIP-858), as long
			// as another one can (manager_dirs.go).
			d.offline.Store(true)
			d.offlineAtStart = true
			d.failure.Store(&dirFailure{op: "open", path: path, err: err})
			m.logger.Error("log dir unreadable at start; it stays offline", "dir", path, "err", err)
		default:
			return nil, fmt.Errorf("%w: log dir %s: %v", kerr.KafkaStorageError, path, err)
		}
		m.dirs = append(m.dirs, d)
	}
	if online == 0 {
		return nil, fmt.Errorf("%w: no log dir of %v can be read", kerr.KafkaStorageError, cfg.Dirs)
	}
	var err error
	if m.cleaner, err = newLogCleaner(m); err != nil {
		return nil, fmt.Errorf("%w: reading cleaner checkpoints: %v", kerr.KafkaStorageError, err)
	}
	m.refreshDirSpace()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.handleDirFailures()
	}()
	return m, nil
}

// openDir reads one log dir. A dir that fails with a disk error is
// returned with the error, to be taken offline; the partitions it holds are
// registered only if it opens completely.
func (m *Manager) openDir(path string) (*logDir, error) {
	d := &logDir{path: path}
	d.fs = vfs.Reporting(m.cfg.FS, func(op, file string, err error) { m.reportDirFailure(d, op, file, err) })
	d.totalBytes.Store(-1)
	d.usableBytes.Store(-1)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return d, err
	}
	// Read through the configured file system too, so a dir failing there
	// (the fault layer of tests) is found at start as it would be later.
	if _, err := readWholeFile(m.cfg.FS, filepath.Join(path, RecoveryPointCheckpointFile)); vfs.IsDiskError(err) {
		return d, err
	}
	marker := filepath.Join(path, CleanShutdownFile)
	if _, err := os.Stat(marker); err == nil {
		d.cleanShutdown = true
		if err := os.Remove(marker); err != nil {
			return d, err
		}
		if err := syncDir(path); err != nil {
			return d, err
		}
	}
	var err error
	if d.recoveryPoints, err = ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointCheckpointFile)); err != nil {
		return d, err
	}
	if d.logStartOffsets, err = ReadOffsetCheckpoint(filepath.Join(path, LogStartOffsetCheckpointFile)); err != nil {
		return d, err
	}
	if d.highWatermarks, err = ReadOffsetCheckpoint(filepath.Join(path, HighWatermarkCheckpointFile)); err != nil {
		return d, err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return d, err
	}
	found := map[TopicPartition]bool{}
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		if strings.HasSuffix(name, "-delete") || strings.HasSuffix(name, futureDirSuffix) {
			m.logger.Info("removing log dir left by an interrupted delete", "dir", filepath.Join(path, name))
			if err := os.RemoveAll(filepath.Join(path, name)); err != nil {
				return d, err
			}
			continue
		}
		tp, ok := parsePartitionDirName(name)
		if !ok {
			continue
		}
		if other, dup := m.mu.existing[tp]; dup {
			return nil, fmt.Errorf("%w: %s in %s and %s", errPartitionInTwoDirs, tp, other.path, path)
		}
		found[tp] = true
	}
	for tp := range found {
		m.mu.existing[tp] = d
	}
	return d, nil
}

// errPartitionInTwoDirs refuses to start with two copies of one partition.
var errPartitionInTwoDirs = errors.New("partition found in two log dirs")

// Existing lists the partition directories found on disk at open that have
// not been opened yet, sorted.
func (m *Manager) Existing() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicPartition, 0, len(m.mu.existing))
	for tp := range m.mu.existing {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// ExistingTopicID returns the topic id in partition.metadata of a partition
// found on disk (or already opened); ok is false if none is recorded.
func (m *Manager) ExistingTopicID(tp TopicPartition) (id [16]byte, ok bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.mu.logs[tp]; l != nil {
		return l.TopicID(), l.TopicID() != [16]byte{}, nil
	}
	d := m.mu.existing[tp]
	if d == nil {
		return id, false, nil
	}
	return readPartitionMetadata(filepath.Join(d.path, tp.String()))
}

// GetOrCreate returns the open log of tp, opening (and recovering) it if it
// exists on disk or creating it in the log dir with the fewest partitions.
// The open runs without the manager lock; concurrent callers for the same
// partition wait for the first one's result instead of opening it again.
func (m *Manager) GetOrCreate(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	m.mu.Lock()
	for {
		if m.mu.closed {
			m.mu.Unlock()
			return nil, errManagerClosed
		}
		if d := m.mu.offline[tp]; d != nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: %s is in offline log dir %s", kerr.KafkaStorageError, tp, d.path)
		}
		if l := m.mu.logs[tp]; l != nil {
			m.mu.Unlock()
			if topicID != [16]byte{} && l.TopicID() != [16]byte{} && l.TopicID() != topicID {
				return nil, fmt.Errorf("%w: %s has topic id %s, expected %s", kerr.InconsistentTopicID, tp, encodeTopicID(l.TopicID()), encodeTopicID(topicID))
			}
			return l, nil
		}
		p := m.mu.opening[tp]
		if p == nil {
			break
		}
		// Someone else is opening or deleting tp: wait, then look again
		// (the log may have been deleted since it opened).
		m.mu.Unlock()
		<-p.done
		if p.err != nil && !p.deleting {
			return nil, p.err
		}
		m.mu.Lock()
	}
	p := &pendingChange{dir: m.mu.existing[tp], done: make(chan struct{})}
	if p.dir == nil {
		p.dir, p.isNew = m.leastLoadedDirLocked(), true
		if pd := m.mu.preferred[tp]; pd != nil && !pd.offline.Load() {
			p.dir = pd
		}
		if od := m.offlineAtStartLocked(); od != nil {
			m.mu.offline[tp] = od
			m.mu.Unlock()
			m.reportUnplaceable(od, tp)
			return nil, fmt.Errorf("%w: %s may be in log dir %s, offline since start", kerr.KafkaStorageError, tp, od.path)
		}
		if p.dir == nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: every log dir is offline", kerr.KafkaStorageError)
		}
	}
	m.mu.opening[tp] = p
	m.mu.Unlock()

	l, err := m.openLog(tp, p.dir, topicID, cfg)

	m.mu.Lock()
	shuttingDown := m.mu.closed
	if err == nil && p.dir.offline.Load() {
		// The dir failed while the log was opening: the failure handler
		// did not see it, so it is closed here and stays offline.
		m.mu.offline[tp] = p.dir
		delete(m.mu.existing, tp)
		m.mu.Unlock()
		l.closeHandlers()
		l, err = nil, fmt.Errorf("%w: log dir %s went offline while %s was opening", kerr.KafkaStorageError, p.dir.path, tp)
		m.mu.Lock()
	} else if err == nil && !shuttingDown {
		delete(m.mu.existing, tp)
		delete(m.mu.preferred, tp)
		m.mu.logs[tp] = l
		m.mu.dirOf[tp] = p.dir
	}
	m.mu.Unlock()
	if err == nil && shuttingDown {
		// Close ran while we were opening and did not see this log; it
		// waits on p.done, so the log is closed before the clean-shutdown
		// marker is written.
		if cerr := l.Close(); cerr != nil {
			m.logger.Error("closing log opened during shutdown", "partition", tp.String(), "err", cerr)
		}
		l, err = nil, errManagerClosed
	}

	m.mu.Lock()
	delete(m.mu.opening, tp)
	p.log, p.err = l, err
	close(p.done)
	m.mu.Unlock()
	return l, err
}

// errManagerClosed is returned by operations on a closed Manager.
var errManagerClosed = fmt.Errorf("%w: log manager is closed", kerr.KafkaStorageError)

// openLog opens tp's log in d with the offsets d's checkpoints recorded.
// Reading d's checkpoint maps without mu is safe: they are written only by
// openDir, before the Manager is shared.
func (m *Manager) openLog(tp TopicPartition, d *logDir, topicID [16]byte, cfg Config) (*Log, error) {
	l, err := Open(filepath.Join(d.path, tp.String()), cfg, OpenOptions{
		Topic:          tp.Topic,
		Partition:      tp.Partition,
		TopicID:        topicID,
		RecoveryPoint:  d.recoveryPoints[tp],
		LogStartOffset: d.logStartOffsets[tp],
		HighWatermark:  d.highWatermarks[tp],
		CleanShutdown:  d.cleanShutdown,
		Logger:         m.logger,
		FS:             d.fs,
	})
	if err != nil {
		return nil, err
	}
	m.watchLogStart(l, d)
	return l, nil
}

// watchLogStart checkpoints d when l's log start offset moves (DeleteRecords).
func (m *Manager) watchLogStart(l *Log, d *logDir) {
	l.onLogStartOffsetIncremented = func() {
		if err := m.writeCheckpoints(d); err != nil {
			m.logger.Error("writing checkpoints after log start offset change", "dir", d.path, "err", err)
		}
	}
}

// OpenRequest names one log for OpenAll, with the arguments GetOrCreate
// takes.
type OpenRequest struct {
	TP      TopicPartition
	TopicID [16]byte
	Cfg     Config
}

// OpenAll opens (or creates) many logs concurrently, at most parallelism at
// a time (GOMAXPROCS*2 when parallelism <= 0), which is what makes a broker
// with thousands of partitions start quickly: recovery is mostly I/O bound
// and each log's recovery is independent (Kafka's
// num.recovery.threads.per.data.dir). It returns every log that opened; if
// some failed, err joins their errors and the map holds the rest.
func (m *Manager) OpenAll(reqs []OpenRequest, parallelism int) (map[TopicPartition]*Log, error) {
	if parallelism <= 0 {
		parallelism = 2 * runtime.GOMAXPROCS(0)
	}
	parallelism = min(parallelism, len(reqs))
	type result struct {
		tp  TopicPartition
		log *Log
		err error
	}
	work := make(chan OpenRequest)
	results := make(chan result)
	var wg sync.WaitGroup
	for range parallelism {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				l, err := m.GetOrCreate(r.TP, r.TopicID, r.Cfg)
				if err != nil {
					err = fmt.Errorf("opening %s: %w", r.TP, err)
				}
				results <- result{tp: r.TP, log: l, err: err}
			}
		}()
	}
	go func() {
		for _, r := range reqs {
			work <- r
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	logs := make(map[TopicPartition]*Log, len(reqs))
	var errs []error
	for r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		logs[r.tp] = r.log
	}
	return logs, errors.Join(errs...)
}

// leastLoadedDirLocked picks the log dir for a new partition among the
// online ones (nil if none): the one with the fewest partitions, counting
// those on disk, open and being created (Kafka's LogManager rule), and
// among those with the fewest, the one with the most usable bytes (as last
// measured by refreshDirSpace), so that dirs on disks of different sizes
// or fill levels are not filled at the same pace once counts are even.
func (m *Manager) leastLoadedDirLocked() *logDir {
	if len(m.dirs) == 1 {
		if m.dirs[0].offline.Load() {
			return nil
		}
		return m.dirs[0]
	}
	count := make(map[*logDir]int, len(m.dirs))
	for _, d := range m.mu.dirOf {
		count[d]++
	}
	for _, d := range m.mu.existing {
		count[d]++
	}
	for _, p := range m.mu.opening {
		if p.isNew {
			count[p.dir]++
		}
	}
	var best *logDir
	for _, d := range m.dirs {
		switch {
		case d.offline.Load():
		case best == nil, count[d] < count[best],
			count[d] == count[best] && d.usableBytes.Load() > best.usableBytes.Load():
			best = d
		}
	}
	return best
}

// Get returns the open log of tp, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.logs[tp]
}

// Logs returns a copy of the open logs.
func (m *Manager) Logs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		out[tp] = l
	}
	return out
}

// DirOf returns the log dir holding tp ("" if unknown).
func (m *Manager) DirOf(tp TopicPartition) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.mu.dirOf[tp]; d != nil {
		return d.path
	}
	if d := m.mu.existing[tp]; d != nil {
		return d.path
	}
	return ""
}

// Delete removes tp's log from disk (opened or not) and from the checkpoints.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	for p := m.mu.opening[tp]; p != nil; p = m.mu.opening[tp] {
		// Let a concurrent open (or delete) finish so its files are not
		// removed under it; a log it registers is then deleted below.
		m.mu.Unlock()
		<-p.done
		m.mu.Lock()
	}
	l := m.mu.logs[tp]
	d := m.mu.dirOf[tp]
	if l == nil {
		d = m.mu.existing[tp]
	}
	delete(m.mu.logs, tp)
	delete(m.mu.dirOf, tp)
	delete(m.mu.existing, tp)
	if d == nil {
		m.mu.Unlock()
		return nil
	}
	// Until the directory is gone, a GetOrCreate of tp must wait rather
	// than open a new log in the directory being removed.
	p := &pendingChange{dir: d, deleting: true, done: make(chan struct{})}
	m.mu.opening[tp] = p
	m.mu.Unlock()
	var err error
	if l != nil {
		err = l.Delete()
	} else {
		err = os.RemoveAll(filepath.Join(d.path, tp.String()))
	}
	if cerr := m.writeCheckpoints(d); err == nil {
		err = cerr
	}
	if cerr := m.cleaner.forget(tp, d); err == nil {
		err = cerr
	}
	m.mu.Lock()
	delete(m.mu.opening, tp)
	p.err = err
	close(p.done)
	m.mu.Unlock()
	return err
}

// Start launches the background retention, flush, checkpoint and log
// cleaner loops (the cleaner unless CleanerDisabled); they stop at Close.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		m.every(m.cfg.RetentionCheckInterval, m.runRetention)
		m.every(m.cfg.ProducerExpirationCheckInterval, m.runProducerExpiration)
		m.every(m.cfg.FlushCheckInterval, m.runFlush)
		m.every(m.cfg.FlushCheckInterval, m.refreshDirSpace)
		m.every(m.cfg.CheckpointInterval, func() {
			if err := m.CheckpointAll(); err != nil {
				m.logger.Error("writing checkpoints", "err", err)
			}
		})
		if !m.cfg.CleanerDisabled {
			for range m.cleaner.threads {
				m.wg.Add(1)
				go func() {
					defer m.wg.Done()
					m.cleaner.run(m.stop)
				}()
			}
		}
	})
}

func (m *Manager) every(interval time.Duration, fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

func (m *Manager) runRetention() {
	for tp, l := range m.Logs() {
		if _, err := l.EnforceRetention(); err != nil && !errors.Is(err, errLogClosed) {
			m.logger.Error("enforcing retention", "partition", tp.String(), "err", err)
			m.failDirOf(tp, "retention", err)
		}
	}
}

// runProducerExpiration drops idle producers from every log (Kafka's
// PeriodicProducerExpirationCheck).
func (m *Manager) runProducerExpiration() {
	for _, l := range m.Logs() {
		l.RemoveExpiredProducers()
	}
}

func (m *Manager) runFlush() {
	for tp, l := range m.Logs() {
		if err := l.FlushIfDue(); err != nil && !errors.Is(err, errLogClosed) {
			m.logger.Error("flushing log", "partition", tp.String(), "err", err)
			m.failDirOf(tp, "flush", err)
		}
	}
}

// CheckpointAll writes the recovery point, log start offset and high
// watermark checkpoints of every log dir.
func (m *Manager) CheckpointAll() error {
	var errs []error
	for _, d := range m.dirs {
		if d.offline.Load() {
			continue
		}
		if err := m.writeCheckpoints(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeCheckpoints writes d's three checkpoints. Partitions on disk that are
// not open keep the values read at start so their recovery is not widened.
func (m *Manager) writeCheckpoints(d *logDir) (err error) {
	if d.offline.Load() {
		return fmt.Errorf("%w: log dir %s is offline", kerr.KafkaStorageError, d.path)
	}
	defer func() {
		if vfs.IsDiskError(err) {
			m.reportDirFailure(d, "checkpoint", d.path, err)
		}
	}()
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	rp, lso, hw := map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[TopicPartition]int64{}
	m.mu.Lock()
	for tp, owner := range m.mu.existing {
		if owner != d {
			continue
		}
		if v, ok := d.recoveryPoints[tp]; ok {
			rp[tp] = v
		}
		if v, ok := d.logStartOffsets[tp]; ok {
			lso[tp] = v
		}
		if v, ok := d.highWatermarks[tp]; ok {
			hw[tp] = v
		}
	}
	for tp, l := range m.mu.logs {
		if m.mu.dirOf[tp] != d {
			continue
		}
		// The log start over both tiers, as Kafka checkpoints it; the
		// local one is the first segment's base at load.
		rp[tp], lso[tp], hw[tp] = l.RecoveryPoint(), l.EarliestOffset(), l.HighWatermark()
	}
	m.mu.Unlock()
	if err := WriteOffsetCheckpoint(filepath.Join(d.path, RecoveryPointCheckpointFile), rp); err != nil {
		return err
	}
	if err := WriteOffsetCheckpoint(filepath.Join(d.path, LogStartOffsetCheckpointFile), lso); err != nil {
		return err
	}
	return WriteOffsetCheckpoint(filepath.Join(d.path, HighWatermarkCheckpointFile), hw)
}

// Close stops the background loops, closes every log cleanly, writes all
// checkpoints and, if all of that succeeded, each dir's clean-shutdown
// marker so the next start can skip recovery.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	logs := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		logs[tp] = l
	}
	var opening []*pendingChange
	for _, p := range m.mu.opening {
		opening = append(opening, p)
	}
	m.mu.Unlock()
	// Opens in flight see closed and close their log themselves; the
	// clean-shutdown marker must not be written before they have.
	for _, p := range opening {
		<-p.done
	}
	close(m.stop)
	m.wg.Wait()
	for _, l := range logs {
		l.WaitRollFlushes()
	}
	var errs []error
	for tp, l := range logs {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", tp, err))
		}
	}
	if err := m.CheckpointAll(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, d := range m.dirs {
		if d.offline.Load() {
			continue
		}
		if err := writeFileAtomically(filepath.Join(d.path, CleanShutdownFile), nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
