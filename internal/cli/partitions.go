package cli

// vltava partitions: the equivalents of kafka-reassign-partitions.sh and
// kafka-leader-election.sh, over AlterPartitionReassignments,
// ListPartitionReassignments and ElectLeaders (franz-go kadm).

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newPartitionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "partitions",
		Short: "Reassign partitions and elect their leaders (kafka-reassign-partitions.sh, kafka-leader-election.sh)",
		Example: `  vltava partitions reassign --topic orders --partition 0 --replicas 2,3,1
  vltava partitions list-reassignments
  vltava partitions elect-leaders --all
  vltava partitions reassign --verify --reassignment-json-file plan.json`,
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
	Note      string `json:"note,omitempty"`
}

// reassignFlags are the flags of `partitions reassign`: the direct form
// (--topic, --partition, --replicas or --cancel) and
// kafka-reassign-partitions.sh's modes.
type reassignFlags struct {
	topic, replicas string
	partitions      []int32
	cancel          bool

	generate, execute, verify bool
	topicsFile, planFile      string
	brokerList                string
	throttle, logDirThrottle  int64
	preserveThrottles         bool
	additional                bool
}

func newReassignCommand() *cobra.Command {
	var rf reassignFlags
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move partitions to new replica sets, plan moves, verify or cancel them (kafka-reassign-partitions.sh)",
		Long: `Starts a reassignment (KIP-455): the new replicas copy the partition from
its leader and join the ISR, then the replicas not in the new set are
dropped.

Direct form: --topic with --partition (repeatable) and --replicas 2,3,1, or
--cancel to revert a reassignment in progress.

kafka-reassign-partitions.sh's form, with its JSON plans
({"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}):
  --generate --topics-to-move-json-file F --broker-list 1,2,3
      prints the current assignment and a proposed one over the brokers
      ({"version":1,"topics":[{"topic":"t"}]} names the topics).
  --execute --reassignment-json-file F [--throttle B/s] [--replica-alter-log-dirs-throttle B/s]
      prints the current assignment (to roll back with) and starts the
      moves. --throttle sets leader/follower.replication.throttled.rate on
      every broker involved and leader/follower.replication.throttled.replicas
      on the moved topics (KIP-73).
  --verify --reassignment-json-file F [--preserve-throttles]
      reports each partition as completed or still in progress and, once
      all are complete, removes the throttles.
  --cancel --reassignment-json-file F [--preserve-throttles]
      cancels the plan's reassignments and removes the throttles.`,
		Example: `  vltava partitions reassign --topic orders --partition 0 --partition 1 --replicas 2,3
  vltava partitions reassign --topic orders --partition 0 --cancel
  vltava partitions reassign --generate --topics-to-move-json-file topics.json --broker-list 1,2,3
  vltava partitions reassign --execute --reassignment-json-file plan.json --throttle 10000000
  vltava partitions reassign --verify --reassignment-json-file plan.json`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			modes := 0
			for _, on := range []bool{rf.generate, rf.execute, rf.verify, rf.cancel && rf.planFile != ""} {
				if on {
					modes++
				}
			}
			if modes > 1 {
				return fmt.Errorf("give only one of --generate, --execute, --verify and --cancel")
			}
			fl := in.cmd.Flags()
			if !rf.execute && (fl.Changed("throttle") || fl.Changed("replica-alter-log-dirs-throttle")) {
				return fmt.Errorf("--throttle and --replica-alter-log-dirs-throttle go with --execute")
			}
			if rf.additional && !rf.execute {
				return fmt.Errorf("--additional goes with --execute")
			}
			if fl.Changed("preserve-throttles") && !rf.verify && !rf.cancel {
				return fmt.Errorf("--preserve-throttles goes with --verify or --cancel")
			}
			if modes == 1 {
				if rf.topic != "" || len(rf.partitions) > 0 || rf.replicas != "" {
					return fmt.Errorf("--topic, --partition and --replicas are the direct form; the plan modes read JSON files")
				}
				return runReassignPlan(in, &rf)
			}
			return runReassignDirect(in, &rf)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&rf.topic, "topic", "", "topic to reassign")
	f.Int32SliceVar(&rf.partitions, "partition", nil, "partition to reassign (repeatable)")
	f.StringVar(&rf.replicas, "replicas", "", "comma-separated broker ids of the new replica set, preferred leader first")
	f.BoolVar(&rf.cancel, "cancel", false, "cancel the reassignment in progress (of --topic/--partition, or of --reassignment-json-file's partitions)")
	f.BoolVar(&rf.generate, "generate", false, "propose a plan moving --topics-to-move-json-file's topics to --broker-list")
	f.BoolVar(&rf.execute, "execute", false, "start --reassignment-json-file's plan")
	f.BoolVar(&rf.verify, "verify", false, "report the progress of --reassignment-json-file's plan; remove throttles once complete")
	f.StringVar(&rf.topicsFile, "topics-to-move-json-file", "", `JSON {"version":1,"topics":[{"topic":"t"}]} for --generate`)
	f.StringVar(&rf.planFile, "reassignment-json-file", "", "Kafka's reassignment JSON plan")
	f.StringVar(&rf.brokerList, "broker-list", "", "brokers to spread the partitions over with --generate: 1,2,3")
	f.Int64Var(&rf.throttle, "throttle", -1, "inter-broker replication throttle in bytes/s during --execute (-1: none)")
	f.Int64Var(&rf.logDirThrottle, "replica-alter-log-dirs-throttle", -1, "throttle of moves between log dirs in bytes/s during --execute (-1: none)")
	f.BoolVar(&rf.additional, "additional", false, "with --execute, start the plan even while other reassignments run")
	f.BoolVar(&rf.preserveThrottles, "preserve-throttles", false, "leave the throttles in place after --verify or --cancel")
	return cmd
}

