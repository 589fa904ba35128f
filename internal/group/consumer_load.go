package group

// Loading consumer groups from __consumer_offsets, and the topic metadata
// their subscriptions resolve against.

import (
	"regexp"
	"slices"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// setConsumerDefaults fills KIP-848 settings left unset with Kafka's
// defaults.
func (cfg *Config) setConsumerDefaults() {
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = 45 * time.Second
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = 5 * time.Second
	}
	cfg.ConsumerAssignors = slices.DeleteFunc(slices.Clone(cfg.ConsumerAssignors), func(n string) bool {
		_, ok := assignors[n]
		return !ok
	})
	if len(cfg.ConsumerAssignors) == 0 {
		cfg.ConsumerAssignors = []string{"uniform", "range"}
	}
	if cfg.MigrationPolicy == "" {
		cfg.MigrationPolicy = MigrationBidirectional
	}
}

// topicsOfImage lists the image's topics for subscription resolution.
func topicsOfImage(img *metadata.Image) map[string]topicMeta {
	out := map[string]topicMeta{}
	for _, t := range img.Topics() {
		out[t.Name] = topicMeta{name: t.Name, id: t.ID, partitions: int32(len(t.Partitions))}
	}
	return out
}

// setTopics replaces the topics subscriptions resolve against. Groups
// notice a change on their members' next heartbeat, as in Kafka.
func (c *Coordinator) setTopics(topics map[string]topicMeta) {
	c.mu.Lock()
	c.mu.topics = topics
	c.mu.Unlock()
}

func (c *Coordinator) topicsSnapshot() map[string]topicMeta {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.topics
}

// consumerLoad gathers one consumer group's records during a replay.
type consumerLoad struct {
	exists      bool
	epoch       int32
	targetEpoch int32
	members     map[string]*memberMetadata
	targets     map[string]assignment
	current     map[string]*consumerRecord
}

// applyConsumerRecord applies one replayed record: the last record per key
// wins, a tombstone deletes.
func applyConsumerRecord(loads map[string]*consumerLoad, r *consumerRecord) {
	l := loads[r.group]
	if l == nil {
		l = &consumerLoad{members: map[string]*memberMetadata{}, targets: map[string]assignment{}, current: map[string]*consumerRecord{}}
		loads[r.group] = l
	}
	switch r.kind {
	case recConsumerGroupMetadata:
		if r.tombstone {
			delete(loads, r.group)
			return
		}
		l.exists, l.epoch = true, r.epoch
	case recTargetAssignmentMetadata:
		if !r.tombstone {
			l.targetEpoch = r.epoch
		}
	case recConsumerMemberMetadata:
		if r.tombstone {
			delete(l.members, r.member)
		} else {
			meta := r.meta
			l.members[r.member] = &meta
		}
	case recTargetAssignmentMember:
		if r.tombstone {
			delete(l.targets, r.member)
		} else {
			l.targets[r.member] = r.partitions
		}
	case recCurrentMemberAssignment:
		if r.tombstone {
			delete(l.current, r.member)
		} else {
			l.current[r.member] = r
		}
	}
}

// restoreConsumerLocked sets the group from its loaded records.
func (g *Group) restoreConsumerLocked(l *consumerLoad) {
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch = l.epoch, l.targetEpoch
	for id, meta := range l.members {
		m := &consumerMember{id: id, memberMetadata: *meta, assigned: assignment{}, revoking: assignment{}}
		if m.regex != nil {
			// It compiled when the member sent it.
			m.re, _ = regexp.Compile("^(?:" + *m.regex + ")$")
		}
		if cur := l.current[id]; cur != nil {
			m.epoch, m.prevEpoch, m.state = cur.memberEpoch, cur.prevEpoch, cur.state
			m.assigned, m.revoking = cur.partitions, cur.revoking
		}
		if t, ok := l.targets[id]; ok {
			cg.target[id] = t
		}
		cg.install(m, nil)
	}
	g.mu.consumer = cg
	g.mu.protocolType = "consumer"
	g.mu.state = StateEmpty
	if len(cg.members) > 0 {
		g.mu.state = StateStable
	}
}

// afterConsumerLoadLocked starts the loaded members' sessions (a member
// that does not heartbeat its new coordinator in time is fenced) and
// takes the subscribed topics as they are now as the target's basis.
func (g *Group) afterConsumerLoadLocked() {
	cg := g.mu.consumer
	if topics := g.c.topicsSnapshot(); topics != nil {
		cg.subscribed, cg.subscribedKnown = cg.subscription(topics, nil, ""), true
	}
	for _, m := range cg.members {
		g.scheduleConsumerSessionLocked(m)
		g.scheduleRevocationLocked(m, nil)
	}
}
