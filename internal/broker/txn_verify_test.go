package broker_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/testing/freeport"
)

// fakeTxnCoordinator is a transaction coordinator that serves only
// ApiVersions and AddPartitionsToTxn v4+ from partition leaders, from a
// table of the partitions each producer added (and at which epoch), as
// Kafka's coordinator answers them: with verify_only, INVALID_TXN_STATE (or
// TRANSACTION_ABORTABLE) for a partition not in the transaction and
// PRODUCER_FENCED for an older epoch; without, the partition is added.
type fakeTxnCoordinator struct {
	addr     string
	verifies atomic.Int32
	adds     atomic.Int32
	// abortable answers a partition not in the transaction with
	// TRANSACTION_ABORTABLE, as Kafka's coordinator does for
	// verifications made for newer clients.
	abortable atomic.Bool

	mu    sync.Mutex
	added map[int64]struct {
		epoch int16
		parts map[string]bool
	}
}

func startFakeTxnCoordinator(t *testing.T) *fakeTxnCoordinator {
	t.Helper()
	ln, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTxnCoordinator{addr: ln.Addr().String(), added: map[int64]struct {
		epoch int16
		parts map[string]bool
	}{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				f.serve(c)
			}()
		}
	}()
	return f
}

// add puts topic-partition into producer pid's transaction at epoch.
func (f *fakeTxnCoordinator) add(pid int64, epoch int16, tp string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.added[pid]
	if e.parts == nil || e.epoch != epoch {
		e.parts = map[string]bool{}
	}
	e.epoch, e.parts[tp] = epoch, true
	f.added[pid] = e
}

func (f *fakeTxnCoordinator) answer(pid int64, epoch int16, tp string) int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.added[pid]
	switch {
	case ok && epoch < e.epoch:
		return kerr.ProducerFenced.Code
	case ok && epoch == e.epoch && e.parts[tp]:
		return 0
	}
	if f.abortable.Load() {
		return kerr.TransactionAbortable.Code
	}
	return kerr.InvalidTxnState.Code
}

