package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), RecoveryPointCheckpointFile)
	in := map[TopicPartition]int64{{"a-b", 3}: 42, {"a", 0}: 7}
	if err := WriteOffsetCheckpoint(path, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "0\n2\na 0 7\na-b 3 42\n" {
		t.Fatalf("file contents %q", data)
	}
	out, err := ReadOffsetCheckpoint(path)
	if err != nil || len(out) != 2 || out[TopicPartition{"a-b", 3}] != 42 || out[TopicPartition{"a", 0}] != 7 {
		t.Fatalf("read back %v %v", out, err)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\na 0 7\n", "0\n1\na x 7\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadOffsetCheckpoint(path); err == nil {
			t.Errorf("accepted malformed checkpoint %q", bad)
		}
	}
	if m, err := ReadOffsetCheckpoint(filepath.Join(t.TempDir(), "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing checkpoint: %v %v", m, err)
	}
}

func openTestManager(t *testing.T, dirs ...string) *Manager {
	t.Helper()
	m, err := OpenManager(ManagerConfig{Dirs: dirs, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManagerLifecycle(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := openTestManager(t, d1, d2)
	id := [16]byte{1, 2, 3}
	cfg := testConfig()
	tps := []TopicPartition{{"orders", 0}, {"orders", 1}, {"my-topic", 2}, {"x", 0}}
	for _, tp := range tps {
		l, err := m.GetOrCreate(tp, id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			mustAppend(t, l, simple(2, 10, 1), 0)
		}
		l.SetHighWatermark(8)
	}
	// Partitions spread over both dirs.
	if m.DirOf(tps[0]) == m.DirOf(tps[1]) {
		t.Fatalf("both partitions placed in %s", m.DirOf(tps[0]))
	}
	if _, err := m.GetOrCreate(tps[0], [16]byte{9}, cfg); !errors.Is(err, kerr.InconsistentTopicID) {
		t.Fatalf("mismatched topic id: %v", err)
	}
	if _, err := m.Get(tps[2]).DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(tps[3]); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{d1, d2} {
		if _, err := os.Stat(filepath.Join(d, CleanShutdownFile)); err != nil {
			t.Fatalf("no clean shutdown marker in %s", d)
		}
	}
	meta, err := os.ReadFile(filepath.Join(m.DirOf(tps[0]), "orders-0", PartitionMetadataFile))
	if err != nil || string(meta) != "version: 0\ntopic_id: "+encodeTopicID(id)+"\n" {
		t.Fatalf("partition.metadata %q %v", meta, err)
	}

	m = openTestManager(t, d1, d2)
	defer m.Close()
	got := m.Existing()
	if len(got) != 3 || got[0] != tps[2] || got[1] != tps[0] || got[2] != tps[1] {
		t.Fatalf("Existing = %v", got)
	}
	if gotID, ok, err := m.ExistingTopicID(tps[0]); err != nil || !ok || gotID != id {
		t.Fatalf("ExistingTopicID = %v %v %v", gotID, ok, err)
	}
	for _, tp := range tps[:3] {
		l, err := m.GetOrCreate(tp, [16]byte{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 10 || l.HighWatermark() != 8 || l.RecoveryPoint() != 10 || l.TopicID() != id {
			t.Fatalf("%s after restart: LEO %d HW %d RP %d", tp, l.LogEndOffset(), l.HighWatermark(), l.RecoveryPoint())
		}
	}
	if m.Get(tps[2]).LogStartOffset() != 4 {
		t.Fatalf("log start offset not restored: %d", m.Get(tps[2]).LogStartOffset())
	}
	if _, err := os.Stat(filepath.Join(d1, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("clean shutdown marker not removed at open")
	}
	if m.Get(tps[3]) != nil || m.DirOf(tps[3]) != "" {
		t.Fatal("deleted partition came back")
	}
}

func TestManagerRemovesDeleteDirsAndDetectsUncleanShutdown(t *testing.T) {
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, "gone-0.0123456789abcdef0123456789abcdef-delete"), 0o755)
	m := openTestManager(t, d)
	l, err := m.GetOrCreate(TopicPartition{"t", 0}, [16]byte{}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simple(1, 10, 1), 0)
	if err := m.CheckpointAll(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(d)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-delete") {
			t.Fatalf("%s not removed", e.Name())
		}
	}
	crash(l) // no Close: no marker
	m2 := openTestManager(t, d)
	defer m2.Close()
	if m2.dirs[0].cleanShutdown {
		t.Fatal("crash taken for a clean shutdown")
	}
	l2, err := m2.GetOrCreate(TopicPartition{"t", 0}, [16]byte{}, testConfig())
	if err != nil || l2.LogEndOffset() != 1 {
		t.Fatalf("after crash: %v LEO %d", err, l2.LogEndOffset())
	}
}

func TestManagerBackgroundLoops(t *testing.T) {
	d := t.TempDir()
	m, err := OpenManager(ManagerConfig{Dirs: []string{d}, Logger: quietLogger(),
		RetentionCheckInterval: 10 * time.Millisecond, FlushCheckInterval: 10 * time.Millisecond, CheckpointInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.FlushMs = 1
	l, err := m.GetOrCreate(TopicPartition{"bg", 0}, [16]byte{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for l.NumSegments() < 3 {
		mustAppend(t, l, simple(1, 100, 1), 0) // timestamps from 1970: expired
	}
	l.SetHighWatermark(l.LogEndOffset())
	cfg.RetentionMs = 1000
	l.UpdateConfig(cfg)
	m.Start()
	defer m.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cp, _ := ReadOffsetCheckpoint(filepath.Join(d, RecoveryPointCheckpointFile))
		done := l.NumSegments() == 1 && l.LogStartOffset() == l.LogEndOffset() && cp[TopicPartition{"bg", 0}] == l.LogEndOffset()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background loops did not converge: segments %d start %d end %d checkpoint %v", l.NumSegments(), l.LogStartOffset(), l.LogEndOffset(), cp)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
