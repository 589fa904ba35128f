package broker

// DescribeQuorum (key 55), v0-v2 (KIP-595, KIP-836, KIP-853): the metadata
// quorum (topic __cluster_metadata, partition 0): leader, epoch, high
// watermark, and each voter's and observer's log end offset and fetch
// times; v2 adds each replica's directory id (zero in a static quorum) and
// the voters' controller endpoints (Nodes, under the controller listener's
// name). Kafka answers it on the quorum leader; brokers forward it there,
// and a node that is not the leader answers the partition with
// NOT_LEADER_OR_FOLLOWER. Offsets are raft log indexes (see
// quorum.QuorumState).

import (
	"context"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/server"
)

// metadataTopic is the name of the metadata partition, as in Kafka.
const metadataTopic = "__cluster_metadata"

func init() { register(kmsg.DescribeQuorum, 0, 2, (*Broker).handleDescribeQuorum) }

func (b *Broker) handleDescribeQuorum(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	leader := b.quorum != nil && b.quorum.IsLeader()
	if !leader && b.quorum != nil && r.ClientID != controller.ForwardClientID && b.channel != nil {
		if fwd, err := b.channel.Forward(ctx, req); err == nil {
			return fwd, nil
		}
	}
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			p.LeaderID = -1
			switch {
			case rt.Topic != metadataTopic || rp.Partition != 0:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case b.quorum == nil || !leader:
				p.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				qs, err := b.quorum.QuorumState()
				if err != nil {
					p.ErrorCode = b.errCode(err)
					break
				}
				p.LeaderID, p.LeaderEpoch, p.HighWatermark = qs.LeaderID, qs.LeaderEpoch, qs.HighWatermark
				for _, v := range qs.Voters {
					p.CurrentVoters = append(p.CurrentVoters, replicaState(v))
					if n, ok := b.quorumNode(v); ok {
						resp.Nodes = append(resp.Nodes, n)
					}
				}
				for _, o := range qs.Observers {
					p.Observers = append(p.Observers, replicaState(o))
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

func replicaState(s quorum.ReplicaState) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	rs.ReplicaID, rs.ReplicaDirectoryID, rs.LogEndOffset = s.ID, s.DirectoryID, s.LogEndOffset
	rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = s.LastFetchTimestamp, s.LastCaughtUpTimestamp
	return rs
}

// quorumNode is a voter's controller endpoint for v2's Nodes.
func (b *Broker) quorumNode(v quorum.ReplicaState) (kmsg.DescribeQuorumResponseNode, bool) {
	host, portStr, err := net.SplitHostPort(v.Addr)
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || port == 0 {
		return kmsg.DescribeQuorumResponseNode{}, false
	}
	name := "CONTROLLER"
	if len(b.cfg.ControllerListenerNames) > 0 {
		name = b.cfg.ControllerListenerNames[0]
	}
	n := kmsg.NewDescribeQuorumResponseNode()
	n.NodeID = v.ID
	l := kmsg.NewDescribeQuorumResponseNodeListener()
	l.Name, l.Host, l.Port = name, host, uint16(port)
	n.Listeners = append(n.Listeners, l)
	return n, true
}