func (f *fakeTxnCoordinator) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
		corr := frame[4:8]
		body := frame[8:]
		idLen := int16(binary.BigEndian.Uint16(body))
		body = body[2+max(int(idLen), 0):]
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		req.SetVersion(version)
		if req.IsFlexible() {
			body = body[1:] // no tagged fields in the header
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		var resp kmsg.Response
		switch req := req.(type) {
		case *kmsg.ApiVersionsRequest:
			ar := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			ar.ApiKeys = []kmsg.ApiVersionsResponseApiKey{
				{ApiKey: int16(kmsg.ApiVersions), MinVersion: 0, MaxVersion: 3},
				{ApiKey: int16(kmsg.AddPartitionsToTxn), MinVersion: 0, MaxVersion: 5},
			}
			resp = ar
		case *kmsg.AddPartitionsToTxnRequest:
			ar := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
			for _, tx := range req.Transactions {
				if tx.VerifyOnly {
					f.verifies.Add(1)
				} else {
					// KIP-890 part 2: the leader adds the partitions.
					f.adds.Add(1)
					for _, top := range tx.Topics {
						for _, p := range top.Partitions {
							f.add(tx.ProducerID, tx.ProducerEpoch, fmt.Sprintf("%s-%d", top.Topic, p))
						}
					}
				}
				rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
				rt.TransactionalID = tx.TransactionalID
				for _, top := range tx.Topics {
					tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
					tt.Topic = top.Topic
					for _, p := range top.Partitions {
						tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
						tp.Partition = p
						tp.ErrorCode = f.answer(tx.ProducerID, tx.ProducerEpoch, fmt.Sprintf("%s-%d", top.Topic, p))
						tt.Partitions = append(tt.Partitions, tp)
					}
					rt.Topics = append(rt.Topics, tt)
				}
				ar.Transactions = append(ar.Transactions, rt)
			}
			resp = ar
		default:
			return
		}
		out := append([]byte{0, 0, 0, 0}, corr...)
		if resp.IsFlexible() && key != int16(kmsg.ApiVersions) {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// leadTransactionStateAt makes broker 2, registered with the fake
// coordinator's address, the leader of every __transaction_state
// partition, so the node under test sends its verifications there.
func leadTransactionStateAt(t *testing.T, c *conn, clusterID, addr string) {
	t.Helper()
	host, portStr, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = 2, clusterID
	reg.IncarnationID = [16]byte{2}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port, l.SecurityProtocol = "PLAINTEXT", host, uint16(port), 0
	reg.Listeners = append(reg.Listeners, l)
	rr := do[*kmsg.BrokerRegistrationResponse](c, 1, reg)
	if rr.ErrorCode != 0 {
		t.Fatalf("registering broker 2: error %d", rr.ErrorCode)
	}
	within(t, 10*time.Second, "broker 2 unfenced", func() bool {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 2, rr.BrokerEpoch, math.MaxInt64
		resp := do[*kmsg.BrokerHeartbeatResponse](c, 1, hb)
		return resp.ErrorCode == 0 && !resp.IsFenced
	})
	createAssigned(t, c, "__transaction_state", 50, 2)
}

// createAssigned creates a topic whose partitions all live on broker id.
func createAssigned(t *testing.T, c *conn, topic string, partitions int32, id int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := range partitions {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{id}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	if resp := do[*kmsg.CreateTopicsResponse](c, 7, req); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: error %d %v", topic, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
}

// TestTransactionalProduceIsVerified (KIP-890 part 1): the batch that
// opens a producer's transaction on a partition is appended only once its
// coordinator, asked with AddPartitionsToTxn verify_only, confirms the
// partition is in the transaction: a partition never added gets
// INVALID_TXN_STATE and an older epoch PRODUCER_FENCED, with nothing
// appended; later batches of the open transaction are not verified again,
// while a batch of another epoch is (the coordinator fences an older one).
func TestTransactionalProduceIsVerified(t *testing.T) {
	coord := startFakeTxnCoordinator(t)
	tn := startNode(t, nil)
	c := tn.dial()
	leadTransactionStateAt(t, c, tn.n.ClusterID(), coord.addr)
	createAssigned(t, c, "verified", 1, 1)

	code := func(req *kmsg.ProduceRequest) int16 {
		return do[*kmsg.ProduceResponse](c, 11, req).Topics[0].Partitions[0].ErrorCode
	}
	leo := func() int64 { return latestOffset(t, c, "verified", 0) }

	if got := code(txnProduce(t, "verified", 0, 7, 0, 0, "a")); got != kerr.InvalidTxnState.Code {
		t.Fatalf("partition never added: error %d, want INVALID_TXN_STATE", got)
	}
	if leo() != 0 || coord.verifies.Load() != 1 {
		t.Fatalf("log end %d after a refused batch, %d verifications; want 0 and 1", leo(), coord.verifies.Load())
	}

	coord.add(7, 0, "verified-0")
	if got := code(txnProduce(t, "verified", 0, 7, 0, 0, "a")); got != 0 {
		t.Fatalf("added partition: error %d", got)
	}
	if got := code(txnProduce(t, "verified", 0, 7, 0, 1, "b")); got != 0 {
		t.Fatalf("second batch of the transaction: error %d", got)
	}
	if n := coord.verifies.Load(); n != 2 {
		t.Fatalf("%d verifications, want 2: the open transaction needs none", n)
	}
	if got := code(txnProduce(t, "verified", 0, 7, 0, 2, "c")); got != 0 {
		t.Fatalf("third batch: error %d", got)
	}

	// The coordinator moved the producer to epoch 1 (fencing epoch 0) and
	// ended the transaction with a marker.
	coord.add(7, 1, "verified-0")
	if c := writeMarker(c, "verified", 0, 7, 1, false, 0); c != 0 {
		t.Fatalf("abort marker: error %d", c)
	}
	end := leo()
	// The coordinator's PRODUCER_FENCED reaches the producer as
	// INVALID_PRODUCER_EPOCH, as Kafka's AddPartitionsToTxnManager maps it:
	// the producer aborts its transaction instead of dying.
	if got := code(txnProduce(t, "verified", 0, 7, 0, 3, "d")); got != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced epoch: error %d, want INVALID_PRODUCER_EPOCH", got)
	}
	if got := code(txnProduce(t, "verified", 0, 7, 1, 0, "e")); got != 0 {
		t.Fatalf("epoch 1: error %d", got)
	}
	// The open transaction is epoch 1's: an epoch-0 batch is verified
	// again, and the coordinator fences it.
	if got := code(txnProduce(t, "verified", 0, 7, 0, 4, "f")); got != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch while epoch 1's transaction is open: error %d, want INVALID_PRODUCER_EPOCH", got)
	}
	if leo() != end+1 {
		t.Fatalf("log end %d, want %d: only the epoch-1 batch was appended", leo(), end+1)
	}

	// The coordinator's TRANSACTION_ABORTABLE reaches Produce v11+
	// clients; older ones get INVALID_TXN_STATE.
	if c := writeMarker(c, "verified", 0, 7, 1, false, 0); c != 0 {
		t.Fatalf("abort marker: error %d", c)
	}
	coord.abortable.Store(true)
	at := func(v int16) int16 {
		return do[*kmsg.ProduceResponse](c, v, txnProduce(t, "verified", 0, 8, 0, 0, "g")).Topics[0].Partitions[0].ErrorCode
	}
	if got := at(10); got != kerr.InvalidTxnState.Code {
		t.Fatalf("Produce v10, abortable transaction: error %d, want INVALID_TXN_STATE", got)
	}
	if got := at(11); got != kerr.TransactionAbortable.Code {
		t.Fatalf("Produce v11, abortable transaction: error %d, want TRANSACTION_ABORTABLE", got)
	}
	// Produce v12 (KIP-890 part 2): the leader adds the partition to the
	// transaction itself, and the batch is appended.
	if got := at(12); got != 0 {
		t.Fatalf("Produce v12: error %d, want the partition added and the batch appended", got)
	}
	if coord.adds.Load() != 1 || coord.answer(8, 0, "verified-0") != 0 {
		t.Fatalf("%d adds sent; partition in the transaction: %v", coord.adds.Load(), coord.answer(8, 0, "verified-0") == 0)
	}
}

// TestTxnOffsetCommitIsVerified (KIP-890 part 1): the offsets a producer
// commits in its transaction are written only once its coordinator
// confirms the group's __consumer_offsets partition is in the transaction
// (AddOffsetsToTxn added it); otherwise INVALID_TXN_STATE and nothing is
// pending.
func TestTxnOffsetCommitIsVerified(t *testing.T) {
	coord := startFakeTxnCoordinator(t)
	tn := startNode(t, nil)
	c := tn.dial()
	const grp = "verified-group"
	// __consumer_offsets first, on this broker alone.
	waitCoordinator(t, c, grp)
	createAssigned(t, c, "in", 1, 1)
	leadTransactionStateAt(t, c, tn.n.ClusterID(), coord.addr)

	commitAs := func(v int16, pid int64) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", grp, pid, 0, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "in"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 9, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return do[*kmsg.TxnOffsetCommitResponse](c, v, req).Topics[0].Partitions[0].ErrorCode
	}
	commit := func() int16 { return commitAs(3, 21) }
	pendingErr := func() int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = grp
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "in", []int32{0}
		rg.Topics = append(rg.Topics, rt)
		req.Groups, req.RequireStable = append(req.Groups, rg), true
		return do[*kmsg.OffsetFetchResponse](c, 8, req).Groups[0].Topics[0].Partitions[0].ErrorCode
	}
	if got := commit(); got != kerr.InvalidTxnState.Code {
		t.Fatalf("offsets partition not in the transaction: error %d, want INVALID_TXN_STATE", got)
	}
	if got := pendingErr(); got != 0 {
		t.Fatalf("a refused commit left an offset pending (error %d)", got)
	}
	coord.add(21, 0, fmt.Sprintf("__consumer_offsets-%d", group.PartitionFor(grp, 50)))
	if got := commit(); got != 0 {
		t.Fatalf("verified commit: error %d", got)
	}
	if got := pendingErr(); got != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable after the verified commit: error %d, want UNSTABLE_OFFSET_COMMIT", got)
	}
	// A fenced epoch (the coordinator's PRODUCER_FENCED) is
	// INVALID_PRODUCER_EPOCH here too.
	coord.add(23, 1, fmt.Sprintf("__consumer_offsets-%d", group.PartitionFor(grp, 50)))
	if got := commitAs(3, 23); got != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TxnOffsetCommit at a fenced epoch: error %d, want INVALID_PRODUCER_EPOCH", got)
	}
	// v5 (KIP-890 part 2): the offsets partition is added, not verified.
	if got := commitAs(5, 22); got != 0 || coord.adds.Load() != 1 {
		t.Fatalf("TxnOffsetCommit v5: error %d, %d adds; want the partition added", got, coord.adds.Load())
	}
}

