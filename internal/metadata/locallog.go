package metadata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Log is the seam under the controller rules (controller/rules.Controller):
// committed records are applied, in order, to the image of every node.
// LocalLog implements it for a single node (tests); quorum.RaftLog, whose
// FSM calls Image.Apply and Publisher.Publish with the same batches,
// implements it for a cluster.
type Log interface {
	// Commit durably appends recs as one atomic batch and returns once they
	// are applied locally: the returned image, and Image() from then on,
	// include them. Records that cannot apply to the current image are
	// rejected (error wrapping kerr.InvalidRequest) and nothing is written.
	Commit(ctx context.Context, recs []Record) (*Image, error)
	// Image returns the latest applied image without blocking.
	Image() *Image
	// Subscribe registers fn to be called with every later change, in order,
	// from one goroutine.
	Subscribe(fn func(old, new *Image))
	Close() error
}

// MetadataPartitionDir is the directory of the metadata log under the
// metadata dir, named like Kafka's __cluster_metadata-0.
const MetadataPartitionDir = "__cluster_metadata-0"

// MetadataLogFile is the name of the metadata log file.
const MetadataLogFile = "metadata.log"

// DefaultSnapshotEveryRecords is how many records LocalLog appends between
// checkpoints.
const DefaultSnapshotEveryRecords = 10000

// LocalLogOptions tunes a LocalLog. The zero value gives the defaults.
type LocalLogOptions struct {
	// SnapshotEveryRecords: write a checkpoint once the log holds at least
	// this many records past the last one. <= 0 means
	// DefaultSnapshotEveryRecords.
	SnapshotEveryRecords int64
}

// LocalLog is the single-node metadata log: <metadata dir>/__cluster_metadata-0/
// metadata.log, a sequence of frames (see frame.go) each holding one batch
// (see codec.go), plus checkpoints (see checkpoint.go). Record offsets are
// dense: a batch of n records after offset o has offset o+n.
//
// Open replays the newest checkpoint and the log after it; a torn tail left
// by a crash is truncated away. Commit appends one frame and fsyncs before
// applying, so an acknowledged commit survives a crash.
//
// Thread-safety: all methods are safe for concurrent use. Commits are
// serialized by mu (which also covers the checkpoint written every
// SnapshotEveryRecords; metadata commits are rare admin operations, so the
// fsync under mu is the price of ordering). Image never blocks.
type LocalLog struct {
	dir    string
	logger *slog.Logger
	opts   LocalLogOptions
	pub    *Publisher

	mu struct {
		sync.Mutex
		file           *os.File
		size           int64 // bytes of valid frames in file
		snapshotOffset int64 // offset of the newest checkpoint, -1 if none
		failed         error // set when a failed append could not be undone
		closed         bool
	}
}

var _ Log = (*LocalLog)(nil)

// OpenLocalLog opens (creating if needed) the metadata log under dir with
// default options.
func OpenLocalLog(dir string, logger *slog.Logger) (*LocalLog, error) {
	return OpenLocalLogWithOptions(dir, logger, LocalLogOptions{})
}

// OpenLocalLogWithOptions opens the metadata log under dir and replays it.
func OpenLocalLogWithOptions(dir string, logger *slog.Logger, opts LocalLogOptions) (*LocalLog, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.SnapshotEveryRecords <= 0 {
		opts.SnapshotEveryRecords = DefaultSnapshotEveryRecords
	}
	l := &LocalLog{dir: filepath.Join(dir, MetadataPartitionDir), logger: logger, opts: opts}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	img, snapOffset, err := l.loadCheckpoint()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(l.dir, MetadataLogFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	img, size, err := l.replay(f, img)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.mu.file, l.mu.size, l.mu.snapshotOffset = f, size, snapOffset
	l.pub = NewPublisher(img)
	logger.Info("metadata log opened", "dir", l.dir, "offset", img.Offset(), "snapshot_offset", snapOffset, "topics", img.NumTopics())
	return l, nil
}

// loadCheckpoint returns the image of the newest checkpoint (or the empty
// image) and removes leftovers of interrupted checkpoint writes.
func (l *LocalLog) loadCheckpoint() (*Image, int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			os.Remove(filepath.Join(l.dir, e.Name()))
		}
	}
	offsets, err := listCheckpoints(l.dir)
	if err != nil {
		return nil, 0, err
	}
	if len(offsets) == 0 {
		return EmptyImage(), -1, nil
	}
	newest := offsets[len(offsets)-1]
	img, err := readCheckpoint(l.dir, newest)
	if err != nil {
		return nil, 0, err
	}
	// Older checkpoints survive only a crash between writing a new one and
	// removing them.
	for _, off := range offsets[:len(offsets)-1] {
		os.Remove(filepath.Join(l.dir, checkpointName(off)))
	}
	return img, newest, nil
}

