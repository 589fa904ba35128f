package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/vltava/vltava/internal/record"
)

// direct sends req to node id itself (no routing by the client) and
// returns its answer. Versions stop at Kafka 3.0's, so Fetch names topics.
func (c *Cluster) direct(id int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := c.newClient([]string{c.topo.brokerAddr(id)}, kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// txnBatch is a transactional batch of values from producer pid.
func txnBatch(t *testing.T, pid int64, seq int32, values ...string) []byte {
	t.Helper()
	ts := time.Now().UnixMilli()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{OffsetDelta: int32(i), Key: []byte(v), Value: []byte(v)}
	}
	b, err := record.BuildBatch(record.Header{Attributes: 0x10, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: 0, BaseSequence: seq}, recs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTransactionStateSurvivesLeaderFailover: transactional data and
// markers replicate like any data, and followers build the same
// transaction state from them. After the leader is SIGKILLed, the new
// leader lists the aborted transaction to read_committed fetches, holds
// the last stable offset at the transaction still open, and closes it with
// its marker.
func TestTransactionStateSurvivesLeaderFailover(t *testing.T) {
	const topic = "txn-failover"
	c := StartCluster(t, WithOverride("transaction.partition.verification.enable", "false"))
	view := c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := view.Partitions[0].Leader

	produce := func(id int32, pid int64, seq int32, values ...string) int64 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 10000, kmsg.StringPtr("tx")
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = txnBatch(t, pid, seq, values...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.direct(id, req)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("transactional produce to node %d: error %d", id, p.ErrorCode)
		}
		return p.BaseOffset
	}
	marker := func(id int32, pid int64, commit bool) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = pid, commit
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := c.direct(id, req)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("marker on node %d: error %d", id, code)
		}
	}
	fetch := func(id int32) (kmsg.FetchResponseTopicPartition, error) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch, req.IsolationLevel = -1, 1<<20, -1, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = 1<<20, -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.direct(id, req)
		if err != nil {
			return kmsg.FetchResponseTopicPartition{}, err
		}
		return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0], nil
	}

	aborted := produce(leader, 7, 0, "a1", "a2")
	marker(leader, 7, false)
	open := produce(leader, 8, 0, "o1")
	c.waitFullyReplicated(topic, 1, 30*time.Second)

	c.Node(leader).Kill()
	nv := c.waitTopic(topic, 30*time.Second, "a new leader", func(v topicView) bool {
		return v.Partitions[0].Leader >= 0 && v.Partitions[0].Leader != leader
	}, leader)
	next := nv.Partitions[0].Leader

	waitFor(t, 30*time.Second, fmt.Sprintf("node %d serves read_committed with the transaction state", next), func() (bool, string) {
		p, err := fetch(next)
		if err != nil {
			return false, err.Error()
		}
		ok := p.ErrorCode == 0 && p.LastStableOffset == open && len(p.AbortedTransactions) == 1 &&
			p.AbortedTransactions[0].ProducerID == 7 && p.AbortedTransactions[0].FirstOffset == aborted
		return ok, fmt.Sprintf("error %d, LSO %d (want %d), HW %d, aborted %+v (want producer 7 from %d)",
			p.ErrorCode, p.LastStableOffset, open, p.HighWatermark, p.AbortedTransactions, aborted)
	})
	marker(next, 8, true)
	waitFor(t, 30*time.Second, "the commit marker frees the last stable offset", func() (bool, string) {
		p, err := fetch(next)
		if err != nil {
			return false, err.Error()
		}
		return p.LastStableOffset == p.HighWatermark && p.HighWatermark > open+1,
			fmt.Sprintf("LSO %d, HW %d", p.LastStableOffset, p.HighWatermark)
	})
}
