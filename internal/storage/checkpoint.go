package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Checkpoint file names inside a log dir, as Kafka names them.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	HighWatermarkCheckpointFile  = "replication-offset-checkpoint"
	LeaderEpochCheckpointFile    = "leader-epoch-checkpoint"
	CleanShutdownFile            = ".vltava_cleanshutdown"
	PartitionMetadataFile        = "partition.metadata"
)

// checkpointVersion is the only version of Kafka's text checkpoint format.
const checkpointVersion = 0

// writeFileAtomically replaces path with data: write to path.tmp, fsync it,
// rename over path and fsync the directory, so a crash leaves either the old
// or the new contents (Kafka's CheckpointFile does the same).
func writeFileAtomically(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeFileReplacing replaces path with data through a rename, without
// fsync: readers see the old or the new content, never a mix, but a crash
// may lose the write or leave the file empty.
func writeFileReplacing(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// syncDir fsyncs a directory so renames and creations inside it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeCheckpointLines writes Kafka's checkpoint text format:
// "<version>\n<count>\n<line>\n...".
func writeCheckpointLines(path string, lines []string) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	return writeFileAtomically(path, buf.Bytes())
}

// readCheckpointLines reads a checkpoint written by writeCheckpointLines and
// returns its entry lines. A missing file yields no lines and no error.
func readCheckpointLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	v, ok := next()
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: empty file", path)
	}
	if v != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("checkpoint %s: unsupported version %q", path, v)
	}
	c, ok := next()
	if !ok {
		return nil, fmt.Errorf("checkpoint %s: missing entry count", path)
	}
	n, err := strconv.Atoi(c)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("checkpoint %s: bad entry count %q", path, c)
	}
	// The count comes from the file: a damaged one must not make us
	// allocate for it before the lines are there.
	lines := make([]string, 0, min(n, 1024))
	for len(lines) < n {
		l, ok := next()
		if !ok {
			return nil, fmt.Errorf("checkpoint %s: expected %d entries, found %d", path, n, len(lines))
		}
		lines = append(lines, l)
	}
	return lines, nil
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// WriteOffsetCheckpoint writes a per-partition offset checkpoint
// (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint): "0\n<count>\n<topic> <partition> <offset>\n...".
// Entries are sorted so the file is deterministic.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeCheckpointLines(path, lines)
}

// ReadOffsetCheckpoint reads a file written by WriteOffsetCheckpoint. A
// missing file is an empty checkpoint.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	lines, err := readCheckpointLines(path)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("checkpoint %s: malformed line %q", path, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("checkpoint %s: malformed line %q", path, l)
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}
