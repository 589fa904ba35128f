package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Checkpointer translates the source's consumer group offsets for the
// target (MirrorCheckpointConnector): it reads the offset syncs, writes
// checkpoints to <source>.checkpoints.internal on the target, and with
// sync.group.offsets.enabled commits them into target groups with no
// active members. One goroutine (Run) owns its state; the sync reader
// feeds the SyncStore, which has its own lock.
type Checkpointer struct {
	flow     Flow
	src, tgt Cluster
	log      *slog.Logger
	store    *SyncStore
	// last is the checkpoint emitted per group and remote partition.
	last map[string]map[partitionKey]Checkpoint
}

// NewCheckpointer makes the flow's checkpointer.
func NewCheckpointer(f Flow, src, tgt Cluster, log *slog.Logger) *Checkpointer {
	return &Checkpointer{flow: f, src: src, tgt: tgt, log: log.With("flow", f.Name(), "connector", "MirrorCheckpointConnector"),
		store: NewSyncStore(), last: map[string]map[partitionKey]Checkpoint{}}
}

// Run checkpoints until ctx ends, retrying with backoff after failures.
func (c *Checkpointer) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.log.Warn("checkpointing failed, retrying", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (c *Checkpointer) runOnce(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := c.flow
	srcCl, err := c.src.Client()
	if err != nil {
		return err
	}
	defer srcCl.Close()
	tgtCl, err := c.tgt.Client()
	if err != nil {
		return err
	}
	defer tgtCl.Close()
	srcAdm, tgtAdm := kadm.NewClient(srcCl), kadm.NewClient(tgtCl)
	if err := c.prepare(ctx, tgtAdm); err != nil {
		return err
	}
	stop, err := c.followSyncs(ctx)
	if err != nil {
		return err
	}
	defer stop()

	cpTopic := f.Policy.CheckpointsTopic(f.Source)
	var groups []string
	var lastGroups, lastSync time.Time
	tick := time.NewTicker(max(f.EmitCheckpointsInterval, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now()
		if groups == nil || (f.RefreshGroups && now.Sub(lastGroups) >= f.RefreshGroupsInterval) {
			if groups, err = c.listGroups(ctx, srcAdm); err != nil {
				return err
			}
			lastGroups = now
		}
		var out []*kgo.Record
		for _, cp := range c.due(ctx, srcAdm, groups) {
			out = append(out, &kgo.Record{Topic: cpTopic, Key: cp.Key(), Value: cp.Value()})
		}
		if len(out) > 0 {
			if err := tgtCl.ProduceSync(ctx, out...).FirstErr(); err != nil {
				return fmt.Errorf("writing checkpoints: %w", err)
			}
		}
		if f.SyncGroupOffsets && now.Sub(lastSync) >= f.SyncGroupOffsetsInterval {
			lastSync = now
			c.syncGroups(ctx, tgtAdm)
		}
	}
}

// prepare creates the checkpoints topic on the target and seeds the last
// checkpoints from it: a restart never emits an older checkpoint than one
// before it (KAFKA-14666).
func (c *Checkpointer) prepare(ctx context.Context, tgtAdm *kadm.Client) error {
	f := c.flow
	cpTopic := f.Policy.CheckpointsTopic(f.Source)
	if err := ensureTopic(ctx, tgtAdm, cpTopic, 1, f.CheckpointsReplicationFactor, true); err != nil {
		return err
	}
	seed, err := c.tgt.Client()
	if err != nil {
		return err
	}
	defer seed.Close()
	err = readAll(ctx, seed, cpTopic, func(r *kgo.Record) {
		if cp, err := DecodeCheckpoint(r.Key, r.Value); err == nil {
			c.remember(cp)
		}
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", cpTopic, err)
	}
	return nil
}

// followSyncs reads the offset-syncs topic into the store until stop is
// called or ctx ends.
func (c *Checkpointer) followSyncs(ctx context.Context) (stop func(), err error) {
	f := c.flow
	syncsAt := c.src
	if f.OffsetSyncsOnTarget {
		syncsAt = c.tgt
	}
	syncs, err := syncsAt.Client(kgo.ConsumeTopics(f.Policy.OffsetSyncsTopic(f.Target)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := syncs.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				if o, err := DecodeOffsetSync(r.Key, r.Value); err == nil {
					c.store.Add(o)
				}
			})
		}
	}()
	return func() { cancel(); <-done; syncs.Close() }, nil
}

// listGroups lists the source's groups the flow checkpoints.
func (c *Checkpointer) listGroups(ctx context.Context, srcAdm *kadm.Client) ([]string, error) {
	listed, err := srcAdm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing source groups: %w", err)
	}
	groups := []string{}
	for _, g := range listed.Groups() {
		if c.flow.GroupMirrored(g) {
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// due translates the groups' committed offsets on the source and returns
// the checkpoints to emit (those that advance).
func (c *Checkpointer) due(ctx context.Context, srcAdm *kadm.Client, groups []string) []Checkpoint {
	f := c.flow
	var out []Checkpoint
	for _, g := range groups {
		offs, err := srcAdm.FetchOffsets(ctx, g)
		if err != nil {
			continue
		}
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 || !f.Mirrored(o.Topic) {
				return
			}
			down, ok := c.store.Translate(o.Topic, o.Partition, o.At)
			if !ok {
				return
			}
			cp := Checkpoint{Group: g, Topic: f.Policy.FormatRemoteTopic(f.Source, o.Topic), Partition: o.Partition, Upstream: o.At, Downstream: down, Metadata: o.Metadata}
			if c.advance(cp) {
				out = append(out, cp)
			}
		})
	}
	return out
}

// remember records a checkpoint as the last one of its partition.
func (c *Checkpointer) remember(cp Checkpoint) {
	m := c.last[cp.Group]
	if m == nil {
		m = map[partitionKey]Checkpoint{}
		c.last[cp.Group] = m
	}
	m[partitionKey{cp.Topic, cp.Partition}] = cp
}

// advance reports whether cp is to be emitted: it moves forward, or the
// group was rewound on the source (then the checkpoint follows it back,
// KAFKA-12468); an unchanged checkpoint is not repeated.
func (c *Checkpointer) advance(cp Checkpoint) bool {
	prev, ok := c.last[cp.Group][partitionKey{cp.Topic, cp.Partition}]
	if ok {
		if prev.Upstream == cp.Upstream && prev.Downstream == cp.Downstream {
			return false
		}
		if cp.Downstream < prev.Downstream && cp.Upstream >= prev.Upstream {
			return false // a coarser sync than before: keep the better one
		}
	}
	c.remember(cp)
	return true
}

// syncGroups commits the checkpoints into target groups that have no
// active members, never moving a group's offset backwards.
func (c *Checkpointer) syncGroups(ctx context.Context, tgt *kadm.Client) {
	for g, cps := range c.last {
		described, err := tgt.DescribeGroups(ctx, g)
		if err != nil {
			continue
		}
		if d, ok := described[g]; ok && d.Err == nil && d.State != "Empty" && d.State != "Dead" && d.State != "" {
			continue // consumers are active on the target: theirs to commit
		}
		cur, err := tgt.FetchOffsets(ctx, g)
		if err != nil {
			continue
		}
		commit := kadm.Offsets{}
		for k, cp := range cps {
			if have, ok := cur.Lookup(k.topic, k.partition); ok && have.Err == nil && have.At >= cp.Downstream {
				continue
			}
			commit.Add(kadm.Offset{Topic: k.topic, Partition: k.partition, At: cp.Downstream, LeaderEpoch: -1, Metadata: cp.Metadata})
		}
		if len(commit) == 0 {
			continue
		}
		if _, err := tgt.CommitOffsets(ctx, g, commit); err != nil {
			c.log.Warn("syncing group offsets", "group", g, "err", err)
		}
	}
}

// Heartbeats writes a heartbeat to the target's heartbeats topic every
// emit.heartbeats.interval.seconds (MirrorHeartbeatConnector).
func Heartbeats(ctx context.Context, f Flow, tgt Cluster, log *slog.Logger) error {
	log = log.With("flow", f.Name(), "connector", "MirrorHeartbeatConnector")
	backoff := time.Second
	for {
		err := heartbeatsOnce(ctx, f, tgt)
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("heartbeats failed, retrying", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func heartbeatsOnce(ctx context.Context, f Flow, tgt Cluster) error {
	cl, err := tgt.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := ensureTopic(ctx, kadm.NewClient(cl), HeartbeatsTopic, 1, f.HeartbeatsReplicationFactor, true); err != nil {
		return err
	}
	interval := max(f.EmitHeartbeatsInterval, 100*time.Millisecond)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		h := Heartbeat{Source: f.Source, Target: f.Target, TimestampMs: time.Now().UnixMilli()}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: HeartbeatsTopic, Key: h.Key(), Value: h.Value()}).FirstErr(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
