package quorum

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/vltava/vltava/internal/metadata"
)

func openTestRaftStore(t *testing.T, path string) *raftStore {
	t.Helper()
	s, err := openRaftStore(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRaftStoreLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), RaftStoreFile)
	s := openTestRaftStore(t, path)
	if first, _ := s.FirstIndex(); first != 0 {
		t.Fatalf("empty store first index %d, want 0", first)
	}
	at := time.Unix(1700000000, 123456789)
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1 + i/5, Type: raft.LogCommand, Data: []byte{byte(i)}, AppendedAt: at})
	}
	logs[2].Extensions = []byte("ext")
	logs[3].Data = nil
	logs[3].Type = raft.LogNoop
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		deleteLo    uint64
		deleteHi    uint64
		first, last uint64
	}{
		{name: "all stored", first: 1, last: 10},
		{name: "prefix compaction", deleteLo: 1, deleteHi: 4, first: 5, last: 10},
		{name: "suffix removal (conflicting entries)", deleteLo: 9, deleteHi: 10, first: 5, last: 8},
	}
	for _, tc := range tests {
		if tc.deleteHi > 0 {
			if err := s.DeleteRange(tc.deleteLo, tc.deleteHi); err != nil {
				t.Fatal(err)
			}
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		if first != tc.first || last != tc.last {
			t.Fatalf("%s: first/last %d/%d, want %d/%d", tc.name, first, last, tc.first, tc.last)
		}
		for i := uint64(1); i <= 10; i++ {
			var got raft.Log
			err := s.GetLog(i, &got)
			if i < tc.first || i > tc.last {
				if !errors.Is(err, raft.ErrLogNotFound) {
					t.Fatalf("%s: GetLog(%d) = %v, want ErrLogNotFound", tc.name, i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: GetLog(%d): %v", tc.name, i, err)
			}
			if want := logs[i-1]; !reflect.DeepEqual(&got, want) {
				t.Fatalf("%s: GetLog(%d) = %+v, want %+v", tc.name, i, got, *want)
			}
		}
	}

	// Entries survive a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestRaftStore(t, path)
	defer s.Close()
	var got raft.Log
	if err := s.GetLog(7, &got); err != nil || !reflect.DeepEqual(&got, logs[6]) {
		t.Fatalf("after reopen GetLog(7) = %+v, %v", got, err)
	}
}

func TestRaftStoreStable(t *testing.T) {
	path := filepath.Join(t.TempDir(), RaftStoreFile)
	s := openTestRaftStore(t, path)
	// raft reads its term at start and treats exactly "not found" as "new".
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Fatalf("missing key: %v, want \"not found\"", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("node-2")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestRaftStore(t, path)
	defer s.Close()
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("term %d, %v", v, err)
	}
	if v, err := s.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-2" {
		t.Fatalf("vote %q, %v", v, err)
	}
	if _, err := s.GetUint64([]byte("LastVoteCand")); err == nil {
		t.Fatal("GetUint64 of a 6-byte value succeeded")
	}
}

func TestDecodeRaftEntryRejectsTruncation(t *testing.T) {
	enc := encodeRaftEntry(&raft.Log{Term: 3, Type: raft.LogCommand, Data: []byte("payload"), Extensions: []byte("x")})
	for n := range len(enc) {
		var l raft.Log
		if err := decodeRaftEntry(enc[:n], &l); err == nil {
			t.Fatalf("decoding %d of %d bytes succeeded", n, len(enc))
		}
	}
	var l raft.Log
	if err := decodeRaftEntry(append(enc, 0), &l); err == nil {
		t.Fatal("trailing garbage accepted")
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (*memSink) ID() string              { return "mem" }
func (s *memSink) Cancel() error         { s.cancelled = true; return nil }
func (*memSink) Close() error            { return nil }
func (s *memSink) Reader() io.ReadCloser { return io.NopCloser(bytes.NewReader(s.Bytes())) }

func TestRaftFSMSnapshotRoundTrip(t *testing.T) {
	full := mustApply(t, metadata.EmptyImage(), topicRecords("orders", metadata.NewUuid(), 3, 1, 2)...)
	full = mustApply(t, full,
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "orders", Name: "cleanup.policy", Value: metadata.StringPtr("compact")},
		&metadata.ProducerIDsRecord{BrokerID: 1, BrokerEpoch: 4, NextProducerID: 2000},
	)
	emptied := mustApply(t, full, &metadata.RemoveTopicRecord{TopicID: mustTopic(t, full, "orders").ID})

	for _, tc := range []struct {
		name string
		img  *metadata.Image
	}{
		{"empty log", metadata.EmptyImage()},
		{"topics, configs and producer ids", full},
		{"everything deleted but offset kept", emptied},
	} {
		src := &raftFSM{pub: metadata.NewPublisher(tc.img), logger: slog.New(slog.DiscardHandler)}
		snap, err := src.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var sink memSink
		if err := snap.Persist(&sink); err != nil || sink.cancelled {
			t.Fatalf("%s: persist: %v", tc.name, err)
		}
		dst := &raftFSM{pub: metadata.NewPublisher(mustApply(t, metadata.EmptyImage(), topicRecords("stale", metadata.NewUuid(), 1, 1)...)), logger: slog.New(slog.DiscardHandler)}
		if err := dst.Restore(sink.Reader()); err != nil {
			t.Fatalf("%s: restore: %v", tc.name, err)
		}
		assertImagesEqual(t, dst.pub.Image(), tc.img)
		if _, ok := dst.pub.Image().Topic("stale"); ok {
			t.Fatalf("%s: restore kept state from before the snapshot", tc.name)
		}
		src.pub.Close()
		dst.pub.Close()
	}

	corrupt := &raftFSM{pub: metadata.NewPublisher(metadata.EmptyImage()), logger: slog.New(slog.DiscardHandler)}
	defer corrupt.pub.Close()
	if err := corrupt.Restore(io.NopCloser(bytes.NewReader([]byte("not a frame")))); err == nil {
		t.Fatal("corrupt snapshot restored")
	}
}

func TestRaftFSMApplyIsDeterministic(t *testing.T) {
	fsm := &raftFSM{pub: metadata.NewPublisher(metadata.EmptyImage()), logger: slog.New(slog.DiscardHandler)}
	defer fsm.pub.Close()
	id := metadata.NewUuid()
	entry := func(offset int64, recs ...metadata.Record) *raft.Log {
		b, err := metadata.EncodeBatch(offset, recs)
		if err != nil {
			t.Fatal(err)
		}
		return &raft.Log{Type: raft.LogCommand, Data: b}
	}
	// The payload's offset is advisory: the FSM numbers records densely.
	res := fsm.Apply(entry(99, topicRecords("a", id, 2, 1)...)).(raftApplyResult)
	if res.err != nil || res.img.Offset() != 2 {
		t.Fatalf("first batch: offset %v, err %v", res.img, res.err)
	}
	// A batch that does not apply is skipped and reported, not half-applied.
	res = fsm.Apply(entry(3, &metadata.TopicRecord{Name: "a", TopicID: metadata.NewUuid()})).(raftApplyResult)
	if res.err == nil || fsm.pub.Image().Offset() != 2 {
		t.Fatalf("duplicate topic: err %v, offset %d", res.err, fsm.pub.Image().Offset())
	}
	if got := fsm.Apply(&raft.Log{Type: raft.LogNoop}); got != nil {
		t.Fatalf("noop entry returned %v", got)
	}
	res = fsm.Apply(entry(3, &metadata.RemoveTopicRecord{TopicID: id})).(raftApplyResult)
	if res.err != nil || res.img.Offset() != 3 || res.img.NumTopics() != 0 {
		t.Fatalf("remove: %+v", res)
	}
}
