package mirror

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Run runs every enabled flow of cfg (source, checkpoints, heartbeats) and
// the heartbeats of the pairs not enabled, until ctx ends.
func Run(ctx context.Context, cfg *Config, log *slog.Logger) error {
	var wg sync.WaitGroup
	start := func(fn func(context.Context) error) {
		wg.Add(1)
		go func() { defer wg.Done(); _ = fn(ctx) }()
	}
	for _, f := range cfg.Flows {
		src, tgt := cfg.Clusters[f.Source], cfg.Clusters[f.Target]
		log.Info("starting flow", "flow", f.Name(), "exactly.once", f.ExactlyOnce)
		start(NewSource(f, src, tgt, log).Run)
		if f.EmitCheckpoints {
			start(NewCheckpointer(f, src, tgt, log).Run)
		}
		if f.EmitHeartbeats {
			start(func(ctx context.Context) error { return Heartbeats(ctx, f, tgt, log) })
		}
	}
	for _, f := range cfg.HeartbeatOnly {
		start(func(ctx context.Context) error { return Heartbeats(ctx, f, cfg.Clusters[f.Target], log) })
	}
	wg.Wait()
	return nil
}

// flowOf returns the cfg's flow source->target (enabled or not).
func (c *Config) flowOf(source, target string) (Flow, error) {
	for _, f := range append(append([]Flow(nil), c.Flows...), c.HeartbeatOnly...) {
		if f.Source == source && f.Target == target {
			return f, nil
		}
	}
	if _, ok := c.Clusters[source]; !ok {
		return Flow{}, fmt.Errorf("unknown cluster %q", source)
	}
	if _, ok := c.Clusters[target]; !ok {
		return Flow{}, fmt.Errorf("unknown cluster %q", target)
	}
	return Flow{}, fmt.Errorf("no flow %s->%s", source, target)
}

// TranslatedOffset is a group's offset on the target for a remote partition.
type TranslatedOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// TranslateOffsets reads the latest checkpoints of group from the target's
// checkpoints topic of the source, as Kafka's
// RemoteClusterUtils.translateOffsets: the offsets a consumer of the
// remote topics on the target resumes at.
func TranslateOffsets(ctx context.Context, cfg *Config, group, source, target string) ([]TranslatedOffset, error) {
	f, err := cfg.flowOf(source, target)
	if err != nil {
		return nil, err
	}
	cl, err := cfg.Clusters[target].Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	latest := map[partitionKey]int64{}
	err = readAll(ctx, cl, f.Policy.CheckpointsTopic(source), func(r *kgo.Record) {
		if cp, err := DecodeCheckpoint(r.Key, r.Value); err == nil && cp.Group == group {
			latest[partitionKey{cp.Topic, cp.Partition}] = cp.Downstream
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]TranslatedOffset, 0, len(latest))
	for k, off := range latest {
		out = append(out, TranslatedOffset{Topic: k.topic, Partition: k.partition, Offset: off})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// PartitionLag is one mirrored partition's replication lag.
type PartitionLag struct {
	Flow, Topic, Remote string
	Partition           int32
	SourceEnd           int64 // the source's end offset
	Mirrored            int64 // offsets up to here are copied (next to copy)
	Records             int64 // SourceEnd - Mirrored
	Seconds             float64
}

// Status reports each enabled flow's per-partition lag: the source's end
// offsets against the source offsets stored by the mirror, and the age of
// the oldest record not yet copied. A cluster that cannot be reached is
// an error naming it.
func Status(ctx context.Context, cfg *Config) ([]PartitionLag, error) {
	var out []PartitionLag
	for _, f := range cfg.Flows {
		src, tgt := cfg.Clusters[f.Source], cfg.Clusters[f.Target]
		tcl, err := tgt.Client()
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = tcl.Ping(pctx)
		cancel()
		tcl.Close()
		if err != nil {
			return nil, fmt.Errorf("flow %s: target cluster %s unreachable: %w", f.Name(), f.Target, err)
		}
		progress, err := LoadProgress(ctx, tgt, f)
		if err != nil {
			return nil, fmt.Errorf("flow %s: %w", f.Name(), err)
		}
		scl, err := src.Client()
		if err != nil {
			return nil, err
		}
		adm := kadm.NewClient(scl)
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			scl.Close()
			return nil, fmt.Errorf("flow %s: source cluster %s unreachable: %w", f.Name(), f.Source, err)
		}
		var names []string
		for _, t := range topics.Names() {
			if f.Mirrored(t) {
				names = append(names, t)
			}
		}
		ends, err := adm.ListEndOffsets(ctx, names...)
		if err != nil {
			scl.Close()
			return nil, err
		}
		starts, _ := adm.ListStartOffsets(ctx, names...)
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				return
			}
			next := int64(0)
			if p, ok := progress[partitionKey{o.Topic, o.Partition}]; ok {
				next = p + 1
			} else if s, ok := starts.Lookup(o.Topic, o.Partition); ok {
				next = s.Offset
			}
			l := PartitionLag{Flow: f.Name(), Topic: o.Topic, Remote: f.Policy.FormatRemoteTopic(f.Source, o.Topic), Partition: o.Partition, SourceEnd: o.Offset, Mirrored: next, Records: max(0, o.Offset-next)}
			if l.Records > 0 {
				l.Seconds = oldestAge(ctx, scl, o.Topic, o.Partition, next)
			}
			out = append(out, l)
		})
		scl.Close()
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Flow != b.Flow {
			return a.Flow < b.Flow
		}
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out, nil
}

// oldestAge is the age in seconds of the record at off (0 if none is read).
func oldestAge(ctx context.Context, cl *kgo.Client, topic string, partition int32, off int64) float64 {
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(off)}})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: {partition}})
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for pctx.Err() == nil {
		fs := cl.PollRecords(pctx, 1)
		for _, r := range fs.Records() {
			if r.Topic == topic && r.Partition == partition {
				return max(0, time.Since(r.Timestamp).Seconds())
			}
		}
	}
	return 0
}

// PrintStatus writes the lag table.
func PrintStatus(w io.Writer, lags []PartitionLag) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FLOW\tTOPIC\tREMOTE-TOPIC\tPARTITION\tSOURCE-END\tMIRRORED\tLAG-RECORDS\tLAG-SECONDS")
	for _, l := range lags {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.1f\n", l.Flow, l.Topic, l.Remote, l.Partition, l.SourceEnd, l.Mirrored, l.Records, l.Seconds)
	}
	tw.Flush()
}
