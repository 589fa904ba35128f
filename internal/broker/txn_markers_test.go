package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/record"
)

// txnProduce is a transactional Produce of values from producer pid.
func txnProduce(t *testing.T, topic string, partition int32, pid int64, epoch int16, seq int32, values ...string) *kmsg.ProduceRequest {
	t.Helper()
	ts := time.Now().UnixMilli()
	h := record.Header{
		Magic: 2, Attributes: 0x10, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
		LastOffsetDelta: int32(len(values) - 1),
	}
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	b, err := record.BuildBatch(h, recs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	req := produceReq(topic, partition, -1, b)
	req.TransactionID = kmsg.StringPtr("tx")
	return req
}

// mustProduce sends req and fails on any error; it returns the base offset.
func mustProduce(t *testing.T, c *conn, req *kmsg.ProduceRequest) int64 {
	t.Helper()
	p := do[*kmsg.ProduceResponse](c, 11, req).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce: error %d %v", p.ErrorCode, p.ErrorMessage)
	}
	return p.BaseOffset
}

// writeMarker sends WriteTxnMarkers for one partition and returns its error.
func writeMarker(c *conn, topic string, partition int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32) int16 {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, commit, coordinatorEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := do[*kmsg.WriteTxnMarkersResponse](c, 1, req)
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// latestOffset is ListOffsets LATEST under an isolation level.
func latestOffset(t *testing.T, c *conn, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := do[*kmsg.ListOffsetsResponse](c, 8, req).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("ListOffsets: error %d", p.ErrorCode)
	}
	return p.Offset
}

// fetchIsolated fetches partition 0 from offset under an isolation level.
func fetchIsolated(t *testing.T, c *conn, topic string, offset int64, isolation int8) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchReq(topic, [16]byte{}, 0, offset)
	req.IsolationLevel = isolation
	p := do[*kmsg.FetchResponse](c, 11, req).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: error %d", p.ErrorCode)
	}
	return p
}

// lastOffsetRead is the offset after the last whole batch of a fetch.
func lastOffsetRead(t *testing.T, p kmsg.FetchResponseTopicPartition) int64 {
	t.Helper()
	hs := batchHeaders(t, p.RecordBatches)
	if len(hs) == 0 {
		return -1
	}
	return hs[len(hs)-1].LastOffset() + 1
}

