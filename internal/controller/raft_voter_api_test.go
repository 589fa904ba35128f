package controller_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRaftVoterAPIsAtTheEdge sends the KIP-853 voter APIs to a broker that
// is not the quorum leader (it forwards them) and checks Kafka's codes: a
// request for another cluster is INCONSISTENT_CLUSTER_ID, and a static
// quorum (controller.quorum.voters) refuses voter changes with
// UNSUPPORTED_VERSION, as Kafka does with kraft.version 0. DescribeQuorum
// v2 lists the voters' controller endpoints.
func TestRaftVoterAPIsAtTheEdge(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.awaitConverged()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[c.other()]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()

	other := "AAAAAAAAAAAAAAAAAAAAAQ"
	rm := kmsg.NewPtrRemoveRaftVoterRequest()
	rm.ClusterID, rm.VoterID = &other, c.active()
	rmResp, err := rm.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if rmResp.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Errorf("RemoveRaftVoter for another cluster: code %d, want INCONSISTENT_CLUSTER_ID", rmResp.ErrorCode)
	}

	rm.ClusterID = nil
	if rmResp, err = rm.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if rmResp.ErrorCode != kerr.UnsupportedVersion.Code || rmResp.ErrorMessage == nil {
		t.Errorf("RemoveRaftVoter on a static quorum: code %d (%v), want UNSUPPORTED_VERSION with a message", rmResp.ErrorCode, rmResp.ErrorMessage)
	}

	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.TimeoutMillis = 9, 5000
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = "CONTROLLER", "127.0.0.1", 1
	add.Listeners = append(add.Listeners, l)
	addResp, err := add.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if addResp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("AddRaftVoter on a static quorum: code %d, want UNSUPPORTED_VERSION", addResp.ErrorCode)
	}

	dq := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, rt)
	dqResp, err := dq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if dqResp.Version < 2 || len(dqResp.Nodes) != 3 || len(dqResp.Nodes[0].Listeners) != 1 || dqResp.Nodes[0].Listeners[0].Name != "CONTROLLER" {
		t.Errorf("DescribeQuorum v%d nodes %+v, want the three voters' CONTROLLER endpoints", dqResp.Version, dqResp.Nodes)
	}
}
