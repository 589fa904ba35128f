package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/tiered"
)

// addTierSizes fills the local and remote sizes of every partition of the
// tiered topics in out (those whose ids are in ids): local is the size of
// the leader's log on its disk (DescribeLogDirs), remote the bytes of the
// segments the remote tier holds, read from __remote_log_metadata as the
// brokers read it.
func (in *invocation) addTierSizes(ctx context.Context, adm *kadm.Client, out []topicDescription, ids map[string][16]byte) error {
	set := kadm.TopicsSet{}
	for _, d := range out {
		if _, ok := ids[d.Topic]; ok {
			for _, p := range d.Partitions {
				set.Add(d.Topic, p.Partition)
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return fmt.Errorf("describing log dirs: %w", err)
	}
	local := func(topic string, p partitionDescription) int64 {
		size := int64(0)
		for dir, d := range dirs[p.Leader] {
			if dp, ok := dirs[p.Leader].Lookup(dir, topic, p.Partition); ok && d.Err == nil && !dp.IsFuture {
				size += dp.Size
			}
		}
		return size
	}

	remote := func([16]byte, int32) int64 { return 0 }
	ends, err := adm.ListEndOffsets(ctx, tiered.MetadataTopic)
	if err != nil {
		return fmt.Errorf("listing %s: %w", tiered.MetadataTopic, err)
	}
	if err := ends.Error(); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("listing %s: %w", tiered.MetadataTopic, err)
	} else if err == nil {
		store, err := tiered.OpenMetadataStore(ctx, in.clientOpts()...)
		if err != nil {
			return err
		}
		defer store.Close()
		want := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
		if err := store.CaughtUp(ctx, want); err != nil {
			return fmt.Errorf("reading %s: %w", tiered.MetadataTopic, err)
		}
		remote = func(id [16]byte, p int32) int64 {
			size := int64(0)
			for _, md := range store.Segments(id, p, tiered.CopyFinished) {
				size += md.SizeInBytes
			}
			return size
		}
	}
	for i := range out {
		id, ok := ids[out[i].Topic]
		if !ok {
			continue
		}
		for j := range out[i].Partitions {
			p := &out[i].Partitions[j]
			l, r := local(out[i].Topic, *p), remote(id, p.Partition)
			p.LocalSize, p.RemoteSize = &l, &r
		}
	}
	return nil
}