// TestWriteTxnMarkersAndReadCommitted: open transactions hold the last
// stable offset, so read_committed fetches and ListOffsets READ_COMMITTED
// stop at the first one; markers written through WriteTxnMarkers close
// them, and read_committed then reads past them with the aborted
// transaction listed for the client to drop, while read_uncommitted reads
// everything up to the high watermark with no aborted transactions.
func TestWriteTxnMarkersAndReadCommitted(t *testing.T) {
	tn := startNode(t, map[string]string{"transaction.partition.verification.enable": "false"})
	c := tn.dial()
	createTopic(c, "eos", 1, nil)

	produce(c, "eos", 0, "plain")                                       // 0
	t1 := mustProduce(t, c, txnProduce(t, "eos", 0, 7, 0, 0, "a", "b")) // 1-2
	mustProduce(t, c, txnProduce(t, "eos", 0, 8, 0, 0, "c"))            // 3

	if got := latestOffset(t, c, "eos", 1); got != t1 {
		t.Fatalf("READ_COMMITTED latest %d, want the first open transaction's offset %d", got, t1)
	}
	if got := latestOffset(t, c, "eos", 0); got != 4 {
		t.Fatalf("READ_UNCOMMITTED latest %d, want the high watermark 4", got)
	}
	rc := fetchIsolated(t, c, "eos", 0, 1)
	if rc.LastStableOffset != t1 || rc.HighWatermark != 4 || lastOffsetRead(t, rc) != t1 {
		t.Fatalf("read_committed before markers: LSO %d HW %d read up to %d", rc.LastStableOffset, rc.HighWatermark, lastOffsetRead(t, rc))
	}
	if rc := fetchIsolated(t, c, "eos", t1, 1); len(rc.RecordBatches) != 0 {
		t.Fatalf("read_committed at the LSO returned %d bytes", len(rc.RecordBatches))
	}

	if code := writeMarker(c, "eos", 0, 7, 0, false, 0); code != 0 {
		t.Fatalf("abort marker: error %d", code)
	}
	if got := latestOffset(t, c, "eos", 1); got != 3 {
		t.Fatalf("READ_COMMITTED latest %d after the abort, want producer 8's open transaction at 3", got)
	}
	if code := writeMarker(c, "eos", 0, 8, 0, true, 0); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	if got := latestOffset(t, c, "eos", 1); got != 6 {
		t.Fatalf("READ_COMMITTED latest %d with no open transaction, want 6", got)
	}

	rc = fetchIsolated(t, c, "eos", 0, 1)
	if rc.LastStableOffset != 6 || lastOffsetRead(t, rc) != 6 {
		t.Fatalf("read_committed after markers: LSO %d, read up to %d", rc.LastStableOffset, lastOffsetRead(t, rc))
	}
	if len(rc.AbortedTransactions) != 1 || rc.AbortedTransactions[0].ProducerID != 7 || rc.AbortedTransactions[0].FirstOffset != t1 {
		t.Fatalf("aborted transactions %+v, want producer 7 from %d", rc.AbortedTransactions, t1)
	}
	var controls int
	for _, h := range batchHeaders(t, rc.RecordBatches) {
		if h.IsControl() {
			controls++
		}
	}
	if controls != 2 {
		t.Fatalf("%d control batches fetched, want the 2 markers", controls)
	}
	// Past the aborted transaction's marker, nothing is aborted.
	if rc := fetchIsolated(t, c, "eos", 5, 1); len(rc.AbortedTransactions) != 0 {
		t.Fatalf("aborted transactions past the marker: %+v", rc.AbortedTransactions)
	}
	ru := fetchIsolated(t, c, "eos", 0, 0)
	if len(ru.AbortedTransactions) != 0 || lastOffsetRead(t, ru) != 6 {
		t.Fatalf("read_uncommitted: aborted %+v, read up to %d", ru.AbortedTransactions, lastOffsetRead(t, ru))
	}

	// A new transaction of producer 7 at epoch 2; a marker from epoch 1
	// is fenced and appends nothing.
	open := mustProduce(t, c, txnProduce(t, "eos", 0, 7, 2, 0, "d"))
	if code := writeMarker(c, "eos", 0, 7, 1, true, 0); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale marker: error %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if got := latestOffset(t, c, "eos", 0); got != open+1 {
		t.Fatalf("log end %d after a refused marker, want %d", got, open+1)
	}

	// DescribeProducers shows the open transaction.
	dp := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "eos", []int32{0}
	dp.Topics = append(dp.Topics, dt)
	dr := do[*kmsg.DescribeProducersResponse](c, 0, dp).Topics[0].Partitions[0]
	var found bool
	for _, ap := range dr.ActiveProducers {
		if ap.ProducerID == 7 {
			found = true
			if ap.ProducerEpoch != 2 || ap.CurrentTxnStartOffset != open {
				t.Fatalf("producer 7: epoch %d, transaction from %d; want 2 and %d", ap.ProducerEpoch, ap.CurrentTxnStartOffset, open)
			}
		}
		if ap.ProducerID == 8 && ap.CurrentTxnStartOffset != -1 {
			t.Fatalf("producer 8's transaction is committed, yet starts at %d", ap.CurrentTxnStartOffset)
		}
	}
	if !found || dr.ErrorCode != 0 {
		t.Fatalf("DescribeProducers: error %d, producers %+v", dr.ErrorCode, dr.ActiveProducers)
	}
}

// TestTxnOffsetCommitVisibleOnCommit: offsets committed in a transaction
// are not the group's until the commit marker reaches its
// __consumer_offsets partition; meanwhile OffsetFetch with require_stable
// is UNSTABLE_OFFSET_COMMIT and without it returns the old offset; an
// abort drops them; KIP-447's generation check refuses a stale member.
func TestTxnOffsetCommitVisibleOnCommit(t *testing.T) {
	tn := startNode(t, map[string]string{"transaction.partition.verification.enable": "false"})
	c := tn.dial()
	createTopic(c, "in", 1, nil)
	const grp = "eos-group"
	waitCoordinator(t, c, grp)
	offsetsPartition := group.PartitionFor(grp, 50)

	txnCommit := func(pid int64, offset int64, generation int32, member string) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", grp, pid, 0
		req.Generation, req.MemberID = generation, member
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return do[*kmsg.TxnOffsetCommitResponse](c, 3, req).Topics[0].Partitions[0].ErrorCode
	}
	fetchOffset := func(requireStable bool) (int64, int16) {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = grp
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "in", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups = append(req.Groups, rg)
		req.RequireStable = requireStable
		g := do[*kmsg.OffsetFetchResponse](c, 8, req).Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("OffsetFetch: group error %d", g.ErrorCode)
		}
		p := g.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}

	if code := txnCommit(11, 42, -1, ""); code != 0 {
		t.Fatalf("TxnOffsetCommit: error %d", code)
	}
	if _, code := fetchOffset(true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable with a pending offset: error %d, want UNSTABLE_OFFSET_COMMIT", code)
	}
	if off, code := fetchOffset(false); code != 0 || off != -1 {
		t.Fatalf("pending offset visible: %d (error %d)", off, code)
	}
	if code := writeMarker(c, "__consumer_offsets", offsetsPartition, 11, 0, true, 0); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	if off, code := fetchOffset(true); code != 0 || off != 42 {
		t.Fatalf("after the commit marker: offset %d, error %d; want 42", off, code)
	}

	if code := txnCommit(12, 50, -1, ""); code != 0 {
		t.Fatalf("TxnOffsetCommit: error %d", code)
	}
	if code := writeMarker(c, "__consumer_offsets", offsetsPartition, 12, 0, false, 0); code != 0 {
		t.Fatalf("abort marker: error %d", code)
	}
	if off, code := fetchOffset(true); code != 0 || off != 42 {
		t.Fatalf("after the abort marker: offset %d, error %d; want 42 still", off, code)
	}

	if code := txnCommit(13, 60, 3, "no-such-member"); code != kerr.UnknownMemberID.Code {
		t.Fatalf("KIP-447 commit from an unknown member: error %d, want UNKNOWN_MEMBER_ID", code)
	}
}

