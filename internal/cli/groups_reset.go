package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// resetStrategy is one of reset-offsets' --to-*/--shift-by/--by-duration.
type resetStrategy struct {
	kind   string // earliest, latest, offset, datetime, shift, duration
	offset int64  // --to-offset
	shift  int64  // --shift-by
	millis int64  // --to-datetime / --by-duration, resolved to a timestamp
	// file holds --from-file's offsets by group ("" for a file without
	// a group column) then topic and partition.
	file map[string]map[string]map[int32]int64
}

// topicPartitionsFlag parses Kafka's --topic syntax: "t" for every
// partition or "t:0,2" for some.
func topicPartitionsFlag(s string) (string, []int32, error) {
	topic, parts, hasParts := strings.Cut(s, ":")
	if topic == "" {
		return "", nil, fmt.Errorf("--topic %q: empty topic name", s)
	}
	if !hasParts {
		return topic, nil, nil
	}
	var ps []int32
	for _, p := range strings.Split(parts, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return "", nil, fmt.Errorf("--topic %q: bad partition %q", s, p)
		}
		ps = append(ps, int32(n))
	}
	return topic, ps, nil
}

// partitionOffsets are the offsets planReset reads for one partition.
type partitionOffsets struct {
	start, end int64
	committed  int64 // -1: none
	atTime     int64 // first offset with timestamp >= millis; -1: none
}

// planReset computes the new offset of one partition. As Kafka's
// ConsumerGroupCommand does, explicit and shifted offsets are clamped to
// the partition's [log start, log end], and a time after the last record
// resolves to the log end.
func planReset(s resetStrategy, o partitionOffsets) (int64, error) {
	clamp := func(n int64) int64 { return min(max(n, o.start), o.end) }
	switch s.kind {
	case "earliest":
		return o.start, nil
	case "latest":
		return o.end, nil
	case "offset":
		return clamp(s.offset), nil
	case "shift":
		if o.committed < 0 {
			return 0, errors.New("cannot shift: the group has no committed offset for this partition")
		}
		return clamp(o.committed + s.shift), nil
	case "datetime", "duration":
		if o.atTime < 0 {
			return o.end, nil
		}
		return clamp(o.atTime), nil
	}
	return 0, fmt.Errorf("unknown reset strategy %q", s.kind)
}

// resetRow is one row of the reset-offsets plan.
type resetRow struct {
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	NewOffset int64  `json:"new_offset"`
}

