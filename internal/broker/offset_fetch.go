package broker

// OffsetFetch (key 9), v0-v9.
//
// Returns a group's committed offsets (-1 with empty metadata where none is
// committed). A null topic list (v2+) asks for every committed partition.
// v0-v1 report coordinator errors per partition, v2-v7 at the top level,
// v8+ per group, several groups per request (KIP-709). v5+ returns the
// leader epoch. require_stable (v7+, KIP-447): a partition whose offset
// is pending in an open transaction (TxnOffsetCommit not yet decided by a
// marker) is UNSTABLE_OFFSET_COMMIT with offset -1, and the consumer
// retries; without require_stable the last committed offset is returned. v9's member id and epoch apply to KIP-848 groups only;
// classic groups do not validate them, as in Kafka.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.OffsetFetch, 0, 9, (*Broker).handleOffsetFetch) }

func (b *Broker) handleOffsetFetch(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version >= 8 {
		for _, rg := range req.Groups {
			var tps []group.TopicPartition
			if rg.Topics != nil {
				tps = []group.TopicPartition{}
				for _, t := range rg.Topics {
					for _, p := range t.Partitions {
						tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p})
					}
				}
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			// v9+ names the fetching member of a consumer-protocol
			// group (KIP-848), whose epoch is checked.
			var member *group.FetchingMember
			if r.Version >= 9 {
				member = &group.FetchingMember{MemberID: rg.MemberID, Epoch: rg.MemberEpoch}
			}
			offsets, err := b.fetchOffsets(r, rg.Group, member, tps, req.RequireStable)
			if err != nil {
				g.ErrorCode = b.errCode(err)
				resp.Groups = append(resp.Groups, g)
				continue
			}
			for _, topic := range groupByTopic(offsets) {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = topic[0].Topic
				for _, o := range topic {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition = o.Partition
					gp.Offset, gp.LeaderEpoch = o.Offset, o.LeaderEpoch
					md := o.Metadata
					gp.Metadata = &md
					gp.ErrorCode = b.errCode(o.Err)
					gt.Partitions = append(gt.Partitions, gp)
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}

	var tps []group.TopicPartition
	if req.Topics != nil || r.Version < 2 {
		tps = []group.TopicPartition{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	offsets, err := b.fetchOffsets(r, req.Group, nil, tps, r.Version >= 7 && req.RequireStable)
	if err != nil {
		if r.Version >= 2 {
			resp.ErrorCode = b.errCode(err)
			return resp, nil
		}
		// v0-v1 have no top-level error: every partition carries it.
		offsets = nil
		for _, tp := range tps {
			offsets = append(offsets, group.FetchedOffset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1, Err: err})
		}
	}
	for _, topic := range groupByTopic(offsets) {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = topic[0].Topic
		for _, o := range topic {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition = o.Partition
			rp.Offset, rp.LeaderEpoch = o.Offset, o.LeaderEpoch
			md := o.Metadata
			rp.Metadata = &md
			rp.ErrorCode = b.errCode(o.Err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetchOffsets fetches a group's offsets as r's principal may see them
// (Kafka): DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; of the
// named partitions, those of topics it may not DESCRIBE are
// TOPIC_AUTHORIZATION_FAILED; asked for all (tps nil), those topics are
// left out. requireStable is OffsetFetch's require_stable (KIP-447).
func (b *Broker) fetchOffsets(r *server.Request, groupID string, member *group.FetchingMember, tps []group.TopicPartition, requireStable bool) ([]group.FetchedOffset, error) {
	if !b.allowedGroup(r, groupID, acl.OpDescribe) {
		return nil, kerr.GroupAuthorizationFailed
	}
	if b.groups == nil {
		return nil, errNoCoordinator
	}
	if b.trusted(r) {
		return b.groups.FetchOffsetsStable(groupID, member, tps, requireStable)
	}
	if tps == nil {
		offsets, err := b.groups.FetchOffsetsStable(groupID, member, nil, requireStable)
		return slices.DeleteFunc(offsets, func(o group.FetchedOffset) bool { return !b.allowedTopic(r, o.Topic, acl.OpDescribe) }), err
	}
	allowed := []group.TopicPartition{}
	var denied []group.FetchedOffset
	for _, tp := range tps {
		if b.allowedTopic(r, tp.Topic, acl.OpDescribe) {
			allowed = append(allowed, tp)
		} else {
			denied = append(denied, group.FetchedOffset{TopicPartition: tp, Offset: -1, LeaderEpoch: -1, Err: kerr.TopicAuthorizationFailed})
		}
	}
	offsets, err := b.groups.FetchOffsetsStable(groupID, member, allowed, requireStable)
	if err != nil {
		return nil, err
	}
	return append(offsets, denied...), nil
}

// groupByTopic splits offsets into runs of one topic, keeping the order
// topics first appear in.
func groupByTopic(offsets []group.FetchedOffset) [][]group.FetchedOffset {
	idx := map[string]int{}
	var out [][]group.FetchedOffset
	for _, o := range offsets {
		i, ok := idx[o.Topic]
		if !ok {
			i = len(out)
			idx[o.Topic] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], o)
	}
	return out
}
