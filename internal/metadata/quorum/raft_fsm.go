package quorum

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/hashicorp/raft"

	"github.com/vltava/vltava/internal/metadata"
)

// raftFSM is the raft state machine of the metadata quorum: each committed
// raft command entry is one metadata batch (EncodeBatch payload), applied to
// the Image with Image.Apply and published through the Publisher, on every
// node in raft log order.
//
// Offsets: a batch of n records applied to an image at offset o yields offset
// o+n, exactly as in LocalLog, so record offsets stay dense and identical on
// every node. The offset written in the payload by the leader is advisory;
// the FSM recomputes it, because only the FSM knows which earlier entries
// were applied. An entry that does not apply (a leader validated it against
// an image that missed a concurrent change) is skipped identically on every
// node, since Apply is deterministic, and its error is returned to the
// committing leader through the apply future.
//
// Snapshot format (one raft snapshot): a single frame (see frame.go) whose
// payload is EncodeBatch(image.Offset(), image.Records()), the same content
// as a LocalLog checkpoint.
//
// Thread-safety: raft calls Apply, Snapshot and Restore from its single FSM
// goroutine, which makes it the Publisher's one publishing goroutine.
// Persist runs on another goroutine but only reads an immutable Image.
type raftFSM struct {
	pub    *metadata.Publisher
	logger *slog.Logger
}

var _ raft.FSM = (*raftFSM)(nil)

// raftApplyResult is what Apply returns through raft's ApplyFuture.Response.
type raftApplyResult struct {
	img *metadata.Image
	err error
}

// Apply implements raft.FSM.
func (f *raftFSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	_, recs, err := metadata.DecodeBatch(l.Data)
	if err != nil {
		// A corrupt committed entry is skipped everywhere alike; it cannot
		// be repaired by retrying.
		f.logger.Error("skipping undecodable metadata entry", "raft_index", l.Index, "err", err)
		return raftApplyResult{err: err}
	}
	if len(recs) == 0 {
		return raftApplyResult{img: f.pub.Image()}
	}
	cur := f.pub.Image()
	next, err := cur.Apply(cur.Offset()+int64(len(recs)), recs)
	if err != nil {
		f.logger.Warn("skipping metadata entry that does not apply", "raft_index", l.Index, "err", err)
		return raftApplyResult{err: err}
	}
	f.pub.Publish(next)
	return raftApplyResult{img: next}
}

// Snapshot implements raft.FSM. Images are immutable, so capturing the
// current one is the whole point-in-time copy.
func (f *raftFSM) Snapshot() (raft.FSMSnapshot, error) {
	return imageSnapshot{img: f.pub.Image()}, nil
}

// Restore implements raft.FSM: replace the image with the snapshot's.
func (f *raftFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := readImageSnapshot(rc)
	if err != nil {
		return err
	}
	f.pub.Publish(img)
	f.logger.Info("restored metadata snapshot", "offset", img.Offset(), "topics", img.NumTopics())
	return nil
}

func readImageSnapshot(r io.Reader) (*metadata.Image, error) {
	buf, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("metadata: reading raft snapshot: %w", err)
	}
	payload, size, err := metadata.NextFrame(buf)
	if err != nil || size != len(buf) {
		return nil, fmt.Errorf("metadata: raft snapshot of %d bytes is corrupt", len(buf))
	}
	offset, recs, err := metadata.DecodeBatch(payload)
	if err != nil {
		return nil, fmt.Errorf("metadata: raft snapshot: %w", err)
	}
	if offset < 0 {
		return metadata.EmptyImage(), nil
	}
	img, err := metadata.EmptyImage().Apply(offset, recs)
	if err != nil {
		return nil, fmt.Errorf("metadata: raft snapshot: %w", err)
	}
	return img, nil
}

// imageSnapshot is one image being written as a raft snapshot.
type imageSnapshot struct{ img *metadata.Image }

// Persist implements raft.FSMSnapshot.
func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	payload, err := metadata.EncodeBatch(s.img.Offset(), s.img.Records())
	if err == nil {
		_, err = sink.Write(metadata.AppendFrame(nil, payload))
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("metadata: writing raft snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (imageSnapshot) Release() {}
