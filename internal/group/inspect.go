package group

// A read-only view of __consumer_offsets records for offline inspection
// (vltava dump-log --offsets-decoder, as kafka-dump-log.sh's), decoded by
// the coordinator's own record codecs.

import (
	"encoding/base64"
	"fmt"
)

// OffsetsRecord is one __consumer_offsets record, decoded. Key names the
// record (its type and the group, topic, partition or member); Payload is
// nil for a tombstone.
type OffsetsRecord struct {
	Key     map[string]any `json:"key"`
	Payload map[string]any `json:"payload"`
}

// DecodeOffsetsRecord decodes the key and value of a __consumer_offsets
// record. ok is false for record types the coordinator does not write
// (share groups, streams groups), which Kafka's loader skips as well.
func DecodeOffsetsRecord(key, value []byte) (rec OffsetsRecord, ok bool, err error) {
	r, ok, err := decodeGroupRecord(key, value)
	if err != nil || !ok {
		return OffsetsRecord{}, ok, err
	}
	switch {
	case r.isOffset:
		rec.Key = map[string]any{"type": "offset_commit", "group": r.group, "topic": r.tp.Topic, "partition": r.tp.Partition}
		if !r.tombstone {
			rec.Payload = map[string]any{"offset": r.offset.Offset, "leader_epoch": r.offset.LeaderEpoch,
				"metadata": r.offset.Metadata, "commit_timestamp": r.offset.CommitTimestamp,
				"expire_timestamp": r.offset.ExpireTimestamp}
		}
	case r.consumer != nil:
		c := r.consumer
		rec.Key = map[string]any{"type": consumerRecordName(c.kind), "group": c.group}
		if c.member != "" {
			rec.Key["member"] = c.member
		}
		if !c.tombstone {
			rec.Payload = consumerPayload(c)
		}
	default:
		rec.Key = map[string]any{"type": "group_metadata", "group": r.group}
		if m := r.meta; !r.tombstone && m != nil {
			members := []map[string]any{}
			for _, mm := range m.Members {
				members = append(members, map[string]any{"member_id": mm.MemberID, "group_instance_id": mm.InstanceID,
					"client_id": mm.ClientID, "client_host": mm.ClientHost, "rebalance_timeout": mm.RebalanceTimeoutMillis,
					"session_timeout": mm.SessionTimeoutMillis, "subscription": base64.StdEncoding.EncodeToString(mm.Subscription),
					"assignment": base64.StdEncoding.EncodeToString(mm.Assignment)})
			}
			rec.Payload = map[string]any{"protocol_type": m.ProtocolType, "generation": m.Generation,
				"protocol": m.Protocol, "leader": m.Leader, "current_state_timestamp": m.CurrentStateTimestamp,
				"members": members}
		}
	}
	return rec, true, nil
}

func consumerRecordName(kind int16) string {
	switch kind {
	case recConsumerGroupMetadata:
		return "consumer_group_metadata"
	case recConsumerMemberMetadata:
		return "consumer_group_member_metadata"
	case recTargetAssignmentMetadata:
		return "consumer_group_target_assignment_metadata"
	case recTargetAssignmentMember:
		return "consumer_group_target_assignment_member"
	case recCurrentMemberAssignment:
		return "consumer_group_current_member_assignment"
	}
	return fmt.Sprintf("type_%d", kind)
}

func assignmentJSON(a assignment) map[string][]int32 {
	out := map[string][]int32{}
	for _, id := range a.topicIDs() {
		out[base64.RawURLEncoding.EncodeToString(id[:])] = a[id]
	}
	return out
}

func consumerPayload(c *consumerRecord) map[string]any {
	switch c.kind {
	case recConsumerGroupMetadata:
		return map[string]any{"epoch": c.epoch}
	case recTargetAssignmentMetadata:
		return map[string]any{"assignment_epoch": c.epoch}
	case recConsumerMemberMetadata:
		m := c.meta
		out := map[string]any{"instance_id": m.instanceID, "rack_id": m.rackID, "client_id": m.clientID,
			"client_host": m.clientHost, "subscribed_topic_names": m.topics, "subscribed_topic_regex": m.regex,
			"rebalance_timeout_ms": m.rebalanceTimeoutMs, "server_assignor": m.serverAssignor}
		if cm := m.classic; cm != nil {
			protocols := []map[string]any{}
			for _, p := range cm.protocols {
				protocols = append(protocols, map[string]any{"name": p.Name, "metadata": base64.StdEncoding.EncodeToString(p.Metadata)})
			}
			out["classic_member_metadata"] = map[string]any{"session_timeout_ms": cm.sessionTimeoutMs, "supported_protocols": protocols}
		}
		return out
	case recTargetAssignmentMember:
		return map[string]any{"topic_partitions": assignmentJSON(c.partitions)}
	case recCurrentMemberAssignment:
		return map[string]any{"member_epoch": c.memberEpoch, "previous_member_epoch": c.prevEpoch,
			"state": int8(c.state), "assigned_partitions": assignmentJSON(c.partitions),
			"partitions_pending_revocation": assignmentJSON(c.revoking)}
	}
	return map[string]any{}
}
