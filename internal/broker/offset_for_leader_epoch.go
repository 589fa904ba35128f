package broker

// OffsetForLeaderEpoch (key 23), v0-v4.
//
// For each partition and leader epoch, returns the largest epoch at or
// below the one asked for and the offset where it ended (the start of the
// next epoch, or the log end offset for the latest): what a consumer
// (KIP-320) or follower uses to detect a diverged log. v2+ checks the
// client's current leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
// An epoch older than any the log knows gives UNDEFINED (-1, -1).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, (*Broker).handleOffsetForLeaderEpoch) }

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	img := b.meta.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			t, ok := img.Topic(rt.Topic)
			p := b.partitions.Get(rt.Topic, rp.Partition)
			switch {
			case !ok:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if _, exists := img.Partition(t.Name, rp.Partition); exists {
					sp.ErrorCode = kerr.NotLeaderForPartition.Code
				}
			case p.Leader() != b.nodeID:
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case r.Version >= 2 && rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < p.LeaderEpoch():
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case r.Version >= 2 && rp.CurrentLeaderEpoch > p.LeaderEpoch():
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			default:
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