// TestVerificationPerPartition: a request writing a transaction to two
// partitions verifies each (in parallel); only the partition added to the
// transaction is appended, the other gets INVALID_TXN_STATE.
func TestVerificationPerPartition(t *testing.T) {
	coord := startFakeTxnCoordinator(t)
	tn := startNode(t, nil)
	c := tn.dial()
	leadTransactionStateAt(t, c, tn.n.ClusterID(), coord.addr)
	createAssigned(t, c, "two", 2, 1)
	coord.add(7, 0, "two-1")

	req := txnProduce(t, "two", 0, 7, 0, 0, "p0")
	other := txnProduce(t, "two", 1, 7, 0, 0, "p1").Topics[0].Partitions[0]
	other.Partition = 1
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, other)
	got := map[int32]int16{}
	for _, p := range do[*kmsg.ProduceResponse](c, 11, req).Topics[0].Partitions {
		got[p.Partition] = p.ErrorCode
	}
	if got[0] != kerr.InvalidTxnState.Code || got[1] != 0 {
		t.Fatalf("errors by partition %v, want INVALID_TXN_STATE for 0 and none for 1", got)
	}
	if n := coord.verifies.Load(); n != 2 {
		t.Fatalf("%d verifications, want one per partition", n)
	}
	for p, want := range map[int32]int64{0: 0, 1: 1} {
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "two"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p, -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		if end := do[*kmsg.ListOffsetsResponse](c, 8, lo).Topics[0].Partitions[0].Offset; end != want {
			t.Fatalf("partition %d ends at %d, want %d", p, end, want)
		}
	}
}
