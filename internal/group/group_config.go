package group

// Per-group dynamic configs (KIP-848, Kafka's GroupConfigManager): a
// consumer group's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms, stored in the metadata log as GROUP
// ConfigRecords, override group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms for that group. As in Kafka they are
// read on every heartbeat, so existing members pick a change up on their
// next one: the heartbeat interval in the response, the session timer
// restarted with the new timeout.

import (
	"strconv"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
)

// consumerTimeouts are one group's overrides; zero means not overridden.
type consumerTimeouts struct {
	session, heartbeat time.Duration
}

// groupTimeoutsOfImage extracts the groups' timeout overrides from img. The
// controller validated them against the bounds; a value that does not
// parse (written by a newer version, say) is left to the broker default.
func groupTimeoutsOfImage(img *metadata.Image) map[string]consumerTimeouts {
	out := map[string]consumerTimeouts{}
	ms := func(v string) time.Duration {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			return 0
		}
		return time.Duration(n) * time.Millisecond
	}
	for id, cfg := range img.GroupConfigs() {
		t := consumerTimeouts{
			session:   ms(cfg[config.GroupConsumerSessionTimeoutKey]),
			heartbeat: ms(cfg[config.GroupConsumerHeartbeatIntervalKey]),
		}
		if t != (consumerTimeouts{}) {
			out[id] = t
		}
	}
	return out
}

// setGroupTimeouts replaces the per-group overrides. The map is published
// whole and never modified, so heartbeats read it without taking c.mu.
func (c *Coordinator) setGroupTimeouts(m map[string]consumerTimeouts) {
	c.groupTimeouts.Store(&m)
}

func (c *Coordinator) groupOverrides(groupID string) consumerTimeouts {
	if m := c.groupTimeouts.Load(); m != nil {
		return (*m)[groupID]
	}
	return consumerTimeouts{}
}

// consumerSessionTimeout is the session of groupID's consumer-protocol
// members: the group's consumer.session.timeout.ms, else the broker's.
func (c *Coordinator) consumerSessionTimeout(groupID string) time.Duration {
	if t := c.groupOverrides(groupID).session; t > 0 {
		return t
	}
	return c.cfg.ConsumerSessionTimeout
}

// consumerHeartbeatInterval is the heartbeat interval given to groupID's
// members: the group's consumer.heartbeat.interval.ms, else the broker's.
func (c *Coordinator) consumerHeartbeatInterval(groupID string) time.Duration {
	if t := c.groupOverrides(groupID).heartbeat; t > 0 {
		return t
	}
	return c.cfg.ConsumerHeartbeatInterval
}
