package metadata

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A checkpoint ("<offset>.checkpoint", offset zero-padded to 20 digits so
// names sort by offset) is a snapshot of the image at offset: one frame whose
// payload is EncodeBatch(offset, image.Records()). Replay starts from the
// newest checkpoint and applies only the log entries after it, which is why
// LocalLog empties metadata.log after writing one. Checkpoints are written to
// a ".tmp" file, fsynced and renamed, so a crash leaves either the old or the
// new checkpoint, never a partial one.

const (
	checkpointSuffix = ".checkpoint"
	tmpSuffix        = ".tmp"
)

func checkpointName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, checkpointSuffix)
}

// listCheckpoints returns the offsets of the checkpoints in dir, ascending.
func listCheckpoints(dir string) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var offsets []int64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, checkpointSuffix) {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSuffix(name, checkpointSuffix), 10, 64)
		if err != nil || off < 0 {
			continue
		}
		offsets = append(offsets, off)
	}
	slices.Sort(offsets)
	return offsets, nil
}

// writeCheckpoint durably writes the snapshot of img.
func writeCheckpoint(dir string, img *Image) error {
	payload, err := EncodeBatch(img.Offset(), img.Records())
	if err != nil {
		return err
	}
	final := filepath.Join(dir, checkpointName(img.Offset()))
	return writeFileAtomic(final, AppendFrame(nil, payload))
}

// readCheckpoint loads the checkpoint at offset. Unlike a log tail, a damaged
// checkpoint is an error: the log entries it covers are gone.
func readCheckpoint(dir string, offset int64) (*Image, error) {
	path := filepath.Join(dir, checkpointName(offset))
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	payload, size, err := NextFrame(buf)
	if err != nil || size != len(buf) {
		return nil, fmt.Errorf("metadata: checkpoint %s is corrupt", path)
	}
	off, recs, err := DecodeBatch(payload)
	if err != nil {
		return nil, fmt.Errorf("metadata: checkpoint %s: %w", path, err)
	}
	if off != offset {
		return nil, fmt.Errorf("metadata: checkpoint %s holds offset %d", path, off)
	}
	img, err := EmptyImage().Apply(offset, recs)
	if err != nil {
		return nil, fmt.Errorf("metadata: checkpoint %s: %w", path, err)
	}
	return img, nil
}

// writeFileAtomic writes data to path via a fsynced temporary file and a
// rename, then fsyncs the directory so the rename itself is durable.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
