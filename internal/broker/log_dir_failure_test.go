package broker_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage/vfs"
)

// TestFailedLogDirPartitionsAreStorageErrors: on a broker with two log
// dirs, once one dir's I/O fails (the fault test hook), its partitions
// answer produce and fetch with KAFKA_STORAGE_ERROR, DescribeLogDirs
// reports the dir with it, and the other dir's partitions keep working.
func TestFailedLogDirPartitionsAreStorageErrors(t *testing.T) {
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "a"), filepath.Join(root, "b")
	trigger := filepath.Join(root, "faults")
	t.Setenv(vfs.FaultTriggerFileEnv, trigger)
	tn := startNode(t, map[string]string{"log.dirs": d1 + "," + d2})
	c := tn.dial()
	id := createTopic(c, "jb", 2, nil)
	for p := range int32(2) {
		produce(c, "jb", p, "before")
	}

	describe := func() *kmsg.DescribeLogDirsResponse {
		return do[*kmsg.DescribeLogDirsResponse](c, 4, kmsg.NewPtrDescribeLogDirsRequest())
	}
	inDir := map[string]int32{}
	for _, d := range describe().Dirs {
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				inDir[d.Dir] = p.Partition
			}
		}
	}
	bad, good := inDir[d2], inDir[d1]
	if len(inDir) != 2 || bad == good {
		t.Fatalf("placement %v: want one partition in each dir", inDir)
	}

	if err := os.WriteFile(trigger, []byte(d2+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, "the failing dir's partition answering KAFKA_STORAGE_ERROR", func() bool {
		resp := do[*kmsg.ProduceResponse](c, 11, produceReq("jb", bad, 1, batch(t, record.CodecNone, "during")))
		return resp.Topics[0].Partitions[0].ErrorCode == kerr.KafkaStorageError.Code
	})
	within(t, 10*time.Second, "DescribeLogDirs reporting the failed dir", func() bool {
		for _, d := range describe().Dirs {
			if d.Dir == d2 {
				return d.ErrorCode == kerr.KafkaStorageError.Code && len(d.Topics) == 0
			}
		}
		return false
	})
	if p := fetchPartition(t, c, 13, fetchReq("jb", id, bad, 0)); p.ErrorCode != kerr.KafkaStorageError.Code {
		t.Errorf("fetch from the failed dir's partition: error %d, want KAFKA_STORAGE_ERROR", p.ErrorCode)
	}

	off := produce(c, "jb", good, "after")
	p := fetchPartition(t, c, 13, fetchReq("jb", id, good, 0))
	if p.ErrorCode != 0 || len(batchHeaders(t, p.RecordBatches)) != 2 || off != 1 {
		t.Errorf("healthy dir's partition: error %d, %d batches, produce offset %d; want 0, 2, 1", p.ErrorCode, len(batchHeaders(t, p.RecordBatches)), off)
	}
	for _, d := range describe().Dirs {
		if d.Dir == d1 && (d.ErrorCode != 0 || len(d.Topics) != 1) {
			t.Errorf("healthy dir described as error %d with %d topics", d.ErrorCode, len(d.Topics))
		}
	}
}
