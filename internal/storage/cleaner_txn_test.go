package storage

import (
	"fmt"
	"testing"

	"github.com/vltava/vltava/internal/record"
)

// txnKeyed is a transactional batch of keyed records.
func txnKeyed(t testing.TB, ts int64, pid int64, seq int32, recs ...kv) []byte {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: []byte(r.key), Value: r.value}
	}
	b, err := record.BuildBatch(record.Header{
		Attributes: 0x10, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq,
	}, rs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logContents is what a read_uncommitted reader of the whole log sees:
// each data record's key and value, and the markers by producer.
type logContents struct {
	values  map[string][]string // key -> values in log order
	markers map[int64][]record.Marker
	horizon map[int64]bool // producer -> its last marker carries a delete horizon
}

func readContents(t *testing.T, l *Log) logContents {
	t.Helper()
	c := logContents{values: map[string][]string{}, markers: map[int64][]record.Marker{}, horizon: map[int64]bool{}}
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewBatches(res.Data)
		for it.Next() {
			h := it.Header()
			off = h.LastOffset() + 1
			if h.IsControl() {
				m, err := record.ParseMarker(it.Batch())
				if err != nil {
					t.Fatal(err)
				}
				c.markers[h.ProducerID] = append(c.markers[h.ProducerID], m)
				c.horizon[h.ProducerID] = h.HasDeleteHorizon()
				continue
			}
			_, recs, err := record.DecodeRecords(it.Batch())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				c.values[string(r.Key)] = append(c.values[string(r.Key)], string(r.Value))
			}
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
	return c
}

// TestCompactionOfTransactions: the cleaner removes the records of an
// aborted transaction, which never shadow the committed record of their
// key; the abort marker and its .txnindex entry stay while any batch of
// the transaction does, then the marker gets a delete horizon (the index
// entry goes) and is removed once delete.retention.ms passed; a commit
// marker stays with its data. Nothing leaves a transaction open after a
// reload.
func TestCompactionOfTransactions(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	cfg := compactTestConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, OpenOptions{Now: clock.now})
	mustAppend(t, l, txnKeyed(t, clock.ms, 1, 0, kv{"k", val("committed")}), 0)
	mustAppend(t, l, txnKeyed(t, clock.ms, 2, 0, kv{"k", val("aborted")}, kv{"gone", val("aborted")}), 0)
	mustAppend(t, l, marker(t, 1, 0, true, 0), 0)
	mustAppend(t, l, marker(t, 2, 0, false, 0), 0)
	// Producer 2 goes on, so the aborted batch is not its last.
	mustAppend(t, l, txnKeyed(t, clock.ms, 2, 2, kv{"j", val("z")}), 0)
	mustAppend(t, l, marker(t, 2, 0, true, 0), 0)
	for i := range 80 {
		mustAppend(t, l, keyedBatch(t, clock.ms, record.CodecNone, -1, 0, 0, kv{fmt.Sprintf("f%d", i%10), val("x")}), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if len(l.AbortedTransactions(0, l.LogEndOffset())) != 1 {
		t.Fatal("want producer 2's aborted transaction indexed")
	}

	if _, err := l.Compact(clock.now(), 0, CleanerOptions{}); err != nil {
		t.Fatal(err)
	}
	c := readContents(t, l)
	if got := c.values["k"]; len(got) != 1 || got[0] != "committed" {
		t.Fatalf("key k after compaction: %q, want only the committed value", got)
	}
	if got := c.values["gone"]; len(got) != 0 {
		t.Fatalf("aborted record survived: %q", got)
	}
	if len(c.markers[1]) != 1 || len(c.markers[2]) != 2 {
		t.Fatalf("markers after the first clean: %+v, want all kept", c.markers)
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0].ProducerID != 2 {
		t.Fatalf("aborted transactions after the first clean: %+v, want producer 2's entry kept with its marker", got)
	}

	// Nothing of the aborted transaction is left: its marker gets a
	// horizon and its index entry goes.
	clock.ms++
	if _, err := l.Compact(clock.now(), 0, CleanerOptions{}); err != nil {
		t.Fatal(err)
	}
	c = readContents(t, l)
	if len(c.markers[2]) != 2 {
		t.Fatalf("producer 2's markers %+v: the abort marker must stay until its horizon", c.markers[2])
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions with no data left: %+v", got)
	}

	clock.ms += cfg.DeleteRetentionMs
	if _, err := l.Compact(clock.now(), 0, CleanerOptions{}); err != nil {
		t.Fatal(err)
	}
	c = readContents(t, l)
	if len(c.markers[2]) != 1 || c.markers[2][0].Type != record.ControlCommit {
		t.Fatalf("producer 2's markers %+v after the horizon, want only the commit", c.markers[2])
	}
	if len(c.markers[1]) != 1 || c.values["k"][0] != "committed" {
		t.Fatalf("the committed transaction changed: markers %+v, k %q", c.markers[1], c.values["k"])
	}
	hw := l.HighWatermark()
	if lso := l.LastStableOffset(); lso != hw {
		t.Fatalf("LSO %d, want the high watermark %d", lso, hw)
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A reload from scratch replays the cleaned log: no transaction opens.
	l = openTestLog(t, dir, cfg, OpenOptions{Now: clock.now, RecoveryPoint: 0, HighWatermark: leo})
	defer l.Close()
	if lso := l.LastStableOffset(); lso != leo {
		t.Fatalf("LSO %d after a reload, want %d: a transaction was left open", lso, leo)
	}
	if got := l.AbortedTransactions(0, leo); len(got) != 0 {
		t.Fatalf("aborted transactions after a reload: %+v", got)
	}
}
