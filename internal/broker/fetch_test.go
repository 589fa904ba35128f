package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchPartition sends a fetch and returns the only partition answered.
func fetchPartition(t *testing.T, c *conn, v int16, req *kmsg.FetchRequest) kmsg.FetchResponseTopicPartition {
	t.Helper()
	resp := do[*kmsg.FetchResponse](c, v, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("fetch: top-level error %d", resp.ErrorCode)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

func TestFetchLongPoll(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "lp", 1, nil)

	t.Run("returns early when data arrives", func(t *testing.T) {
		fc := tn.dial()
		req := fetchReq("lp", [16]byte{}, 0, 0)
		req.MaxWaitMillis, req.MinBytes = 10_000, 1
		req.SetVersion(12)
		start := time.Now()
		corr := fc.send(req)
		go func() {
			time.Sleep(200 * time.Millisecond) // let the fetch park first
			pc := tn.dial()
			produce(pc, "lp", 0, "wake")
		}()
		resp, err := fc.recv(req, corr, 9*time.Second)
		if err != nil {
			t.Fatalf("no response before the 10s max wait: %v", err)
		}
		p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if len(batchHeaders(t, p.RecordBatches)) != 1 || p.HighWatermark != 1 {
			t.Errorf("got %d bytes, high watermark %d", len(p.RecordBatches), p.HighWatermark)
		}
		t.Logf("answered after %v", time.Since(start))
	})

	t.Run("returns at max wait without data", func(t *testing.T) {
		req := fetchReq("lp", [16]byte{}, 0, 1)
		req.MaxWaitMillis, req.MinBytes = 300, 1
		start := time.Now()
		p := fetchPartition(t, c, 12, req)
		if el := time.Since(start); el < 250*time.Millisecond {
			t.Errorf("answered after %v, before max wait", el)
		}
		if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.RecordBatches == nil {
			t.Errorf("error %d, %d bytes (nil %v): want an empty, non-null record set", p.ErrorCode, len(p.RecordBatches), p.RecordBatches == nil)
		}
	})

	t.Run("min bytes not reached waits, then returns what there is", func(t *testing.T) {
		req := fetchReq("lp", [16]byte{}, 0, 0)
		req.MaxWaitMillis, req.MinBytes = 300, 1<<20
		start := time.Now()
		p := fetchPartition(t, c, 12, req)
		if el := time.Since(start); el < 250*time.Millisecond {
			t.Errorf("answered after %v although min bytes was not reached", el)
		}
		if len(batchHeaders(t, p.RecordBatches)) != 1 {
			t.Errorf("%d bytes, want the one batch", len(p.RecordBatches))
		}
	})

	t.Run("min bytes reached answers at once", func(t *testing.T) {
		req := fetchReq("lp", [16]byte{}, 0, 0)
		req.MaxWaitMillis, req.MinBytes = 10_000, 1
		req.SetVersion(12)
		corr := c.send(req)
		if _, err := c.recv(req, corr, 5*time.Second); err != nil {
			t.Fatalf("fetch with data available waited: %v", err)
		}
	})
}

func TestFetchLimits(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "lim", 2, nil)
	var sizes []int
	for i := range 3 {
		produce(c, "lim", 0, string(make([]byte, 100+i)))
		produce(c, "lim", 1, "x")
	}
	all := fetchPartition(t, c, 12, fetchReq("lim", [16]byte{}, 0, 0)).RecordBatches
	for _, h := range batchHeaders(t, all) {
		sizes = append(sizes, 12+int(h.Length))
	}
	if len(sizes) != 3 {
		t.Fatalf("%d batches stored", len(sizes))
	}

	twoParts := func(maxBytes, p0Max, p1Max int32) *kmsg.FetchRequest {
		req := fetchReq("lim", [16]byte{}, 0, 0)
		req.MaxBytes = maxBytes
		req.Topics[0].Partitions[0].PartitionMaxBytes = p0Max
		p1 := req.Topics[0].Partitions[0]
		p1.Partition, p1.PartitionMaxBytes = 1, p1Max
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p1)
		return req
	}
	tests := []struct {
		name   string
		req    *kmsg.FetchRequest
		wantP0 int // batches
		wantP1 int
	}{
		{"no limits reached", twoParts(1<<20, 1<<20, 1<<20), 3, 3},
		{"partition max 1 byte: first batch still whole", twoParts(1<<20, 1, 1<<20), 1, 3},
		{"partition max fits two batches", twoParts(1<<20, int32(sizes[0]+sizes[1]), 1<<20), 2, 3},
		{"partition max just short of two", twoParts(1<<20, int32(sizes[0]+sizes[1]-1), 1<<20), 1, 3},
		{"max bytes 1: one batch of the first partition only", twoParts(1, 1<<20, 1<<20), 1, 0},
		{"max bytes fits the first partition", twoParts(int32(sizes[0]+sizes[1]+sizes[2]), 1<<20, 1<<20), 3, 0},
		{"second partition's limit 1 byte is not the first batch", twoParts(1<<20, 1<<20, 1), 3, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do[*kmsg.FetchResponse](c, 12, tt.req)
			got := map[int32]int{}
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 {
					t.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
				}
				got[p.Partition] = len(batchHeaders(t, p.RecordBatches))
			}
			if got[0] != tt.wantP0 || got[1] != tt.wantP1 {
				t.Errorf("batches p0=%d p1=%d, want %d and %d", got[0], got[1], tt.wantP0, tt.wantP1)
			}
		})
	}
}

