package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// manyPartitions returns n partitions spread over a few topics.
func manyPartitions(n int) []OpenRequest {
	cfg := testConfig()
	reqs := make([]OpenRequest, n)
	for i := range reqs {
		topic := fmt.Sprintf("topic-%d", i%7)
		reqs[i] = OpenRequest{TP: TopicPartition{Topic: topic, Partition: int32(i / 7)}, TopicID: [16]byte{byte(i % 7), 1}, Cfg: cfg}
	}
	return reqs
}

func TestOpenAllOpensManyPartitionsInParallel(t *testing.T) {
	const n = 500
	d1, d2 := t.TempDir(), t.TempDir()
	reqs := manyPartitions(n)

	m := openTestManager(t, d1, d2)
	logs, err := m.OpenAll(reqs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != n || len(m.Logs()) != n {
		t.Fatalf("opened %d logs (manager has %d), want %d", len(logs), len(m.Logs()), n)
	}
	perDir := map[string]int{}
	for i, r := range reqs {
		l := logs[r.TP]
		if l == nil || m.Get(r.TP) != l {
			t.Fatalf("%s: returned log %p, manager has %p", r.TP, l, m.Get(r.TP))
		}
		perDir[m.DirOf(r.TP)]++
		// Give each log distinct content to check after the restart.
		for range 1 + i%3 {
			mustAppend(t, l, simple(2, 20, 1), 0)
		}
	}
	// New partitions are balanced over the dirs even when created at once.
	if perDir[d1] < n/2-1 || perDir[d2] < n/2-1 {
		t.Fatalf("partitions per dir %v, want about %d each", perDir, n/2)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: the same call now recovers every existing log, in its dir.
	m = openTestManager(t, d1, d2)
	defer m.Close()
	if got := len(m.Existing()); got != n {
		t.Fatalf("found %d partitions on disk, want %d", got, n)
	}
	logs, err = m.OpenAll(reqs, 8)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if want := int64(2 * (1 + i%3)); logs[r.TP].LogEndOffset() != want {
			t.Fatalf("%s after restart: LEO %d, want %d", r.TP, logs[r.TP].LogEndOffset(), want)
		}
	}
	if len(m.Existing()) != 0 {
		t.Fatalf("partitions still pending after OpenAll: %v", m.Existing())
	}
}

func TestOpenAllReportsFailuresAndKeepsTheRest(t *testing.T) {
	m := openTestManager(t, t.TempDir())
	defer m.Close()
	reqs := manyPartitions(20)
	if _, err := m.OpenAll(reqs[:1], 1); err != nil {
		t.Fatal(err)
	}
	reqs[0].TopicID = [16]byte{0xff} // conflicts with the log just created
	logs, err := m.OpenAll(reqs, 4)
	if !errors.Is(err, kerr.InconsistentTopicID) {
		t.Fatalf("OpenAll with a conflicting topic id: %v, want INCONSISTENT_TOPIC_ID", err)
	}
	if len(logs) != len(reqs)-1 || logs[reqs[0].TP] != nil {
		t.Fatalf("got %d logs (conflicting one present: %v), want the %d others", len(logs), logs[reqs[0].TP] != nil, len(reqs)-1)
	}
}

// TestGetOrCreateOpensEachLogOnce races many callers for the same
// partitions, on disk and new, with the race detector watching.
func TestGetOrCreateOpensEachLogOnce(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir)
	onDisk := TopicPartition{Topic: "old", Partition: 0}
	l, err := m.GetOrCreate(onDisk, [16]byte{1}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simple(3, 10, 1), 0)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m = openTestManager(t, dir)
	defer m.Close()
	tps := []TopicPartition{onDisk, {Topic: "new", Partition: 0}, {Topic: "new", Partition: 1}}
	const callers = 16
	got := make([][callers]*Log, len(tps))
	var wg sync.WaitGroup
	for i, tp := range tps {
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := m.GetOrCreate(tp, [16]byte{1}, testConfig())
				if err != nil {
					t.Error(err)
					return
				}
				got[i][c] = l
				l.LogEndOffset()
			}()
		}
	}
	wg.Wait()
	for i, tp := range tps {
		for c := range callers {
			if got[i][c] == nil || got[i][c] != got[i][0] {
				t.Fatalf("%s: caller %d got log %p, caller 0 got %p", tp, c, got[i][c], got[i][0])
			}
		}
	}
	if l := m.Get(onDisk); l.LogEndOffset() != 3 {
		t.Fatalf("recovered log has LEO %d, want 3", l.LogEndOffset())
	}
}

// TestDeleteDuringOpenKeepsManagerAndDiskInAgreement races Delete with
// GetOrCreate of the same partitions: whichever wins, a partition is open
// exactly when its directory exists.
func TestDeleteDuringOpenKeepsManagerAndDiskInAgreement(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir)
	defer m.Close()
	reqs := manyPartitions(30)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if _, err := m.OpenAll(reqs, 4); err != nil {
			t.Error(err)
		}
	}()
	go func() {
		defer wg.Done()
		for _, r := range reqs {
			if err := m.Delete(r.TP); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	for _, r := range reqs {
		_, statErr := os.Stat(filepath.Join(dir, r.TP.String()))
		if open := m.Get(r.TP) != nil; open != (statErr == nil) {
			t.Fatalf("%s: open=%v but directory stat says %v", r.TP, open, statErr)
		}
	}
}

// TestCloseDuringOpenAll: Close waits for opens in flight, which close their
// logs themselves, so the shutdown is clean and every log reopens intact.
func TestCloseDuringOpenAll(t *testing.T) {
	dir := t.TempDir()
	m := openTestManager(t, dir)
	reqs := manyPartitions(60)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = m.OpenAll(reqs, 4) // some fail with the manager closed
	}()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := m.GetOrCreate(reqs[0].TP, reqs[0].TopicID, reqs[0].Cfg); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("GetOrCreate after Close: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := os.Stat(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	m = openTestManager(t, dir)
	defer m.Close()
	if _, err := m.OpenAll(reqs, 0); err != nil {
		t.Fatal(err)
	}
}
