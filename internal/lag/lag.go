// Package lag computes consumer lag on the broker: for every group this
// broker coordinates, the committed offset of each partition against the
// partition's high watermark (offset lag) and the age of the record at the
// committed offset (time lag), and Burrow's status rules over a sliding
// window of samples (rules.go). It feeds the kafka_consumergroup_* series,
// named as kafka_exporter names them so its dashboards work unchanged, the
// /v1/consumer-lag endpoint and `vltava groups describe`'s time lag.
//
// A group's lag is reported by its coordinator: the partitions this broker
// hosts (as leader or follower) from their logs, the others through
// Remote, a Kafka client reading their leaders. Groups without members keep their committed
// offsets, and so their series, until the offsets expire
// (offsets.retention.minutes).
package lag

import (
	"context"
	"slices"
	"time"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/partition"
)

// Groups is what lag needs of the group coordinator.
type Groups interface {
	ListGroups(states, types []string) ([]group.GroupListing, error)
	FetchOffsets(groupID string, partitions []group.TopicPartition) ([]group.FetchedOffset, error)
	DescribeGroup(groupID string) (group.GroupDescription, error)
	DescribeConsumerGroup(groupID string) (group.ConsumerGroupDescription, error)
}

// Partitions is what lag needs of the hosted partitions.
type Partitions interface {
	Get(topic string, index int32) *partition.Partition
}

// PartitionLag is one committed partition of a group.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// CurrentOffset is the committed offset, EndOffset the high
	// watermark and Lag their difference: what a read_uncommitted
	// consumer has left to read (kafka_exporter's lag).
	CurrentOffset int64 `json:"current_offset"`
	EndOffset     int64 `json:"end_offset"`
	Lag           int64 `json:"lag"`
	// StableEndOffset is the last stable offset (below the first record
	// of a transaction still open) and StableLag what a read_committed
	// consumer can read now: StableEndOffset − CurrentOffset, 0 when the
	// group committed past it (a read_uncommitted group reading into an
	// open transaction). The broker cannot tell a group's isolation
	// level (it is a consumer setting, not sent with the group's
	// requests), so both are reported.
	StableEndOffset int64 `json:"stable_end_offset"`
	StableLag       int64 `json:"stable_lag"`
	// LagSeconds is the age of the record at the committed offset: how
	// long ago the next record the group will read was written. 0 when
	// the group is caught up.
	LagSeconds float64 `json:"lag_seconds"`
	// Status is the partition's Burrow status (rules.go).
	Status Status `json:"status"`
}

// GroupLag is one group's lag.
type GroupLag struct {
	Group    string `json:"group"`
	State    string `json:"state"`
	Members  int    `json:"members"`
	Status   Status `json:"status"`
	TotalLag int64  `json:"total_lag"`
	// TotalStableLag sums the partitions' StableLag.
	TotalStableLag int64          `json:"total_stable_lag"`
	MaxLagSecs     float64        `json:"max_lag_seconds"`
	Partitions     []PartitionLag `json:"partitions"`
}

// Computer reads the groups and partitions and computes lag.
type Computer struct {
	Groups     Groups
	Partitions Partitions
	// Remote, if set, reads the partitions not hosted here from their
	// leaders; nil: they are left out.
	Remote Remote
	stamps timestampCache
}

// members counts a group's members, either protocol.
func (c *Computer) members(g group.GroupListing) int {
	if g.Type == "consumer" {
		d, err := c.Groups.DescribeConsumerGroup(g.GroupID)
		if err != nil {
			return 0
		}
		return len(d.Members)
	}
	d, err := c.Groups.DescribeGroup(g.GroupID)
	if err != nil {
		return 0
	}
	return len(d.Members)
}

// Compute returns the lag of every group coordinated here, at now. Groups
// still loading are skipped (the coordinator answers
// COORDINATOR_LOAD_IN_PROGRESS until loaded).
func (c *Computer) Compute(now time.Time) []GroupLag {
	groups, err := c.Groups.ListGroups(nil, nil)
	if err != nil {
		return nil
	}
	out := make([]GroupLag, 0, len(groups))
	// Committed partitions hosted elsewhere, filled in from their leaders
	// after the local ones.
	type pending struct{ group, index int }
	var remote []pending
	remoteTPs := map[string][]int32{}
	for _, g := range groups {
		offsets, err := c.Groups.FetchOffsets(g.GroupID, nil)
		if err != nil {
			continue
		}
		gl := GroupLag{Group: g.GroupID, State: g.State, Members: c.members(g)}
		for _, o := range offsets {
			if o.Err != nil || o.Offset < 0 {
				continue
			}
			p := c.Partitions.Get(o.Topic, o.Partition)
			if p == nil {
				if c.Remote != nil {
					remote = append(remote, pending{len(out), len(gl.Partitions)})
					remoteTPs[o.Topic] = append(remoteTPs[o.Topic], o.Partition)
					gl.Partitions = append(gl.Partitions, PartitionLag{Topic: o.Topic, Partition: o.Partition, CurrentOffset: o.Offset, EndOffset: -1})
				}
				continue
			}
			// The LSO first: it never passes the high watermark, so read
			// in this order the pair is never inverted by an append in
			// between.
			stable := p.LastStableOffset()
			pl := PartitionLag{Topic: o.Topic, Partition: o.Partition, CurrentOffset: o.Offset, EndOffset: p.HighWatermark()}
			pl.setEnds(pl.EndOffset, stable)
			if pl.Lag > 0 {
				if ts, ok := c.stamps.timestampAt(p, o.Offset); ok {
					pl.LagSeconds = max(float64(now.UnixMilli()-ts)/1000, 0)
				}
			}
			gl.TotalLag += pl.Lag
			gl.TotalStableLag += pl.StableLag
			gl.MaxLagSecs = max(gl.MaxLagSecs, pl.LagSeconds)
			gl.Partitions = append(gl.Partitions, pl)
		}
		out = append(out, gl)
	}
	if len(remote) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
	defer cancel()
	ends := c.Remote.EndOffsets(ctx, remoteTPs)
	for _, r := range remote {
		g := &out[r.group]
		pl := &g.Partitions[r.index]
		end, ok := ends[pl.Topic][pl.Partition]
		if !ok {
			continue // unreadable now: no lag is better than a wrong one
		}
		pl.setEnds(end.High, end.Stable)
		if pl.Lag > 0 {
			if ts, ok := c.stamps.timestampRemote(ctx, c.Remote, pl.Topic, pl.Partition, pl.CurrentOffset); ok {
				pl.LagSeconds = max(float64(now.UnixMilli()-ts)/1000, 0)
			}
		}
		g.TotalLag += pl.Lag
		g.TotalStableLag += pl.StableLag
		g.MaxLagSecs = max(g.MaxLagSecs, pl.LagSeconds)
	}
	// Drop the remote partitions whose end could not be read.
	for gi := range out {
		out[gi].Partitions = slices.DeleteFunc(out[gi].Partitions, func(p PartitionLag) bool { return p.EndOffset < 0 })
	}
	return out
}

// setEnds sets the end offsets and both lags. A committed offset past an
// end is no lag (a group that committed ahead of a truncation, or a
// read_uncommitted group inside an open transaction), not a negative one.
func (pl *PartitionLag) setEnds(high, stable int64) {
	pl.EndOffset, pl.StableEndOffset = high, stable
	pl.Lag = max(high-pl.CurrentOffset, 0)
	pl.StableLag = max(stable-pl.CurrentOffset, 0)
}
