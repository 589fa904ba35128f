package storage

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/record"
)

func TestManagerCleanerPicksLogsByDirtyRatioAndLag(t *testing.T) {
	now := time.Now().UnixMilli()
	tests := []struct {
		name        string
		compact     bool
		ratio       float64
		maxLagMs    int64
		firstTs     int64
		wantCleaned bool
	}{
		{"dirty ratio above min.cleanable.dirty.ratio", true, 0.5, math.MaxInt64, now, true},
		{"a never-cleaned log is 100% dirty: ratio 1 qualifies (at least)", true, 1, math.MaxInt64, now, true},
		{"delete policy is never compacted", false, 0.01, math.MaxInt64, now, false},
		{"max.compaction.lag.ms forces a clean", true, 1, 60_000, now - 120_000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Logger: quietLogger(), CleanerDisabled: true})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			cfg := compactTestConfig()
			cfg.Compact, cfg.Delete = tc.compact, !tc.compact
			cfg.MinCleanableDirtyRatio = tc.ratio
			cfg.MaxCompactionLagMs = tc.maxLagMs
			tp := TopicPartition{Topic: "c", Partition: 0}
			l, err := m.GetOrCreate(tp, [16]byte{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var p produced
			for i := range 100 {
				appendKeyed(t, l, &p, tc.firstTs+int64(i), record.CodecNone, kv{fmt.Sprintf("k%d", i%4), val(fmt.Sprint(i))})
			}
			l.SetHighWatermark(l.LogEndOffset())
			size := l.Size()
			if err := m.CleanNow(); err != nil {
				t.Fatal(err)
			}
			cleaned := l.Size() < size
			if cleaned != tc.wantCleaned {
				t.Fatalf("cleaned=%v, want %v", cleaned, tc.wantCleaned)
			}
			cp, err := ReadOffsetCheckpoint(filepath.Join(dir, CleanerCheckpointFile))
			if err != nil {
				t.Fatal(err)
			}
			active := l.segmentList()[l.NumSegments()-1].baseOffset
			if tc.wantCleaned && (cp[tp] != active || m.CleanerCheckpoint(tp) != active) {
				t.Fatalf("cleaner-offset-checkpoint has %d for %s, want %d", cp[tp], tp, active)
			}
			if !tc.wantCleaned && len(cp) != 0 {
				t.Fatalf("checkpoint written for an uncleaned log: %v", cp)
			}
		})
	}
}

func TestManagerCleanerCheckpointLimitsNextClean(t *testing.T) {
	dir := t.TempDir()
	tp := TopicPartition{Topic: "c", Partition: 0}
	cfg := compactTestConfig()
	cfg.MinCleanableDirtyRatio = 0.5
	open := func() (*Manager, *Log) {
		m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Logger: quietLogger(), CleanerDisabled: true})
		if err != nil {
			t.Fatal(err)
		}
		l, err := m.GetOrCreate(tp, [16]byte{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m, l
	}
	m, l := open()
	var p produced
	for i := range 100 {
		appendKeyed(t, l, &p, time.Now().UnixMilli(), record.CodecNone, kv{fmt.Sprintf("k%d", i%4), val(fmt.Sprint(i))})
	}
	l.SetHighWatermark(l.LogEndOffset())
	if err := m.CleanNow(); err != nil {
		t.Fatal(err)
	}
	cp := m.CleanerCheckpoint(tp)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// After a restart the checkpoint is read back: with nothing new, the
	// log is clean and another pass changes nothing.
	m, l = open()
	defer m.Close()
	if got := m.CleanerCheckpoint(tp); got != cp || cp == 0 {
		t.Fatalf("checkpoint after restart %d, want %d (non-zero)", got, cp)
	}
	l.SetHighWatermark(l.LogEndOffset())
	r := l.cleanableRange(time.Now().UnixMilli(), cp)
	if r.dirtyBytes != 0 || r.firstDirty != cp {
		t.Fatalf("dirty range after a full clean: %+v", r)
	}
	if cleaned, err := m.cleaner.cleanFilthiestLog(time.Now(), nil); err != nil || cleaned {
		t.Fatalf("clean log cleaned again: %v %v", cleaned, err)
	}
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadOffsetCheckpoint(filepath.Join(dir, CleanerCheckpointFile)); len(got) != 0 {
		t.Fatalf("deleted partition still in cleaner checkpoint: %v", got)
	}
}

func TestManagerBackgroundCleanerCompactsAndStops(t *testing.T) {
	dir := t.TempDir()
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Logger: quietLogger(), CleanerBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{Topic: "__consumer_offsets", Partition: 3}
	l, err := m.GetOrCreate(tp, [16]byte{}, compactTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	var p produced
	for i := range 100 {
		appendKeyed(t, l, &p, time.Now().UnixMilli(), record.CodecNone, kv{fmt.Sprintf("g%d", i%3), val(fmt.Sprint(i))})
	}
	l.SetHighWatermark(l.LogEndOffset())
	m.Start()
	active := l.segmentList()[l.NumSegments()-1].baseOffset
	deadline := time.Now().Add(10 * time.Second)
	for m.CleanerCheckpoint(tp) < active {
		if time.Now().After(deadline) {
			t.Fatal("background cleaner did not compact the log")
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkCompacted(t, l, &p, active, true)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