func TestFetchPartitionErrors(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	id := createTopic(c, "fe", 1, nil)
	for range 4 {
		produce(c, "fe", 0, "v")
	}
	// Move the log start to 2 so offsets below it are out of range.
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "fe"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Partition, drp.Offset = 0, 2
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	dr.TimeoutMillis = 5000
	if ec := do[*kmsg.DeleteRecordsResponse](c, 2, dr).Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("delete records: %d", ec)
	}

	withEpoch := func(off int64, epoch int32) *kmsg.FetchRequest {
		r := fetchReq("fe", id, 0, off)
		r.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
		return r
	}
	byID := func(id [16]byte) *kmsg.FetchRequest { return fetchReq("", id, 0, 2) }
	tests := []struct {
		name    string
		v       int16
		req     *kmsg.FetchRequest
		want    int16
		batches int
	}{
		{"at the log start", 12, fetchReq("fe", id, 0, 2), 0, 2},
		{"at the high watermark: nothing yet", 12, fetchReq("fe", id, 0, 4), 0, 0},
		{"beyond the high watermark", 12, fetchReq("fe", id, 0, 5), kerr.OffsetOutOfRange.Code, 0},
		{"below the log start", 12, fetchReq("fe", id, 0, 1), kerr.OffsetOutOfRange.Code, 0},
		{"unknown topic", 12, fetchReq("nope", id, 0, 0), kerr.UnknownTopicOrPartition.Code, 0},
		{"unknown partition", 12, fetchReq("fe", id, 3, 0), kerr.UnknownTopicOrPartition.Code, 0},
		{"current leader epoch matches", 12, withEpoch(2, 0), 0, 2},
		{"no current leader epoch (-1) is not checked", 12, withEpoch(2, -1), 0, 2},
		{"current leader epoch newer", 12, withEpoch(2, 5), kerr.UnknownLeaderEpoch.Code, 0},
		{"v13 by topic id", 13, byID(id), 0, 2},
		{"v16 by topic id", 16, byID(id), 0, 2},
		{"v13 unknown topic id", 13, byID([16]byte{9}), kerr.UnknownTopicID.Code, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fetchPartition(t, c, tt.v, tt.req)
			if p.ErrorCode != tt.want {
				t.Fatalf("error %d, want %d", p.ErrorCode, tt.want)
			}
			if n := len(batchHeaders(t, p.RecordBatches)); n != tt.batches {
				t.Errorf("%d batches, want %d", n, tt.batches)
			}
			if tt.want == 0 && (p.HighWatermark != 4 || p.LogStartOffset != 2 || p.LastStableOffset != 4) {
				t.Errorf("hw %d lso %d log start %d, want 4 4 2", p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
			}
		})
	}
}

func TestFetchFencedLeaderEpoch(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "ep", 1, nil)
	// A single node never moves leadership, so a partition's epoch stays
	// 0 and FENCED_LEADER_EPOCH (an epoch below the leader's) cannot be
	// provoked through the API; it is checked when the epoch is above 0.
	resp := do[*kmsg.MetadataResponse](c, 12, metadataReq("ep"))
	epoch := resp.Topics[0].Partitions[0].LeaderEpoch
	req := fetchReq("ep", [16]byte{}, 0, 0)
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
	if p := fetchPartition(t, c, 9, req); p.ErrorCode != 0 {
		t.Fatalf("current epoch %d: error %d", epoch, p.ErrorCode)
	}
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch + 1
	if p := fetchPartition(t, c, 9, req); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Errorf("epoch %d above the leader's: error %d, want UNKNOWN_LEADER_EPOCH", epoch+1, p.ErrorCode)
	}
	if epoch > 0 {
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch - 1
		if p := fetchPartition(t, c, 9, req); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
			t.Errorf("stale epoch: error %d, want FENCED_LEADER_EPOCH", p.ErrorCode)
		}
	}
}

func TestFetchReadCommitted(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "rc", 1, nil)
	produce(c, "rc", 0, "a")
	req := fetchReq("rc", [16]byte{}, 0, 0)
	req.IsolationLevel = 1
	p := fetchPartition(t, c, 11, req)
	if p.ErrorCode != 0 || len(batchHeaders(t, p.RecordBatches)) != 1 || p.LastStableOffset != 1 {
		t.Errorf("error %d, %d bytes, lso %d", p.ErrorCode, len(p.RecordBatches), p.LastStableOffset)
	}
	if p.AbortedTransactions == nil {
		t.Error("read_committed response has a null aborted-transactions list")
	}
}