// replay applies the log entries after img and truncates a torn tail. A
// frame with a valid CRC that does not decode or apply is not a crash
// artifact, so it fails Open rather than silently dropping committed data.
func (l *LocalLog) replay(f *os.File, img *Image) (*Image, int64, error) {
	buf, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, err
	}
	pos := 0
	for pos < len(buf) {
		payload, size, err := NextFrame(buf[pos:])
		if err != nil {
			break
		}
		offset, recs, err := DecodeBatch(payload)
		if err != nil {
			return nil, 0, fmt.Errorf("metadata log %s at byte %d: %w", f.Name(), pos, err)
		}
		switch {
		case offset <= img.Offset():
			// Covered by the checkpoint (crash after writing it, before
			// emptying the log).
		case offset != img.Offset()+int64(len(recs)):
			return nil, 0, fmt.Errorf("metadata log %s at byte %d: batch ends at offset %d, want %d",
				f.Name(), pos, offset, img.Offset()+int64(len(recs)))
		default:
			if img, err = img.Apply(offset, recs); err != nil {
				return nil, 0, fmt.Errorf("metadata log %s at byte %d: %w", f.Name(), pos, err)
			}
		}
		pos += size
	}
	if pos < len(buf) {
		l.logger.Warn("truncating torn tail of metadata log", "file", f.Name(), "valid_bytes", pos, "dropped_bytes", len(buf)-pos)
		if err := f.Truncate(int64(pos)); err != nil {
			return nil, 0, err
		}
		if err := f.Sync(); err != nil {
			return nil, 0, err
		}
	}
	return img, int64(pos), nil
}

// ErrLogClosed is returned by Commit after Close.
var ErrLogClosed = errors.New("metadata: log closed")

// Commit implements Log.
func (l *LocalLog) Commit(ctx context.Context, recs []Record) (*Image, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: empty metadata batch", kerr.InvalidRequest)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil, ErrLogClosed
	}
	if l.mu.failed != nil {
		return nil, l.mu.failed
	}
	cur := l.pub.Image()
	offset := cur.Offset() + int64(len(recs))
	next, err := cur.Apply(offset, recs)
	if err != nil {
		return nil, err
	}
	payload, err := EncodeBatch(offset, recs)
	if err != nil {
		return nil, err
	}
	if err := l.appendLocked(AppendFrame(nil, payload)); err != nil {
		return nil, err
	}
	l.pub.Publish(next)
	if next.Offset()-l.mu.snapshotOffset >= l.opts.SnapshotEveryRecords {
		// The commit is already durable; a failed checkpoint only means a
		// longer replay, so it is logged, not returned.
		if err := l.snapshotLocked(next); err != nil {
			l.logger.Error("writing metadata checkpoint", "offset", next.Offset(), "err", err)
		}
	}
	return next, nil
}

// appendLocked writes and fsyncs one frame. On failure it cuts the file back
// so a half-written frame never precedes a later one; if even that fails the
// log refuses further commits.
func (l *LocalLog) appendLocked(frame []byte) error {
	_, err := l.mu.file.WriteAt(frame, l.mu.size)
	if err == nil {
		err = l.mu.file.Sync()
	}
	if err != nil {
		err = fmt.Errorf("%w: appending to metadata log: %v", kerr.KafkaStorageError, err)
		if terr := l.mu.file.Truncate(l.mu.size); terr != nil {
			l.mu.failed = fmt.Errorf("%w: metadata log unusable after failed append: %v", kerr.KafkaStorageError, terr)
		}
		return err
	}
	l.mu.size += int64(len(frame))
	return nil
}

// snapshotLocked writes a checkpoint of img (the latest image), then empties
// the log and removes older checkpoints. Each step is safe to crash after:
// replay skips entries a checkpoint covers.
func (l *LocalLog) snapshotLocked(img *Image) error {
	if err := writeCheckpoint(l.dir, img); err != nil {
		return err
	}
	prev := l.mu.snapshotOffset
	l.mu.snapshotOffset = img.Offset()
	if err := l.mu.file.Truncate(0); err != nil {
		return err
	}
	if err := l.mu.file.Sync(); err != nil {
		return err
	}
	l.mu.size = 0
	if prev >= 0 {
		os.Remove(filepath.Join(l.dir, checkpointName(prev)))
	}
	l.logger.Info("wrote metadata checkpoint", "offset", img.Offset())
	return nil
}

// Snapshot writes a checkpoint of the current image now (e.g. at clean
// shutdown, so the next start replays nothing).
func (l *LocalLog) Snapshot() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrLogClosed
	}
	img := l.pub.Image()
	if img.Offset() < 0 || img.Offset() == l.mu.snapshotOffset {
		return nil
	}
	return l.snapshotLocked(img)
}

// Image implements Log.
func (l *LocalLog) Image() *Image { return l.pub.Image() }

// Subscribe implements Log.
func (l *LocalLog) Subscribe(fn func(old, new *Image)) { l.pub.Subscribe(fn) }

// Dir returns the metadata partition directory.
func (l *LocalLog) Dir() string { return l.dir }

// Close implements Log. Queued notifications are delivered before it returns.
func (l *LocalLog) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	err := l.mu.file.Close()
	l.mu.Unlock()
	l.pub.Close()
	return err
}
