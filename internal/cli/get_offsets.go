package cli

// vltava get-offsets: kafka-get-offsets.sh (GetOffsetShell) over
// ListOffsets.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// listedOffset is one line of get-offsets: topic:partition:offset.
type listedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error,omitempty"`
}

// parseOffsetTime maps --time to ListOffsets' timestamp: -1 (latest),
// -2 (earliest), -3 (max-timestamp, KIP-734) or a Unix millisecond time, as
// kafka-get-offsets.sh takes it.
func parseOffsetTime(s string) (int64, error) {
	switch strings.ToLower(s) {
	case "latest", "-1":
		return -1, nil
	case "earliest", "-2":
		return -2, nil
	case "max-timestamp", "-3":
		return -3, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--time %q: want -1 (latest), -2 (earliest), -3 (max-timestamp) or a Unix timestamp in milliseconds", s)
	}
	return n, nil
}

// parsePartitionList parses "0,2,5-7" as kafka-get-offsets.sh's --partitions.
func parsePartitionList(s string) (map[int32]bool, error) {
	out := map[int32]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "-")
		a, err1 := strconv.ParseInt(lo, 10, 32)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseInt(hi, 10, 32)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return nil, fmt.Errorf("--partitions %q: bad partition or range %q", s, f)
		}
		for p := a; p <= b; p++ {
			out[int32(p)] = true
		}
	}
	return out, nil
}

// partitionRange is one --topic-partitions entry's partitions: lo..hi,
// either end open (-1).
type partitionRange struct{ lo, hi int64 }

func (r partitionRange) has(p int32) bool {
	return (r.lo < 0 || int64(p) >= r.lo) && (r.hi < 0 || int64(p) <= r.hi)
}

// parseTopicPartitions parses kafka-get-offsets.sh's --topic-partitions:
// "t1:1,t2:0-3,t3,t4:5-,t5:-3" (a topic alone is every partition).
func parseTopicPartitions(s string) (map[string][]partitionRange, []string, error) {
	out := map[string][]partitionRange{}
	var order []string
	for _, entry := range splitCommaList([]string{s}) {
		topic, spec, hasSpec := strings.Cut(entry, ":")
		if topic == "" {
			return nil, nil, fmt.Errorf("--topic-partitions %q: empty topic in %q", s, entry)
		}
		r := partitionRange{lo: -1, hi: -1}
		if hasSpec {
			lo, hi, isRange := strings.Cut(spec, "-")
			var err1, err2 error
			if lo != "" {
				r.lo, err1 = strconv.ParseInt(lo, 10, 32)
			}
			switch {
			case !isRange:
				r.hi = r.lo
			case hi != "":
				r.hi, err2 = strconv.ParseInt(hi, 10, 32)
			}
			if err1 != nil || err2 != nil || (lo == "" && hi == "") || (r.hi >= 0 && r.lo > r.hi) {
				return nil, nil, fmt.Errorf("--topic-partitions %q: bad partitions %q", s, spec)
			}
		}
		if _, seen := out[topic]; !seen {
			order = append(order, topic)
		}
		out[topic] = append(out[topic], r)
	}
	return out, order, nil
}

