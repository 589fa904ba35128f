package mirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Client makes a franz-go client of the cluster with its security.
func (c Cluster) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(c.Bootstrap...), kgo.ClientID("vltava-mirror-" + c.Alias)}
	base = append(base, c.Security.KgoOpts()...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Alias, err)
	}
	return cl, nil
}

// ensureTopic creates an internal topic if missing (compacted when
// compact), ignoring TOPIC_ALREADY_EXISTS.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, rf int16, compact bool) error {
	var cfg map[string]*string
	if compact {
		v := "compact"
		cfg = map[string]*string{"cleanup.policy": &v}
	}
	resp, err := adm.CreateTopic(ctx, partitions, rf, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	return nil
}

// sourceOffsetKey is the Connect offset key of a source partition, as
// MirrorSourceConnector writes it: ["MirrorSourceConnector",{"cluster":..,"partition":..,"topic":..}].
func sourceOffsetKey(cluster, topic string, partition int32) []byte {
	b, _ := json.Marshal([]any{"MirrorSourceConnector", map[string]any{"cluster": cluster, "partition": partition, "topic": topic}})
	return b
}

// sourceOffsetValue is {"offset":N}, N the last upstream offset copied.
func sourceOffsetValue(off int64) []byte {
	b, _ := json.Marshal(map[string]int64{"offset": off})
	return b
}

// LoadProgress reads a flow's offsets topic on the target (committed
// records only): the last upstream offset copied per source partition.
func LoadProgress(ctx context.Context, tgt Cluster, f Flow) (map[partitionKey]int64, error) {
	cl, err := tgt.Client(kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	out := map[partitionKey]int64{}
	err = readAll(ctx, cl, f.OffsetsTopic(), func(r *kgo.Record) {
		var k []json.RawMessage
		if json.Unmarshal(r.Key, &k) != nil || len(k) != 2 {
			return
		}
		var part struct {
			Cluster   string `json:"cluster"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		}
		if json.Unmarshal(k[1], &part) != nil || part.Cluster != f.Source {
			return
		}
		pk := partitionKey{part.Topic, part.Partition}
		if r.Value == nil {
			delete(out, pk)
			return
		}
		var v struct {
			Offset int64 `json:"offset"`
		}
		if json.Unmarshal(r.Value, &v) == nil {
			out[pk] = v.Offset
		}
	})
	return out, err
}

// readAll reads a topic from its start to the end offsets it had when
// called; a missing topic reads as empty.
func readAll(ctx context.Context, cl *kgo.Client, topic string, fn func(*kgo.Record)) error {
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return err
	}
	want := map[int32]int64{}
	parts := map[int32]kgo.Offset{}
	var missing bool
	ends.Each(func(o kadm.ListedOffset) {
		if errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
			missing = true
			return
		}
		if s, ok := starts.Lookup(topic, o.Partition); ok && s.Offset < o.Offset {
			want[o.Partition] = o.Offset
			parts[o.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	if err := ends.Error(); err != nil && !missing {
		return err
	}
	if len(want) == 0 {
		return nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: keys(parts)})
	// Transaction markers and aborted records are never returned, so a
	// partition whose last offsets are such ends when a poll finds nothing.
	for len(want) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		if fs.NumRecords() == 0 {
			return nil
		}
		fs.EachRecord(func(r *kgo.Record) {
			fn(r)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return nil
}

func keys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
