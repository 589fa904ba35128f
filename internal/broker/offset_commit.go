package broker

// OffsetCommit (key 8), v0-v9.
//
// group.Coordinator.CommitOffsets checks the committer against the group
// (generation -1 with no member id is a standalone commit, accepted while
// the group is empty), appends the offsets to __consumer_offsets and answers
// only once that append succeeded. Fields by version: v1 generation, member
// id and a per-partition commit timestamp; v2-v4 retention_time_ms (an
// explicit expiry, KIP-211); v6+ leader epoch; v7+ group.instance.id. v9+
// answers GROUP_ID_NOT_FOUND rather than ILLEGAL_GENERATION for a
// generation-based commit to a group that does not exist. Metadata longer
// than offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE for that
// partition.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.OffsetCommit, 0, 9, (*Broker).handleOffsetCommit) }

func (b *Broker) handleOffsetCommit(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := group.CommitRequest{
		GroupID:                   req.Group,
		Generation:                -1,
		GroupIDNotFoundForUnknown: r.Version >= 9,
	}
	if r.Version >= 1 {
		cr.Generation, cr.MemberID = req.Generation, req.MemberID
	}
	if r.Version >= 7 {
		cr.InstanceID = req.InstanceID
	}
	if r.Version >= 2 && r.Version <= 4 && req.RetentionTimeMillis != -1 {
		cr.Retention, cr.RetentionSet = time.Duration(req.RetentionTimeMillis)*time.Millisecond, true
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			o := group.CommitOffset{
				TopicPartition:  group.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:          p.Offset,
				LeaderEpoch:     -1,
				Metadata:        p.Metadata,
				CommitTimestamp: -1,
			}
			if r.Version >= 6 {
				o.LeaderEpoch = p.LeaderEpoch
			}
			if r.Version == 1 {
				o.CommitTimestamp = p.Timestamp
			}
			cr.Offsets = append(cr.Offsets, o)
		}
	}
	var groupErr error
	var errs []error
	if b.groups == nil {
		groupErr = errNoCoordinator
	} else {
		groupErr, errs = b.groups.CommitOffsets(ctx, cr)
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			err := groupErr
			if err == nil {
				err = errs[i]
			}
			rp.ErrorCode = b.errCode(err)
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