func newGroupsResetCommand() *cobra.Command {
	var (
		topics                 []string
		allTopics              bool
		toEarliest, toLatest   bool
		toOffset, shiftBy      int64
		toDatetime, byDuration string
		dryRun, execute        bool
		allGroups, export      bool
		fromFile               string
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP...",
		Short: "Plan (default) or --execute an offset reset for an inactive group",
		Long: `Reset a consumer group's committed offsets. Without --execute it only prints
the plan (--dry-run). As in Kafka, the group must be inactive (no members):
a reset is refused while consumers are running.

--topic takes "topic" (every partition) or "topic:0,1" and may repeat;
--all-topics uses every topic the group has committed offsets for.
--to-datetime takes RFC 3339 (2024-05-01T12:00:00Z) or Kafka's
YYYY-MM-DDTHH:mm:SS.sss (local time); --by-duration takes a duration back
from now (90m, 24h, or ISO 8601 as Kafka: PT1H30M, P1D).

--all-groups resets every group. --export prints the plan as CSV
(topic,partition,offset; with several groups group,topic,partition,offset),
which --from-file reads back as the offsets to set.`,
		Example: `  vltava groups reset-offsets billing --topic orders --to-earliest
  vltava groups reset-offsets billing --topic orders:0,1 --shift-by -10 --execute
  vltava groups reset-offsets billing --all-topics --to-datetime 2024-05-01T12:00:00Z --execute
  vltava groups reset-offsets billing --all-topics --to-earliest --export > plan.csv
  vltava groups reset-offsets billing --from-file plan.csv --execute`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			f := in.cmd.Flags()
			var s resetStrategy
			n := 0
			pick := func(set bool, kind string) {
				if set {
					n++
					s.kind = kind
				}
			}
			pick(toEarliest, "earliest")
			pick(toLatest, "latest")
			pick(f.Changed("to-offset"), "offset")
			pick(f.Changed("shift-by"), "shift")
			pick(toDatetime != "", "datetime")
			pick(byDuration != "", "duration")
			pick(fromFile != "", "file")
			if n != 1 {
				return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by, --by-duration, --from-file")
			}
			s.offset, s.shift = toOffset, shiftBy
			switch s.kind {
			case "datetime":
				t, err := parseResetTime(toDatetime)
				if err != nil {
					return err
				}
				s.millis = t.UnixMilli()
			case "duration":
				d, err := parseResetDuration(byDuration)
				if err != nil {
					return err
				}
				s.millis = time.Now().Add(-d).UnixMilli()
			case "file":
				var err error
				if s.file, err = readResetFile(fromFile); err != nil {
					return err
				}
			}
			if execute && dryRun && f.Changed("dry-run") {
				return errors.New("--dry-run and --execute are mutually exclusive")
			}
			if len(topics) == 0 && !allTopics && s.kind != "file" {
				return errors.New("give --topic or --all-topics")
			}
			if s.kind == "file" && (len(topics) > 0 || allTopics) {
				return errors.New("--from-file names its partitions; it takes no --topic or --all-topics")
			}
			if len(topics) > 0 && allTopics {
				return errors.New("--topic and --all-topics are mutually exclusive")
			}
			ctx := in.ctx
			_, adm, err := in.cluster(ctx)
			if err != nil {
				return err
			}
			groups, err := groupNames(ctx, adm, in.args, allGroups)
			if err != nil {
				return err
			}
			if s.kind == "file" && len(groups) > 1 {
				for g := range s.file {
					if g == "" {
						return fmt.Errorf("--from-file %s has no group column; it resets one group", fromFile)
					}
				}
			}
			var rows []resetRow
			for _, group := range groups {
				gs := s
				if s.kind == "file" {
					gs.file = map[string]map[string]map[int32]int64{"": s.file[group]}
					if len(groups) == 1 && s.file[""] != nil {
						gs.file[""] = s.file[""]
					}
					if len(gs.file[""]) == 0 {
						return fmt.Errorf("--from-file %s has no offsets for group %q", fromFile, group)
					}
				}
				grows, err := resetGroupOffsets(ctx, adm, group, gs, topics, allTopics, execute)
				if err != nil {
					return err
				}
				rows = append(rows, grows...)
			}
			if export {
				return writeResetCSV(in.stdout, rows, len(groups) > 1)
			}
			if rows == nil {
				rows = []resetRow{}
			}
			if in.json {
				return writeJSON(in.stdout, map[string]any{"executed": execute, "offsets": rows})
			}
			t := newTable(in.stdout, "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
			for _, r := range rows {
				t.row(r.Group, r.Topic, r.Partition, r.NewOffset)
			}
			if err := t.flush(); err != nil {
				return err
			}
			if !execute {
				fmt.Fprintln(in.stderr, "Dry run: nothing changed. Add --execute to commit these offsets.")
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&topics, "topic", nil, `topic to reset, "topic" or "topic:0,1" (repeatable)`)
	fl.BoolVar(&allTopics, "all-topics", false, "reset every topic the group has committed offsets for")
	fl.BoolVar(&toEarliest, "to-earliest", false, "reset to the log start offset")
	fl.BoolVar(&toLatest, "to-latest", false, "reset to the log end offset")
	fl.Int64Var(&toOffset, "to-offset", 0, "reset to this offset (clamped to the log's range)")
	fl.StringVar(&toDatetime, "to-datetime", "", "reset to the first offset at or after this RFC 3339 time")
	fl.Int64Var(&shiftBy, "shift-by", 0, "move the committed offset by N (negative moves back)")
	fl.StringVar(&byDuration, "by-duration", "", "reset to the first offset at or after now minus this duration")
	fl.BoolVar(&dryRun, "dry-run", true, "only print the plan (the default)")
	fl.BoolVar(&execute, "execute", false, "commit the new offsets")
	fl.BoolVar(&allGroups, "all-groups", false, "reset every group of the cluster")
	fl.BoolVar(&export, "export", false, "print the plan as CSV (topic,partition,offset), as kafka-consumer-groups.sh --export")
	fl.StringVar(&fromFile, "from-file", "", "CSV of offsets to set, as --export writes it")
	return cmd
}

// resetGroupOffsets plans and, with execute, commits the reset.
func resetGroupOffsets(ctx context.Context, adm *kadm.Client, group string, s resetStrategy,
	topicFlags []string, allTopics, execute bool) ([]resetRow, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, groupAPIError(fmt.Sprintf("describing group %q", group), err)
	}
	dg := described[group]
	if dg.Err != nil {
		return nil, groupAPIError(fmt.Sprintf("describing group %q", group), dg.Err)
	}
	// Kafka refuses to reset a group with live members: they would
	// overwrite the reset with their own commits.
	if dg.State != "Empty" && dg.State != "Dead" && dg.State != "" {
		return nil, fmt.Errorf("assignments can only be reset if the group %q is inactive, but the current state is %s", group, dg.State)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %q: %w", group, err)
	}
	want := kadm.TopicsSet{}
	if s.kind == "file" {
		var names []string
		for t, ps := range s.file[""] {
			names = append(names, t)
			for p := range ps {
				want.Add(t, p)
			}
		}
		td, err := adm.ListTopics(ctx, names...)
		if err != nil {
			return nil, fmt.Errorf("describing topics: %w", err)
		}
		for t, ps := range s.file[""] {
			d, ok := td[t]
			if !ok || d.Err != nil {
				return nil, fmt.Errorf("topic %q does not exist", t)
			}
			for p := range ps {
				if _, ok := d.Partitions[p]; !ok {
					return nil, fmt.Errorf("topic %q has no partition %d", t, p)
				}
			}
		}
	} else if allTopics {
		committed.Each(func(o kadm.OffsetResponse) { want.Add(o.Topic, o.Partition) })
		if len(want) == 0 {
			return nil, fmt.Errorf("group %q has no committed offsets", group)
		}
	} else {
		if want, err = partitionsOf(ctx, adm, topicFlags); err != nil {
			return nil, err
		}
	}
	topics := want.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing end offsets: %w", err)
	}
	var atTime kadm.ListedOffsets
	if s.kind == "datetime" || s.kind == "duration" {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, s.millis, topics...); err != nil {
			return nil, fmt.Errorf("listing offsets by time: %w", err)
		}
	}
	var rows []resetRow
	commit := kadm.Offsets{}
	for _, tp := range want.Sorted() {
		for _, p := range tp.Partitions {
			st, ok1 := starts.Lookup(tp.Topic, p)
			en, ok2 := ends.Lookup(tp.Topic, p)
			if !ok1 || !ok2 || st.Err != nil || en.Err != nil {
				return nil, fmt.Errorf("listing offsets of %s[%d]: %v", tp.Topic, p, errors.Join(st.Err, en.Err))
			}
			po := partitionOffsets{start: st.Offset, end: en.Offset, committed: -1, atTime: -1}
			if c, ok := committed.Lookup(tp.Topic, p); ok && c.Err == nil {
				po.committed = c.At
			}
			if s.kind == "datetime" || s.kind == "duration" {
				at, ok := atTime.Lookup(tp.Topic, p)
				// Falling back to the log end would skip records.
				if !ok {
					return nil, fmt.Errorf("listing offsets by time of %s[%d]: no answer for the partition", tp.Topic, p)
				}
				if at.Err != nil {
					return nil, fmt.Errorf("listing offsets by time of %s[%d]: %w", tp.Topic, p, at.Err)
				}
				po.atTime = at.Offset
				// kadm reports "no record after the time" as the end offset
				// with timestamp -1 on some brokers; both mean log end.
				if at.Timestamp < 0 {
					po.atTime = -1
				}
			}
			ps := s
			if s.kind == "file" {
				ps = resetStrategy{kind: "offset", offset: s.file[""][tp.Topic][p]}
			}
			off, err := planReset(ps, po)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", tp.Topic, p, err)
			}
			rows = append(rows, resetRow{Group: group, Topic: tp.Topic, Partition: p, NewOffset: off})
			commit.Add(kadm.Offset{Topic: tp.Topic, Partition: p, At: off, LeaderEpoch: -1})
		}
	}
	if execute {
		if err := adm.CommitAllOffsets(ctx, group, commit); err != nil {
			return nil, fmt.Errorf("committing offsets for group %q: %w", group, err)
		}
	}
	return rows, nil
}
