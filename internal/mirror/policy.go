// Package mirror is MirrorMaker 2 for Vltava: it copies topics, their
// configs and ACLs from a source cluster to a target cluster, records offset
// syncs, translates consumer group offsets into checkpoints (and, with
// sync.group.offsets.enabled, into the target's groups), and emits
// heartbeats, with MM2's config names and record formats. It is a client
// of both clusters (franz-go), so the source may be any Kafka-compatible
// cluster. `vltava mirror` drives it from an mm2.properties file
// (Kafka's connect-mirror-maker dedicated mode).
package mirror

import (
	"fmt"
	"strings"
)

// Kafka's class names of the two replication policies.
const (
	DefaultPolicyClass  = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	IdentityPolicyClass = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
)

// HeartbeatsTopic is the topic heartbeats are written to on each target.
const HeartbeatsTopic = "heartbeats"

// ReplicationPolicy names remote topics, as Kafka's ReplicationPolicy.
type ReplicationPolicy interface {
	// FormatRemoteTopic is the name on the target of a topic from source.
	FormatRemoteTopic(source, topic string) string
	// TopicSource is the cluster a remote topic came from ("" if local).
	TopicSource(topic string) string
	// UpstreamTopic is the topic's name on its source cluster ("" if local).
	UpstreamTopic(topic string) string
	// OffsetSyncsTopic is the offset-syncs topic of a flow to target.
	OffsetSyncsTopic(target string) string
	// CheckpointsTopic is the checkpoints topic on the target of a flow
	// from source.
	CheckpointsTopic(source string) string
}

// NewPolicy returns the named policy (Kafka's class name or its simple
// name) with the separator.
func NewPolicy(class, separator, sourceAlias string) (ReplicationPolicy, error) {
	if separator == "" {
		return nil, fmt.Errorf("replication.policy.separator must not be empty")
	}
	switch class {
	case DefaultPolicyClass, "DefaultReplicationPolicy":
		return DefaultPolicy{Separator: separator}, nil
	case IdentityPolicyClass, "IdentityReplicationPolicy":
		return IdentityPolicy{DefaultPolicy: DefaultPolicy{Separator: separator}, SourceAlias: sourceAlias}, nil
	}
	return nil, fmt.Errorf("replication.policy.class %q is not one of %s, %s", class, DefaultPolicyClass, IdentityPolicyClass)
}

// DefaultPolicy prefixes remote topics with the source alias and the
// separator: topic t from A is A.t on B.
type DefaultPolicy struct{ Separator string }

// FormatRemoteTopic is source + separator + topic.
func (p DefaultPolicy) FormatRemoteTopic(source, topic string) string {
	return source + p.Separator + topic
}

// TopicSource is the prefix before the first separator.
func (p DefaultPolicy) TopicSource(topic string) string {
	i := strings.Index(topic, p.Separator)
	if i <= 0 {
		return ""
	}
	return topic[:i]
}

// UpstreamTopic is the name after the first separator.
func (p DefaultPolicy) UpstreamTopic(topic string) string {
	i := strings.Index(topic, p.Separator)
	if i <= 0 {
		return ""
	}
	return topic[i+len(p.Separator):]
}

// OffsetSyncsTopic is mm2-offset-syncs.<target>.internal (the separator
// replaces the dots, as Kafka does).
func (p DefaultPolicy) OffsetSyncsTopic(target string) string {
	return "mm2-offset-syncs" + p.Separator + target + p.Separator + "internal"
}

// CheckpointsTopic is <source>.checkpoints.internal.
func (p DefaultPolicy) CheckpointsTopic(source string) string {
	return source + p.Separator + "checkpoints" + p.Separator + "internal"
}

// IdentityPolicy keeps topic names (KIP-690). It cannot tell remote topics
// from local ones, so it cannot prevent cycles: use it for one-way flows.
// Heartbeats are the exception, named as DefaultPolicy names them, so that
// they still show the path they took.
type IdentityPolicy struct {
	DefaultPolicy
	SourceAlias string
}

// FormatRemoteTopic is the topic itself (heartbeats keep their prefix).
func (p IdentityPolicy) FormatRemoteTopic(source, topic string) string {
	if isHeartbeats(topic) {
		return p.DefaultPolicy.FormatRemoteTopic(source, topic)
	}
	return topic
}

// TopicSource is the flow's source for every topic except heartbeats.
func (p IdentityPolicy) TopicSource(topic string) string {
	if isHeartbeats(topic) {
		return p.DefaultPolicy.TopicSource(topic)
	}
	return p.SourceAlias
}

// UpstreamTopic is the topic itself (heartbeats lose their prefix).
func (p IdentityPolicy) UpstreamTopic(topic string) string {
	if isHeartbeats(topic) {
		return p.DefaultPolicy.UpstreamTopic(topic)
	}
	return topic
}

func isHeartbeats(topic string) bool {
	return topic == HeartbeatsTopic || strings.HasSuffix(topic, "."+HeartbeatsTopic)
}

// IsCycle reports whether mirroring topic to target would bring it back to
// a cluster it came from.
func IsCycle(p ReplicationPolicy, topic, target string) bool {
	if _, identity := p.(IdentityPolicy); identity && !isHeartbeats(topic) {
		return false
	}
	for depth := 0; depth < 64 && topic != ""; depth++ {
		src := p.TopicSource(topic)
		if src == "" {
			return false
		}
		if src == target {
			return true
		}
		topic = p.UpstreamTopic(topic)
	}
	return false
}

// IsInternalTopic reports MM2's and Kafka's internal topics, never mirrored.
func IsInternalTopic(topic string) bool {
	return strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".") ||
		strings.HasSuffix(topic, ".internal") || strings.HasSuffix(topic, "-internal") ||
		strings.HasPrefix(topic, "mm2-")
}