func newGetOffsetsCommand() *cobra.Command {
	var (
		topics          []string
		partitions, at  string
		topicParts      string
		excludeInternal bool
	)
	cmd := &cobra.Command{
		Use:   "get-offsets [TOPIC...]",
		Short: "Print partition offsets: latest, earliest, max-timestamp or at a time (kafka-get-offsets.sh)",
		Long: `Print topic:partition:offset for every partition of the given topics (all
topics when none is named). --time -1 (latest, the default) is the log end
offset, -2 (earliest) the log start offset, -3 (max-timestamp) the offset of
the record with the largest timestamp, and a Unix millisecond timestamp the
first offset whose timestamp is at or after it (the log end offset when no
record is that late).`,
		Example: `  vltava get-offsets orders
  vltava get-offsets --topic orders --partitions 0,2 --time -2
  vltava get-offsets --time 1714567890123 --output json`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			ts, err := parseOffsetTime(at)
			if err != nil {
				return err
			}
			var only map[int32]bool
			if partitions != "" {
				if only, err = parsePartitionList(partitions); err != nil {
					return err
				}
			}
			names := append(append([]string(nil), in.args...), splitCommaList(topics)...)
			var ranges map[string][]partitionRange
			if topicParts != "" {
				if len(names) > 0 || partitions != "" {
					return fmt.Errorf("--topic-partitions replaces --topic and --partitions")
				}
				var order []string
				if ranges, order, err = parseTopicPartitions(topicParts); err != nil {
					return err
				}
				names = order
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			if len(names) == 0 {
				td, err := adm.ListTopicsWithInternal(in.ctx)
				if err != nil {
					return fmt.Errorf("listing topics: %w", err)
				}
				for _, n := range td.Names() {
					if !excludeInternal || !td[n].IsInternal {
						names = append(names, n)
					}
				}
				if len(names) == 0 {
					return nil
				}
			}
			var listed kadm.ListedOffsets
			switch ts {
			case -1:
				listed, err = adm.ListEndOffsets(in.ctx, names...)
			case -2:
				listed, err = adm.ListStartOffsets(in.ctx, names...)
			case -3:
				listed, err = adm.ListMaxTimestampOffsets(in.ctx, names...)
			default:
				listed, err = adm.ListOffsetsAfterMilli(in.ctx, ts, names...)
			}
			if err != nil {
				return fmt.Errorf("listing offsets: %w", err)
			}
			for _, n := range names {
				if l, ok := listed[n][-1]; ok && l.Err != nil {
					return fmt.Errorf("topic %q does not exist", n)
				}
			}
			rows := []listedOffset{}
			failed := 0
			listed.Each(func(l kadm.ListedOffset) {
				if l.Partition < 0 || (only != nil && !only[l.Partition]) {
					return
				}
				if ranges != nil && !slices.ContainsFunc(ranges[l.Topic], func(r partitionRange) bool { return r.has(l.Partition) }) {
					return
				}
				r := listedOffset{Topic: l.Topic, Partition: l.Partition, Offset: l.Offset}
				if l.Err != nil {
					r.Error = l.Err.Error()
					failed++
				}
				rows = append(rows, r)
			})
			sortByTopicPartition(rows, func(r listedOffset) (string, int32) { return r.Topic, r.Partition })
			if in.json {
				if err := writeJSON(in.stdout, rows); err != nil {
					return err
				}
			} else {
				for _, r := range rows {
					if r.Error != "" {
						fmt.Fprintf(in.stderr, "%s:%d: %s\n", r.Topic, r.Partition, r.Error)
						continue
					}
					// An empty partition has no max-timestamp offset; Kafka
					// prints the line without an offset then.
					if r.Offset < 0 {
						fmt.Fprintf(in.stdout, "%s:%d:\n", r.Topic, r.Partition)
						continue
					}
					fmt.Fprintf(in.stdout, "%s:%d:%d\n", r.Topic, r.Partition, r.Offset)
				}
			}
			if failed > 0 {
				return fmt.Errorf("listing offsets failed for %d of %d partitions", failed, len(rows))
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&topics, "topic", nil, "topic (repeatable, comma-separated; Kafka form of the TOPIC arguments)")
	f.StringVar(&partitions, "partitions", "", "only these partitions: 0,2,5-7")
	f.StringVar(&topicParts, "topic-partitions", "", "topics and partitions as kafka-get-offsets.sh takes them: t1:1,t2:0-3,t3,t4:5-")
	f.StringVar(&at, "time", "-1", "-1 or latest, -2 or earliest, -3 or max-timestamp, or a Unix timestamp in milliseconds")
	f.BoolVar(&excludeInternal, "exclude-internal-topics", false, "leave out internal topics when listing every topic")
	return cmd
}
