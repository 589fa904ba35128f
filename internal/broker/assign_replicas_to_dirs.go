package broker

// AssignReplicasToDirs (key 73), v0, served by the active controller
// (KIP-858): a broker names the log dir of some of its replicas. Vltava's
// brokers send it for the replicas of a log dir that failed, after a
// heartbeat listing that dir in offline_log_dirs; the controller then moves
// those partitions' leadership and ISR membership away from the broker.
// Errors: NOT_CONTROLLER on other nodes, STALE_BROKER_EPOCH for an old
// registration; per partition UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
// NOT_LEADER_OR_FOLLOWER (no replica on that broker).

import (
	"github.com/vltava/vltava/internal/controller/rules"

	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.AssignReplicasToDirs, 0, 0, (*Broker).handleAssignReplicasToDirs) }

func (b *Broker) handleAssignReplicasToDirs(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AssignReplicasToDirsRequest)
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	if b.active == nil || !b.active.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	dirs := make(map[[16]byte][]rules.ReplicaRef, len(req.Directories))
	for _, d := range req.Directories {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				dirs[d.ID] = append(dirs[d.ID], rules.ReplicaRef{TopicID: t.TopicID, Partition: p.Partition})
			}
		}
	}
	verdicts, err := b.active.AssignReplicasToDirs(ctx, req.BrokerID, req.BrokerEpoch, dirs)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	for _, d := range req.Directories {
		rd := kmsg.NewAssignReplicasToDirsResponseDirectory()
		rd.ID = d.ID
		for _, t := range d.Topics {
			rt := kmsg.NewAssignReplicasToDirsResponseDirectoryTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewAssignReplicasToDirsResponseDirectoryTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = b.errCode(verdicts[rules.ReplicaRef{TopicID: t.TopicID, Partition: p.Partition}])
				rt.Partitions = append(rt.Partitions, rp)
			}
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	return resp, nil
}
