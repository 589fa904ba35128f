package broker

// OffsetForLeaderEpoch (key 23), v0-v4.
//
// For each partition and leader epoch, returns the largest epoch at or
// below the one asked for and the offset where it ended (the start of the
// next epoch, or the log end offset for the latest): what a consumer
// (KIP-320) or follower uses to detect a diverged log. v2+ checks the
// client's current leader epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
// An epoch older than any the log knows gives UNDEFINED (-1, -1).
//
// Consumers (replica id -1, v3+) and follower brokers (their replica id)
// are both answered by the leader only, as in Kafka: a follower's epoch
// history is what it is checking, so asking another follower is pointless
// (NOT_LEADER_OR_FOLLOWER). A leader's cache has its current epoch from the
// moment it took over (partition.applySettings), so the latest epoch is
// answered with the log end offset even before anything is appended in it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 0, 4, (*Broker).handleOffsetForLeaderEpoch) }

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	img := b.meta.Image()
	// Kafka: CLUSTER_ACTION (a follower's) allows every topic; without
	// it, each topic needs DESCRIBE, else TOPIC_AUTHORIZATION_FAILED.
	everyTopic := b.allowedCluster(r, acl.OpClusterAction)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		var denied error
		if !everyTopic && !b.allowedTopic(r, rt.Topic, acl.OpDescribe) {
			denied = kerr.TopicAuthorizationFailed
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			var p *partition.Partition
			t, ok := img.Topic(rt.Topic)
			err := error(kerr.UnknownTopicOrPartition)
			if denied != nil {
				err = denied
			} else if ok {
				p, err = b.hostedPartition(img, t, rp.Partition, true)
			}
			if err == nil && r.Version >= 2 {
				err = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if err != nil {
				sp.ErrorCode = b.errCode(err)
			} else {
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