// TestReadCommittedFetchWakesOnMarker: a read_committed fetch parked at
// the last stable offset (an open transaction holds it) is answered as
// soon as the transaction's marker lets the LSO move, long before its
// max wait.
func TestReadCommittedFetchWakesOnMarker(t *testing.T) {
	tn := startNode(t, map[string]string{"transaction.partition.verification.enable": "false"})
	c, parked := tn.dial(), tn.dial()
	createTopic(c, "wake", 1, nil)
	first := mustProduce(t, c, txnProduce(t, "wake", 0, 7, 0, 0, "a", "b"))

	req := fetchReq("wake", [16]byte{}, 0, first)
	req.IsolationLevel, req.MinBytes, req.MaxWaitMillis = 1, 1, 20000
	req.SetVersion(11)
	corr := parked.send(req)
	// Nothing is below the LSO yet: the fetch parks instead of answering.
	if _, err := parked.recv(req, corr, 300*time.Millisecond); err == nil {
		t.Fatal("a read_committed fetch at the LSO of an open transaction answered at once")
	}
	start := time.Now()
	if code := writeMarker(c, "wake", 0, 7, 0, true, 0); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	resp, err := parked.recv(req, corr, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || lastOffsetRead(t, p) != first+3 {
		t.Fatalf("woken fetch: error %d, read up to %d; want the transaction and its marker (%d)", p.ErrorCode, lastOffsetRead(t, p), first+3)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("the parked fetch waited %v: it was not woken by the marker", waited)
	}
}

// TestListOffsetsByTimestampReadCommitted: a timestamp lookup under
// READ_COMMITTED finds nothing at or past the last stable offset, as
// Kafka's fetchOffsetForTimestamp bounds it, while READ_UNCOMMITTED finds
// the open transaction's record below the high watermark.
func TestListOffsetsByTimestampReadCommitted(t *testing.T) {
	tn := startNode(t, map[string]string{"transaction.partition.verification.enable": "false"})
	c := tn.dial()
	createTopic(c, "ts", 1, nil)
	if p := do[*kmsg.ProduceResponse](c, 11, produceReq("ts", 0, 1, batchAt(t, record.CodecNone, 1000, "old"))).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	open := mustProduce(t, c, txnProduce(t, "ts", 0, 7, 0, 0, "new"))
	lookup := func(isolation int8) int64 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.IsolationLevel = -1, isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "ts"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = 2000, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return do[*kmsg.ListOffsetsResponse](c, 8, req).Topics[0].Partitions[0].Offset
	}
	if got := lookup(1); got != -1 {
		t.Fatalf("READ_COMMITTED lookup found %d inside the open transaction", got)
	}
	if got := lookup(0); got != open {
		t.Fatalf("READ_UNCOMMITTED lookup %d, want %d", got, open)
	}
	if code := writeMarker(c, "ts", 0, 7, 0, true, 0); code != 0 {
		t.Fatalf("commit marker: error %d", code)
	}
	if got := lookup(1); got != open {
		t.Fatalf("READ_COMMITTED lookup after the commit %d, want %d", got, open)
	}
}

// TestTransactionVersion2MarkerBumpsTheEpoch (KIP-890 part 2): a
// WriteTxnMarkers v2 marker of transaction.version 2 must carry an epoch
// above its transaction's: one at the data's epoch is a zombie's and is
// INVALID_PRODUCER_EPOCH, nothing appended; the bumped one ends it.
func TestTransactionVersion2MarkerBumpsTheEpoch(t *testing.T) {
	tn := startNode(t, map[string]string{"transaction.partition.verification.enable": "false"})
	c := tn.dial()
	createTopic(c, "tv2", 1, nil)
	mustProduce(t, c, txnProduce(t, "tv2", 0, 7, 3, 0, "a"))
	marker := func(epoch int16) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.TransactionVersion = 7, epoch, true, 2
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "tv2", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return do[*kmsg.WriteTxnMarkersResponse](c, 2, req).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := marker(3); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TV2 marker at the data's epoch: error %d, want INVALID_PRODUCER_EPOCH", code)
	}
	if got := latestOffset(t, c, "tv2", 1); got != 0 {
		t.Fatalf("READ_COMMITTED latest %d: the refused marker must leave the transaction open", got)
	}
	if code := marker(4); code != 0 {
		t.Fatalf("TV2 marker at the bumped epoch: error %d", code)
	}
	if got := latestOffset(t, c, "tv2", 1); got != 2 {
		t.Fatalf("READ_COMMITTED latest %d after the commit, want 2", got)
	}
}
