package metadata

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func openTestLog(t *testing.T, dir string, opts LocalLogOptions) *LocalLog {
	t.Helper()
	l, err := OpenLocalLogWithOptions(dir, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustCommit(t *testing.T, l Log, recs ...Record) *Image {
	t.Helper()
	img, err := l.Commit(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// commitTopics commits n single-partition topics, one batch each.
func commitTopics(t *testing.T, l Log, prefix string, n int) {
	t.Helper()
	for i := range n {
		mustCommit(t, l, topicRecords(fmt.Sprintf("%s%d", prefix, i), NewUuid(), 2, 0)...)
	}
}

func TestLocalLogReplayAfterReopen(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, LocalLogOptions{})
	commitTopics(t, l, "t", 10)
	mustCommit(t, l, &ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "t3", Name: "retention.ms", Value: StringPtr("9")})
	mustCommit(t, l, &RemoveTopicRecord{TopicID: mustTopic(t, l.Image(), "t4").ID})
	before := l.Image()
	if before.Offset() != 10*3+2-1 {
		t.Fatalf("offset %d: offsets are not dense", before.Offset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Commit(context.Background(), []Record{&RemoveTopicRecord{}}); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("commit after close: %v", err)
	}

	l2 := openTestLog(t, dir, LocalLogOptions{})
	defer l2.Close()
	assertImagesEqual(t, l2.Image(), before)
	if _, ok := l2.Image().Topic("t4"); ok {
		t.Fatal("removed topic came back")
	}
	// Appends continue at the next offset.
	next := mustCommit(t, l2, topicRecords("after", NewUuid(), 1, 0)...)
	if next.Offset() != before.Offset()+2 {
		t.Fatalf("offset after reopen %d, want %d", next.Offset(), before.Offset()+2)
	}
}

func mustTopic(t *testing.T, img *Image, name string) *TopicImage {
	t.Helper()
	top, ok := img.Topic(name)
	if !ok {
		t.Fatalf("no topic %q", name)
	}
	return top
}

func TestLocalLogRejectedBatchWritesNothing(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, LocalLogOptions{})
	defer l.Close()
	mustCommit(t, l, topicRecords("a", NewUuid(), 1, 0)...)
	size := fileSize(t, filepath.Join(l.Dir(), MetadataLogFile))
	_, err := l.Commit(context.Background(), []Record{&PartitionRecord{TopicID: NewUuid(), Replicas: []int32{0}}})
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("got %v, want INVALID_REQUEST", err)
	}
	if got := fileSize(t, filepath.Join(l.Dir(), MetadataLogFile)); got != size {
		t.Fatalf("log grew from %d to %d bytes for a rejected batch", size, got)
	}
	if _, err := l.Commit(context.Background(), nil); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("empty batch: %v", err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestLocalLogTruncatesTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage returns the new file content given the content and the
		// size before the last commit.
		damage func(data []byte, lastStart int) []byte
	}{
		{"cut mid payload", func(d []byte, s int) []byte { return d[:s+(len(d)-s)/2] }},
		{"cut mid header", func(d []byte, s int) []byte { return d[:s+3] }},
		{"corrupt last byte", func(d []byte, s int) []byte { d[len(d)-1] ^= 0xff; return d }},
		{"zeros appended", func(d []byte, s int) []byte { return append(d, make([]byte, 64)...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, dir, LocalLogOptions{})
			commitTopics(t, l, "keep", 3)
			kept := l.Image()
			path := filepath.Join(l.Dir(), MetadataLogFile)
			lastStart := int(fileSize(t, path))
			mustCommit(t, l, topicRecords("torn", NewUuid(), 1, 0)...)
			l.Close()

			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damaged := tc.damage(data, lastStart)
			if err := os.WriteFile(path, damaged, 0o644); err != nil {
				t.Fatal(err)
			}

			l2 := openTestLog(t, dir, LocalLogOptions{})
			defer l2.Close()
			want := kept
			if tc.name == "zeros appended" {
				want = nil // the last commit is intact; only the zeros go
			}
			if want != nil {
				assertImagesEqual(t, l2.Image(), want)
				if got := fileSize(t, path); got != int64(lastStart) {
					t.Fatalf("file is %d bytes after recovery, want %d", got, lastStart)
				}
			} else {
				mustTopic(t, l2.Image(), "torn")
				if got := fileSize(t, path); got != int64(len(data)) {
					t.Fatalf("file is %d bytes after recovery, want %d", got, len(data))
				}
			}
			// The log is usable after recovery and survives another reopen.
			mustCommit(t, l2, topicRecords("later", NewUuid(), 1, 0)...)
			after := l2.Image()
			l2.Close()
			l3 := openTestLog(t, dir, LocalLogOptions{})
			defer l3.Close()
			assertImagesEqual(t, l3.Image(), after)
		})
	}
}

func TestLocalLogCorruptMiddleEntryWithValidCRCFailsOpen(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, LocalLogOptions{})
	mustCommit(t, l, topicRecords("a", NewUuid(), 1, 0)...)
	l.Close()
	// A CRC-valid frame whose batch does not apply is not a torn write.
	payload, err := EncodeBatch(100, []Record{&RemoveTopicRecord{TopicID: NewUuid()}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, MetadataPartitionDir, MetadataLogFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(AppendFrame(nil, payload))
	f.Close()
	if _, err := OpenLocalLog(dir, nil); err == nil {
		t.Fatal("open accepted a log with a gap in offsets")
	}
}

func TestLocalLogSnapshotAndReplay(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, LocalLogOptions{SnapshotEveryRecords: 10})
	// Batches of 3 records end at offsets 2, 5, 8, 11 (12 records: first
	// checkpoint), 14, 17, 20, then the producer ids record at 21 (10 more:
	// second checkpoint, which replaces the first and empties the log).
	commitTopics(t, l, "t", 7)
	mustCommit(t, l, &ProducerIDsRecord{BrokerID: 1, NextProducerID: 1000})
	before := l.Image()
	l.Close()

	offsets, err := listCheckpoints(filepath.Join(dir, MetadataPartitionDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(offsets) != 1 || offsets[0] != before.Offset() {
		t.Fatalf("checkpoints %v, want exactly [%d]", offsets, before.Offset())
	}
	// Everything up to the checkpoint is out of the log: replay is short.
	if logSize := fileSize(t, filepath.Join(dir, MetadataPartitionDir, MetadataLogFile)); logSize != 0 {
		t.Fatalf("log holds %d bytes already covered by the checkpoint", logSize)
	}

	l2 := openTestLog(t, dir, LocalLogOptions{SnapshotEveryRecords: 10})
	assertImagesEqual(t, l2.Image(), before)
	if l2.Image().NextProducerID() != 1000 {
		t.Fatal("producer id block lost")
	}
	// Explicit snapshot at shutdown: next open replays nothing.
	mustCommit(t, l2, topicRecords("x", NewUuid(), 1, 0)...)
	if err := l2.Snapshot(); err != nil {
		t.Fatal(err)
	}
	final := l2.Image()
	l2.Close()
	if got := fileSize(t, filepath.Join(dir, MetadataPartitionDir, MetadataLogFile)); got != 0 {
		t.Fatalf("log is %d bytes after snapshot", got)
	}
	l3 := openTestLog(t, dir, LocalLogOptions{})
	defer l3.Close()
	assertImagesEqual(t, l3.Image(), final)
}

// A crash after writing a checkpoint but before emptying the log leaves
// entries the checkpoint covers; replay must skip them, not apply twice.
func TestLocalLogCrashBetweenCheckpointAndTruncate(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, LocalLogOptions{})
	commitTopics(t, l, "t", 3)
	mid := l.Image()
	if err := writeCheckpoint(l.Dir(), mid); err != nil {
		t.Fatal(err)
	}
	commitTopics(t, l, "u", 2)
	before := l.Image()
	l.Close()
	os.WriteFile(filepath.Join(dir, MetadataPartitionDir, "junk"+checkpointSuffix+tmpSuffix), []byte("partial"), 0o644)

	l2 := openTestLog(t, dir, LocalLogOptions{})
	defer l2.Close()
	assertImagesEqual(t, l2.Image(), before)
	if _, err := os.Stat(filepath.Join(dir, MetadataPartitionDir, "junk"+checkpointSuffix+tmpSuffix)); !os.IsNotExist(err) {
		t.Fatal("leftover temporary checkpoint not removed")
	}
}

func TestLocalLogCorruptCheckpointFailsOpen(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, LocalLogOptions{})
	commitTopics(t, l, "t", 2)
	if err := l.Snapshot(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	path := filepath.Join(dir, MetadataPartitionDir, checkpointName(l.Image().Offset()))
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0xff
	os.WriteFile(path, data, 0o644)
	if _, err := OpenLocalLog(dir, nil); err == nil {
		t.Fatal("open accepted a corrupt checkpoint (the records it covers are gone)")
	}
}

func TestLocalLogSubscribersSeeEveryChangeInOrder(t *testing.T) {
	l := openTestLog(t, t.TempDir(), LocalLogOptions{})
	var mu sync.Mutex
	var seen []int64
	prev := l.Image()
	l.Subscribe(func(old, new *Image) {
		mu.Lock()
		defer mu.Unlock()
		if old != prev {
			t.Errorf("change at %d: old image is not the previous new image", new.Offset())
		}
		prev = new
		seen = append(seen, new.Offset())
	})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			commitTopics(t, l, fmt.Sprintf("w%d-", w), 5)
		}()
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw %d changes, want 20", n)
		}
		time.Sleep(time.Millisecond)
	}
	l.Close()
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(seen); i++ {
		if seen[i] <= seen[i-1] {
			t.Fatalf("notifications out of order: %v", seen)
		}
	}
	if seen[len(seen)-1] != l.Image().Offset() {
		t.Fatalf("last notification %d, image at %d", seen[len(seen)-1], l.Image().Offset())
	}
}

func TestLocalLogCommitHonoursCanceledContext(t *testing.T) {
	l := openTestLog(t, t.TempDir(), LocalLogOptions{})
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Commit(ctx, topicRecords("a", NewUuid(), 1, 0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if l.Image().NumTopics() != 0 {
		t.Fatal("canceled commit applied")
	}
}
