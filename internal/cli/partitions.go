package cli

// vltava partitions: the equivalents of kafka-reassign-partitions.sh and
// kafka-leader-election.sh, over AlterPartitionReassignments,
// ListPartitionReassignments and ElectLeaders (franz-go kadm).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newPartitionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "partitions",
		Short: "Reassign partitions and elect their leaders",
		Example: `  vltava partitions reassign --topic orders --partition 0 --replicas 2,3,1
  vltava partitions list-reassignments
  vltava partitions elect-leaders --all`,
	}
	cmd.AddCommand(newReassignCommand(), newListReassignmentsCommand(), newElectLeadersCommand())
	return cmd
}

// parseBrokerList parses "1,2,3".
func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid broker id %q in --replicas", f)
		}
		out = append(out, int32(n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--replicas lists no broker")
	}
	return out, nil
}

type reassignResult struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

func newReassignCommand() *cobra.Command {
	var topic, replicas string
	var partitions []int32
	var cancel bool
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move partitions to a new replica set (or cancel a reassignment)",
		Long: `Starts a reassignment (KIP-455): the new replicas copy the partition from
its leader and join the ISR, then the replicas not in the new set are
dropped. --cancel reverts a reassignment in progress.`,
		Example: `  vltava partitions reassign --topic orders --partition 0 --partition 1 --replicas 2,3
  vltava partitions reassign --topic orders --partition 0 --cancel`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if topic == "" || len(partitions) == 0 {
				return fmt.Errorf("--topic and at least one --partition are required")
			}
			if cancel == (replicas != "") {
				return fmt.Errorf("give exactly one of --replicas and --cancel")
			}
			var brokers []int32
			if !cancel {
				var err error
				if brokers, err = parseBrokerList(replicas); err != nil {
					return err
				}
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			var req kadm.AlterPartitionAssignmentsReq
			for _, p := range partitions {
				req.Assign(topic, p, brokers)
			}
			resps, err := adm.AlterPartitionAssignments(in.ctx, req)
			if err != nil {
				return fmt.Errorf("reassigning: %w", err)
			}
			var out []reassignResult
			failed := 0
			for _, p := range slices.Sorted(slices.Values(partitions)) {
				r := reassignResult{Topic: topic, Partition: p}
				if rr, ok := resps[topic][p]; ok && rr.Err != nil {
					r.Error = rr.Err.Error()
					if rr.ErrMessage != "" {
						r.Error = rr.ErrMessage
					}
					failed++
				}
				out = append(out, r)
			}
			if in.json {
				if err := writeJSON(in.stdout, out); err != nil {
					return err
				}
			} else {
				for _, r := range out {
					switch {
					case r.Error != "":
						fmt.Fprintf(in.stdout, "%s-%d: %s\n", r.Topic, r.Partition, r.Error)
					case cancel:
						fmt.Fprintf(in.stdout, "%s-%d: reassignment cancelled\n", r.Topic, r.Partition)
					default:
						fmt.Fprintf(in.stdout, "%s-%d: reassignment to %s started\n", r.Topic, r.Partition, joinInt32s(brokers))
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d partitions failed", failed, len(out))
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic to reassign")
	f.Int32SliceVar(&partitions, "partition", nil, "partition to reassign (repeatable)")
	f.StringVar(&replicas, "replicas", "", "comma-separated broker ids of the new replica set, preferred leader first")
	f.BoolVar(&cancel, "cancel", false, "cancel the reassignment in progress instead")
	return cmd
}

type ongoingReassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding_replicas"`
	Removing  []int32 `json:"removing_replicas"`
}

func newListReassignmentsCommand() *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:     "list-reassignments",
		Short:   "List the partition reassignments in progress",
		Example: `  vltava partitions list-reassignments --output json`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			var set kadm.TopicsSet
			if topic != "" {
				td, err := adm.ListTopics(in.ctx, topic)
				if err != nil {
					return err
				}
				set = td.TopicsSet()
			}
			resps, err := adm.ListPartitionReassignments(in.ctx, set)
			if err != nil {
				return fmt.Errorf("listing reassignments: %w", err)
			}
			out := []ongoingReassignment{}
			for _, t := range slices.Sorted(mapKeysOf(resps)) {
				for _, p := range slices.Sorted(mapKeysOf(resps[t])) {
					r := resps[t][p]
					out = append(out, ongoingReassignment{Topic: t, Partition: p, Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas})
				}
			}
			if in.json {
				return writeJSON(in.stdout, out)
			}
			tb := newTable(in.stdout, "TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING")
			for _, r := range out {
				tb.row(r.Topic, r.Partition, joinInt32s(r.Replicas), joinInt32s(r.Adding), joinInt32s(r.Removing))
			}
			return tb.flush()
		}),
	}
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic")
	return cmd
}

func mapKeysOf[K string | int32, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func newElectLeadersCommand() *cobra.Command {
	var topic, typ string
	var partitions []int32
	var all bool
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Elect preferred (or, unclean, any live) replicas as leaders",
		Long: `Runs leader elections (KIP-460). --type preferred moves leadership to each
partition's first replica when it is in sync; --type unclean elects a
leader for partitions without one, possibly losing acknowledged data.`,
		Example: `  vltava partitions elect-leaders --all
  vltava partitions elect-leaders --topic orders --partition 0 --type unclean`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			how := kadm.ElectPreferredReplica
			switch typ {
			case "preferred":
			case "unclean":
				how = kadm.ElectLiveReplica
			default:
				return fmt.Errorf("--type must be preferred or unclean, not %q", typ)
			}
			if all == (topic != "") {
				return fmt.Errorf("give exactly one of --all and --topic")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			var set kadm.TopicsSet
			if !all {
				set = kadm.TopicsSet{}
				if len(partitions) == 0 {
					td, err := adm.ListTopics(in.ctx, topic)
					if err != nil {
						return err
					}
					set = td.TopicsSet()
				}
				for _, p := range partitions {
					set.Add(topic, p)
				}
			}
			res, err := adm.ElectLeaders(in.ctx, how, set)
			if err != nil {
				return fmt.Errorf("electing leaders: %w", err)
			}
			out := []reassignResult{}
			failed := 0
			for _, t := range slices.Sorted(mapKeysOf(res)) {
				for _, p := range slices.Sorted(mapKeysOf(res[t])) {
					r := reassignResult{Topic: t, Partition: p}
					if err := res[t][p].Err; err != nil {
						r.Error = err.Error()
						failed++
					}
					out = append(out, r)
				}
			}
			if in.json {
				if err := writeJSON(in.stdout, out); err != nil {
					return err
				}
			} else {
				for _, r := range out {
					if r.Error != "" {
						fmt.Fprintf(in.stdout, "%s-%d: %s\n", r.Topic, r.Partition, r.Error)
					} else {
						fmt.Fprintf(in.stdout, "%s-%d: leader elected\n", r.Topic, r.Partition)
					}
				}
				if len(out) == 0 {
					fmt.Fprintln(in.stdout, "No election needed.")
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d elections failed", failed, len(out))
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic whose partitions to elect")
	f.Int32SliceVar(&partitions, "partition", nil, "partition (repeatable; default all of --topic)")
	f.BoolVar(&all, "all", false, "every partition of the cluster")
	f.StringVar(&typ, "type", "preferred", "election type: preferred or unclean")
	return cmd
}
