package broker_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch builds a v12 fetch in a session listing the given partitions
// of topic "s" at the given offsets.
func sessionFetch(id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "s"
		parts := make([]int32, 0, len(offsets))
		for p := range offsets {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], 1<<20
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = "s", forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// answered lists the partitions in a fetch response with their batch counts.
func answered(t *testing.T, resp *kmsg.FetchResponse) map[int32]int {
	t.Helper()
	out := map[int32]int{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				t.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
			out[p.Partition] = len(batchHeaders(t, p.RecordBatches))
		}
	}
	return out
}

func TestFetchSessions(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "s", 3, nil)
	for p := range int32(3) {
		produce(c, "s", p, "v")
	}

	// Epoch 0 creates a session; the first response is full.
	resp := do[*kmsg.FetchResponse](c, 12, sessionFetch(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0}))
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("create: error %d, session id %d", resp.ErrorCode, resp.SessionID)
	}
	id := resp.SessionID
	if got := answered(t, resp); !maps.Equal(got, map[int32]int{0: 1, 1: 1, 2: 1}) {
		t.Fatalf("full response %v", got)
	}

	steps := []struct {
		name     string
		produce  []int32 // partitions to produce to first
		epoch    int32
		offsets  map[int32]int64
		forget   []int32
		wantErr  int16
		wantResp map[int32]int
	}{
		{"nothing changed: empty incremental response", nil, 1, map[int32]int64{0: 1, 1: 1, 2: 1}, nil, 0, map[int32]int{}},
		{"only the partition with new data", []int32{1}, 2, nil, nil, 0, map[int32]int{1: 1}},
		{"positions are remembered", nil, 3, map[int32]int64{1: 2}, nil, 0, map[int32]int{}},
		{"forgotten partition is not returned", []int32{0, 2}, 4, nil, []int32{0}, 0, map[int32]int{2: 1}},
		{"forgotten stays forgotten", []int32{0}, 5, map[int32]int64{2: 2}, nil, 0, map[int32]int{}},
		{"wrong epoch", nil, 9, nil, nil, kerr.InvalidFetchSessionEpoch.Code, nil},
		{"right epoch after a wrong one", nil, 6, nil, nil, 0, map[int32]int{}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			for _, p := range st.produce {
				produce(c, "s", p, "more")
			}
			req := sessionFetch(id, st.epoch, st.offsets, st.forget...)
			resp := do[*kmsg.FetchResponse](c, 12, req)
			if resp.ErrorCode != st.wantErr {
				t.Fatalf("error %d, want %d", resp.ErrorCode, st.wantErr)
			}
			if st.wantErr != 0 {
				return
			}
			if resp.SessionID != id {
				t.Errorf("session id %d, want %d", resp.SessionID, id)
			}
			if got := answered(t, resp); !maps.Equal(got, st.wantResp) {
				t.Errorf("answered %v, want %v", got, st.wantResp)
			}
		})
	}

	t.Run("unknown session id", func(t *testing.T) {
		resp := do[*kmsg.FetchResponse](c, 12, sessionFetch(id+1, 1, nil))
		if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Errorf("error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
		}
	})

	t.Run("epoch -1 closes the session and fetches sessionless", func(t *testing.T) {
		resp := do[*kmsg.FetchResponse](c, 12, sessionFetch(id, -1, map[int32]int64{0: 0}))
		if resp.ErrorCode != 0 || resp.SessionID != 0 {
			t.Fatalf("close: error %d, session id %d", resp.ErrorCode, resp.SessionID)
		}
		if got := answered(t, resp); !maps.Equal(got, map[int32]int{0: 3}) {
			t.Errorf("answered %v", got)
		}
		resp = do[*kmsg.FetchResponse](c, 12, sessionFetch(id, 7, nil))
		if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Errorf("after close: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
		}
	})

	t.Run("sessionless fetch (id 0, epoch -1) makes no session", func(t *testing.T) {
		resp := do[*kmsg.FetchResponse](c, 12, sessionFetch(0, -1, map[int32]int64{0: 0}))
		if resp.ErrorCode != 0 || resp.SessionID != 0 {
			t.Errorf("error %d, session id %d", resp.ErrorCode, resp.SessionID)
		}
	})
}

// A partition whose log start offset moved is "changed" (KIP-227) and must
// be in the incremental response even when the fetch long-polls first for
// lack of data: the change seen before parking is not lost by the re-read.
func TestFetchSessionLongPollKeepsChanges(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "s", 2, nil)
	produce(c, "s", 0, "a", "b")

	resp := do[*kmsg.FetchResponse](c, 12, sessionFetch(0, 0, map[int32]int64{0: 2, 1: 0}))
	id := resp.SessionID
	if id == 0 {
		t.Fatal("no session")
	}

	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "s"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Partition, drp.Offset = 0, 1
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	if ec := do[*kmsg.DeleteRecordsResponse](c, 2, dr).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("delete records: %d", ec)
	}

	req := sessionFetch(id, 1, nil)
	req.MinBytes, req.MaxWaitMillis = 1, 200
	resp = do[*kmsg.FetchResponse](c, 12, req)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("error %d, topics %+v: want partition 0 with its new log start offset", resp.ErrorCode, resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.Partition != 0 || p.LogStartOffset != 1 {
		t.Errorf("partition %d log start %d, want partition 0 at 1", p.Partition, p.LogStartOffset)
	}
}
