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
//
// A partition missing from the metadata image (its topic, or the partition
// index) is UNKNOWN_TOPIC_OR_PARTITION and is not handed to the
// coordinator, as Kafka's KafkaApis filters a commit against its metadata
// cache before the group sees it; when no partition is left the group is not
// consulted at all.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
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
	img := b.meta.Image()
	// Kafka: READ on the group (else every partition is
	// GROUP_AUTHORIZATION_FAILED) and READ on each topic (else its
	// partitions are TOPIC_AUTHORIZATION_FAILED).
	groupDenied := !b.allowedGroup(r, req.Group, acl.OpRead)
	// skipped holds, for the request's partitions (in order), the error of
	// those that do not reach the group: unauthorized or not in the image.
	var skipped []error
	for _, t := range req.Topics {
		ti, topicOK := img.Topic(t.Topic)
		topicDenied := !groupDenied && !b.allowedTopic(r, t.Topic, acl.OpRead)
		for _, p := range t.Partitions {
			exists := topicOK && p.Partition >= 0 && int(p.Partition) < len(ti.Partitions) && ti.Partitions[p.Partition] != nil
			switch {
			case groupDenied:
				skipped = append(skipped, kerr.GroupAuthorizationFailed)
				continue
			case topicDenied:
				skipped = append(skipped, kerr.TopicAuthorizationFailed)
				continue
			case !exists:
				skipped = append(skipped, kerr.UnknownTopicOrPartition)
				continue
			}
			skipped = append(skipped, nil)
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
	switch {
	case len(cr.Offsets) == 0 && len(skipped) > 0:
		// Every partition is refused or unknown: nothing reaches the group.
	case b.groups == nil:
		groupErr = errNoCoordinator
	default:
		groupErr, errs = b.groups.CommitOffsets(ctx, cr)
	}
	i, k := 0, 0 // i: the request's partitions; k: those sent to the group
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			var err error
			switch {
			case skipped[i] != nil:
				err = skipped[i]
			case groupErr != nil:
				err = groupErr
			default:
				err = errs[k]
			}
			if skipped[i] == nil {
				k++
			}
			rp.ErrorCode = b.errCode(err)
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