// runReassignDirect is `reassign --topic t --partition p --replicas ...`.
func runReassignDirect(in *invocation, rf *reassignFlags) error {
	if rf.topic == "" || len(rf.partitions) == 0 {
		return fmt.Errorf("--topic and at least one --partition are required (or a plan mode: --generate, --execute, --verify)")
	}
	if rf.cancel == (rf.replicas != "") {
		return fmt.Errorf("give exactly one of --replicas and --cancel")
	}
	var brokers []int32
	if !rf.cancel {
		var err error
		if brokers, err = parseBrokerList(rf.replicas); err != nil {
			return err
		}
	}
	_, adm, err := in.cluster(in.ctx)
	if err != nil {
		return err
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, p := range rf.partitions {
		req.Assign(rf.topic, p, brokers)
	}
	resps, err := adm.AlterPartitionAssignments(in.ctx, req)
	if err != nil {
		return fmt.Errorf("reassigning: %w", err)
	}
	var out []reassignResult
	failed := 0
	for _, p := range slices.Sorted(slices.Values(rf.partitions)) {
		r := reassignResult{Topic: rf.topic, Partition: p}
		if rr, ok := resps[rf.topic][p]; ok && rr.Err != nil {
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
			case rf.cancel:
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
	var topic, typ, jsonFile string
	var partitions []int32
	var all bool
	var jsonSet kadm.TopicsSet
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
			if jsonFile != "" {
				if topic != "" || all || len(partitions) > 0 {
					return fmt.Errorf("--path-to-json-file names the partitions; it takes no --topic, --partition or --all")
				}
				var err error
				if jsonSet, err = readElectionFile(jsonFile); err != nil {
					return err
				}
			}
			switch strings.ToLower(typ) {
			case "preferred":
			case "unclean":
				how = kadm.ElectLiveReplica
			default:
				return fmt.Errorf("--type must be preferred or unclean, not %q", typ)
			}
			if jsonSet == nil && all == (topic != "") {
				return fmt.Errorf("give exactly one of --all (Kafka: --all-topic-partitions), --topic and --path-to-json-file")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			set := jsonSet
			if !all && set == nil {
				set = kadm.TopicsSet{}
				if len(partitions) == 0 {
					// Never an empty set: ElectLeaders without partitions
					// elects across the whole cluster.
					if set, err = partitionsOf(in.ctx, adm, []string{topic}); err != nil {
						return err
					}
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
					switch err := res[t][p].Err; {
					case errors.Is(err, kerr.ElectionNotNeeded):
						// As kafka-leader-election.sh: the right leader is
						// already in place, which is not a failure.
						r.Note = "valid replica already elected"
					case err != nil:
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
					} else if r.Note != "" {
						fmt.Fprintf(in.stdout, "%s-%d: %s\n", r.Topic, r.Partition, r.Note)
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
	f.StringVar(&typ, "type", "preferred", "election type: preferred or unclean (Kafka: --election-type PREFERRED|UNCLEAN)")
	f.StringVar(&jsonFile, "path-to-json-file", "", `Kafka's JSON {"partitions":[{"topic":"t","partition":0}]} of partitions to elect`)
	flagAliases(cmd, map[string]string{"election-type": "type", "all-topic-partitions": "all"})
	return cmd
}

// readElectionFile reads kafka-leader-election.sh's --path-to-json-file.
func readElectionFile(path string) (kadm.TopicsSet, error) {
	var f struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition *int32 `json:"partition"`
		} `json:"partitions"`
	}
	if err := readJSONFile("path-to-json-file", path, &f); err != nil {
		return nil, err
	}
	set := kadm.TopicsSet{}
	for i, p := range f.Partitions {
		if p.Topic == "" || p.Partition == nil || *p.Partition < 0 {
			return nil, fmt.Errorf("--path-to-json-file %s: entry %d needs topic and partition", path, i)
		}
		set.Add(p.Topic, *p.Partition)
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("--path-to-json-file %s: no partitions", path)
	}
	return set, nil
}
