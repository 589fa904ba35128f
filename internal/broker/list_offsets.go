package broker

// ListOffsets (key 2), v0-v8.
//
// Timestamps: -2 earliest (log start offset), -1 latest (the high
// watermark, or the last stable offset for read_committed, v2+), -3 the
// record with the largest timestamp (KIP-734, v7+), -4 earliest local
// (KIP-1005, v8+; without tiered storage the log start offset); otherwise
// the first offset whose timestamp is at or after the given one (KIP-79),
// or -1 when there is none below the high watermark (the last stable
// offset for read_committed, as Kafka's fetchOffsetForTimestamp bounds it). v4+ checks the client's current leader epoch
// (KIP-320) and returns the leader epoch of the offset found.
//
// v0 is the multi-offset form Kafka 4 dropped (KIP-896) and Kafka 3.9
// served, still sent by older clients (kafka-python with api_version
// 0.9): up to max_num_offsets offsets, largest first, from the segment
// boundaries dated by their files' modification times
// (storage.Log.LegacyOffsetsBefore); a consumer's list is capped at the
// high watermark, which leads it when some offsets lie past it, as Kafka's
// Partition.legacyFetchOffsetsForTimestamp does.
//
// Consumers (replica id -1) are answered by the leader only
// (NOT_LEADER_OR_FOLLOWER elsewhere). As in Kafka, a broker replica
// (replica id >= 0) gets the log end offset for LATEST rather than the high
// watermark, and the debugging replica id -2 may also ask a follower.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.ListOffsets, 0, 8, (*Broker).handleListOffsets) }

const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
)

func (b *Broker) handleListOffsets(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	img := b.meta.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		denied := !b.allowedTopic(r, rt.Topic, acl.OpDescribe) // Kafka: DESCRIBE on the topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.ErrorCode = b.listOffset(img, r.Version, req.ReplicaID, req.IsolationLevel, rt.Topic, rp, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// debuggingReplicaID is Kafka's replica id for tools allowed to read from
// followers.
const debuggingReplicaID = -2

func (b *Broker) listOffset(img *metadata.Image, version int16, replicaID int32, isolation int8, topic string,
	rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	t, ok := img.Topic(topic)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code
	}
	// The debugging replica id may read from followers, as in Kafka.
	p, err := b.hostedPartition(img, t, rp.Partition, replicaID != debuggingReplicaID)
	if err == nil && version >= 4 {
		err = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
	}
	if err != nil {
		return b.errCode(err)
	}
	epoch := p.LeaderEpoch()
	l := p.Log()
	if version == 0 {
		sp.OldStyleOffsets = legacyOffsets(p, rp.Timestamp, int(rp.MaxNumOffsets), replicaID == -1)
		return 0
	}
	switch ts := rp.Timestamp; {
	case ts == listLatest:
		switch {
		case replicaID >= 0 || replicaID == debuggingReplicaID:
			sp.Offset = p.LogEndOffset()
		case isolation == 1:
			sp.Offset = p.LastStableOffset()
		default:
			sp.Offset = p.HighWatermark()
		}
		sp.LeaderEpoch = epoch
	case ts == listEarliest:
		sp.Offset = p.Log().EarliestOffset() // both tiers
		sp.LeaderEpoch = epochAtOffset(p, sp.Offset)
	case ts == listEarliestLocal && version >= 8:
		sp.Offset = p.LogStartOffset()
		sp.LeaderEpoch = epochAtOffset(p, sp.Offset)
	case ts == listMaxTimestamp && version >= 7:
		sp.Offset, sp.Timestamp, sp.LeaderEpoch = l.MaxTimestampOffset()
	case ts < 0:
		return kerr.InvalidRequest.Code
	default:
		if b.remote != nil && p.Log().Config().RemoteStorageEnable && p.Log().EarliestOffset() < p.LogStartOffset() {
			ctx, cancel := b.remoteContext()
			off, found, ep, ok, err := b.remote.OffsetForTimestamp(ctx, p, ts)
			cancel()
			if err != nil {
				b.log.Warn("remote timestamp lookup failed", "topic", p.Topic, "partition", p.Index, "err", err)
				return kerr.KafkaStorageError.Code
			}
			if ok {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, found, ep
				break
			}
		}
		off, found, ep, ok := l.OffsetForTimestamp(ts)
		bound := p.HighWatermark()
		if isolation == 1 && replicaID < 0 {
			bound = p.LastStableOffset()
		}
		if ok && off < bound {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, found, ep
		}
	}
	if version < 4 {
		sp.LeaderEpoch = -1
	}
	return 0
}

// legacyOffsets is ListOffsets v0's answer for one partition.
func legacyOffsets(p *partition.Partition, ts int64, maxNum int, fromConsumer bool) []int64 {
	offsets := p.Log().LegacyOffsetsBefore(ts, maxNum, time.Now())
	if !fromConsumer {
		return offsets
	}
	hw := p.HighWatermark()
	i := 0
	for i < len(offsets) && offsets[i] > hw {
		i++
	}
	if i == 0 {
		return offsets
	}
	return append([]int64{hw}, offsets[i:]...)
}

// epochAtOffset is the leader epoch in force at offset, as Kafka returns it
// with EARLIEST (its leader-epoch cache's epochForOffset), or the current
// leader epoch when offset is the log end of a log with no epochs yet:
// Kafka's cache gets an entry for the leader epoch when the replica becomes
// leader, before anything is appended. -1 when unknown.
func epochAtOffset(p *partition.Partition, offset int64) int32 {
	if e := p.Log().EpochForOffset(offset); e >= 0 {
		return e
	}
	if offset >= p.LogEndOffset() {
		return p.LeaderEpoch()
	}
	return -1
}
