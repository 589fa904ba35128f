package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// timeLagWait bounds how long `groups describe` waits for the records at
// the committed offsets; a partition not read by then has no time lag.
const timeLagWait = 3 * time.Second

// addTimeLags sets each lagging partition's TimeLagSeconds: the age of the
// record at the committed offset, the next one the group will read, read
// from the cluster like any consumer would (so it works against any Kafka
// cluster; Vltava brokers also export it as kafka_consumergroup_lag_seconds).
// Caught-up partitions have a time lag of 0; where no record can be read
// in time the field stays -1.
func (in *invocation) addTimeLags(ctx context.Context, descs []groupDescription) {
	type tp struct {
		topic     string
		partition int32
	}
	starts := map[string]map[int32]kgo.Offset{}
	want := map[tp]int64{}
	for _, d := range descs {
		for i := range d.Offsets {
			o := &d.Offsets[i]
			o.TimeLagSeconds = -1
			if o.Lag == 0 {
				o.TimeLagSeconds = 0
			}
			if o.Lag <= 0 || o.CurrentOffset < 0 {
				continue
			}
			k := tp{o.Topic, o.Partition}
			if prev, ok := want[k]; ok && prev <= o.CurrentOffset {
				continue
			}
			want[k] = o.CurrentOffset
			if starts[o.Topic] == nil {
				starts[o.Topic] = map[int32]kgo.Offset{}
			}
			starts[o.Topic][o.Partition] = kgo.NewOffset().At(o.CurrentOffset)
		}
	}
	if len(want) == 0 {
		return
	}
	// Several groups may commit different offsets on one partition: read
	// from the lowest and keep the timestamps up to the highest needed.
	cl, err := kgo.NewClient(append(in.clientOpts(), kgo.ConsumePartitions(starts), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return
	}
	defer cl.Close()
	stamps := map[tp]map[int64]time.Time{}
	need := map[tp]map[int64]bool{}
	for _, d := range descs {
		for _, o := range d.Offsets {
			if o.Lag > 0 && o.CurrentOffset >= 0 {
				k := tp{o.Topic, o.Partition}
				if need[k] == nil {
					need[k] = map[int64]bool{}
				}
				need[k][o.CurrentOffset] = true
			}
		}
	}
	missing := 0
	for _, offs := range need {
		missing += len(offs)
	}
	rctx, cancel := context.WithTimeout(ctx, timeLagWait)
	defer cancel()
	for missing > 0 && rctx.Err() == nil {
		cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			for off := range need[k] {
				// The first record at or after the committed offset
				// (compaction may have removed the exact one).
				if r.Offset >= off && stamps[k][off].IsZero() {
					if stamps[k] == nil {
						stamps[k] = map[int64]time.Time{}
					}
					stamps[k][off] = r.Timestamp
					missing--
				}
			}
		})
	}
	now := time.Now()
	for _, d := range descs {
		for i := range d.Offsets {
			o := &d.Offsets[i]
			if ts, ok := stamps[tp{o.Topic, o.Partition}][o.CurrentOffset]; ok && o.Lag > 0 {
				o.TimeLagSeconds = max(now.Sub(ts).Seconds(), 0)
			}
		}
	}
}

// formatTimeLag prints a time lag for the table: "-" when unknown.
func formatTimeLag(secs float64) string {
	switch {
	case secs < 0:
		return "-"
	case secs < 60:
		return fmt.Sprintf("%.1fs", secs)
	}
	return (time.Duration(secs) * time.Second).String()
}
