package cli

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newTopicsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List, describe, create, delete and alter topics (kafka-topics.sh)",
		Example: `  vltava topics list
  vltava topics create orders --partitions 6 --config retention.ms=86400000
  vltava topics describe orders
  vltava topics --create --topic orders --partitions 6     # kafka-topics.sh form`,
	}
	cmd.AddCommand(newTopicsListCommand(), newTopicsDescribeCommand(), newTopicsCreateCommand(),
		newTopicsDeleteCommand(), newTopicsAlterCommand())
	for _, sub := range cmd.Commands() {
		if sub.Name() != "list" {
			acceptNameFlag(sub, "topic", "topic")
		}
	}
	// kafka-topics.sh --create --topic x --partitions 3 ...
	addKafkaModes(cmd, "topic", map[string]string{"list": "list", "describe": "describe", "create": "create", "delete": "delete", "alter": "alter"})
	return cmd
}

// topicSummary is one row of `topics list`.
type topicSummary struct {
	Topic             string `json:"topic"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
}

func newTopicsListCommand() *cobra.Command {
	var internal bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List topics",
		Example: `  vltava topics list --output json`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			var td kadm.TopicDetails
			if internal {
				td, err = adm.ListTopicsWithInternal(in.ctx)
			} else {
				td, err = adm.ListTopics(in.ctx)
			}
			if err != nil {
				return fmt.Errorf("listing topics: %w", err)
			}
			rows := []topicSummary{}
			for _, name := range td.Names() {
				d := td[name]
				rows = append(rows, topicSummary{Topic: name, Partitions: len(d.Partitions),
					ReplicationFactor: d.Partitions.NumReplicas(), Internal: d.IsInternal})
			}
			if in.json {
				return writeJSON(in.stdout, rows)
			}
			t := newTable(in.stdout, "TOPIC", "PARTITIONS", "REPLICATION-FACTOR")
			for _, r := range rows {
				t.row(r.Topic, r.Partitions, r.ReplicationFactor)
			}
			return t.flush()
		}),
	}
	cmd.Flags().BoolVar(&internal, "include-internal", false, "also list internal topics such as __consumer_offsets")
	cmd.Flags().Bool("exclude-internal", false, "leave out internal topics (the default; accepted for kafka-topics.sh)")
	cmd.MarkFlagsMutuallyExclusive("include-internal", "exclude-internal")
	return cmd
}

// configValue renders a config value, hiding sensitive ones as Kafka does.
func configValue(c kadm.Config) string {
	if c.Sensitive {
		return "(sensitive)"
	}
	if c.Value == nil {
		return "null"
	}
	return *c.Value
}

func newTopicsCreateCommand() *cobra.Command {
	var (
		partitions  int32
		replication int16
		configs     []string
		ifNotExists bool
		assignment  string
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC",
		Short: "Create a topic",
		Long: `Create a topic. --partitions and --replication-factor default to -1, which
asks the broker for its num.partitions and default.replication.factor.
--replica-assignment places the replicas instead, as kafka-topics.sh's:
partitions separated by commas, each a colon-separated broker list with the
preferred leader first.`,
		Example: `  vltava topics create orders --partitions 3 --replication-factor 1 --config cleanup.policy=compact
  vltava topics create orders --if-not-exists
  vltava topics create orders --replica-assignment 1:2,2:3,3:1`,
		Args: exactArgs(1, "one TOPIC"),
		RunE: clusterCommand(func(in *invocation) error {
			kvs, err := parseKeyValues("--config", configs)
			if err != nil {
				return err
			}
			cfg := map[string]*string{}
			for _, kv := range kvs {
				v := kv[1]
				cfg[kv[0]] = &v
			}
			var placed map[int32][]int32
			if assignment != "" {
				fl := in.cmd.Flags()
				if fl.Changed("partitions") || fl.Changed("replication-factor") {
					return errors.New("--replica-assignment sets the partitions and replicas; it takes no --partitions or --replication-factor")
				}
				if placed, err = parseReplicaAssignment(assignment); err != nil {
					return err
				}
			}
			cl, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			var resp kadm.CreateTopicResponse
			if placed != nil {
				resp, err = createTopicPlaced(in.ctx, cl, in.args[0], placed, cfg)
			} else {
				resp, err = adm.CreateTopic(in.ctx, partitions, replication, cfg, in.args[0])
			}
			if err == nil {
				err = resp.Err
			}
			switch {
			case errors.Is(err, kerr.TopicAlreadyExists) && ifNotExists:
				return nil
			case err != nil:
				return fmt.Errorf("creating topic %q: %w%s", in.args[0], err, detail(resp.ErrMessage))
			}
			if in.json {
				return writeJSON(in.stdout, map[string]any{"topic": resp.Topic, "topic_id": resp.ID.String(),
					"partitions": resp.NumPartitions, "replication_factor": resp.ReplicationFactor})
			}
			fmt.Fprintf(in.stdout, "Created topic %s.\n", in.args[0])
			return nil
		}),
	}
	cmd.Flags().Int32Var(&partitions, "partitions", -1, "number of partitions (-1: broker default)")
	cmd.Flags().Int16Var(&replication, "replication-factor", -1, "replication factor (-1: broker default)")
	cmd.Flags().StringArrayVar(&configs, "config", nil, "topic config key=value (repeatable)")
	cmd.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed if the topic already exists")
	cmd.Flags().StringVar(&assignment, "replica-assignment", "", "replica placement: 1:2,2:3 (partition 0 on brokers 1 and 2, partition 1 on 2 and 3)")
	return cmd
}

// detail appends a broker-supplied error message when there is one.
func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

func newTopicsDeleteCommand() *cobra.Command {
	var ifExists bool
	cmd := &cobra.Command{
		Use:     "delete TOPIC...",
		Short:   "Delete topics",
		Example: `  vltava topics delete orders --if-exists`,
		Args:    cobra.MinimumNArgs(1),
		RunE: clusterCommand(func(in *invocation) error {
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			resps, err := adm.DeleteTopics(in.ctx, in.args...)
			if err != nil {
				return fmt.Errorf("deleting topics: %w", err)
			}
			for _, name := range in.args {
				r, ok := resps[name]
				switch {
				case !ok:
					return fmt.Errorf("deleting topic %q: no response from the cluster", name)
				case errors.Is(r.Err, kerr.UnknownTopicOrPartition) && ifExists:
				case errors.Is(r.Err, kerr.UnknownTopicOrPartition):
					return fmt.Errorf("topic %q does not exist", name)
				case r.Err != nil:
					return fmt.Errorf("deleting topic %q: %w%s", name, r.Err, detail(r.ErrMessage))
				default:
					if !in.json {
						fmt.Fprintf(in.stdout, "Deleted topic %s.\n", name)
					}
				}
			}
			if in.json {
				return writeJSON(in.stdout, map[string]any{"deleted": in.args})
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed if a topic does not exist")
	return cmd
}

func newTopicsAlterCommand() *cobra.Command {
	var (
		partitions int
		configs    []string
		ifExists   bool
	)
	cmd := &cobra.Command{
		Use:   "alter TOPIC",
		Short: "Increase partitions or set topic configs",
		Long: `Alter a topic: --partitions raises the partition count (Kafka never lowers
it), --config sets topic configs with IncrementalAlterConfigs (use
"vltava configs alter --topic X --delete k" to remove one).`,
		Example: `  vltava topics alter orders --partitions 12
  vltava topics alter orders --config retention.ms=3600000`,
		Args: exactArgs(1, "one TOPIC"),
		RunE: clusterCommand(func(in *invocation) error {
			kvs, err := parseKeyValues("--config", configs)
			if err != nil {
				return err
			}
			if partitions <= 0 && len(kvs) == 0 {
				return errors.New("nothing to alter: give --partitions and/or --config")
			}
			ctx := in.ctx
			_, adm, err := in.cluster(ctx)
			if err != nil {
				return err
			}
			topic := in.args[0]
			td, err := adm.ListTopics(ctx, topic)
			if err != nil {
				return fmt.Errorf("describing topic %q: %w", topic, err)
			}
			if d, ok := td[topic]; !ok || d.Err != nil {
				if ifExists {
					return nil
				}
				return fmt.Errorf("topic %q does not exist", topic)
			}
			if partitions > 0 {
				if have := len(td[topic].Partitions); partitions < have {
					return fmt.Errorf("topic %q has %d partitions; the count can only be increased", topic, have)
				} else if partitions > have {
					resps, err := adm.UpdatePartitions(ctx, partitions, topic)
					if err != nil {
						return fmt.Errorf("adding partitions to %q: %w", topic, err)
					}
					if r, err := resps.On(topic, nil); err != nil || r.Err != nil {
						if err == nil {
							err = fmt.Errorf("%w%s", r.Err, detail(r.ErrMessage))
						}
						return fmt.Errorf("adding partitions to %q: %w", topic, err)
					}
				}
			}
			if len(kvs) > 0 {
				if err := alterConfigs(ctx, nil, adm, topicResource(topic), kvs, nil); err != nil {
					return err
				}
			}
			if !in.json {
				fmt.Fprintf(in.stdout, "Altered topic %s.\n", topic)
				return nil
			}
			return writeJSON(in.stdout, map[string]any{"altered": topic})
		}),
	}
	cmd.Flags().IntVar(&partitions, "partitions", 0, "new total partition count (must be larger than the current one)")
	cmd.Flags().StringArrayVar(&configs, "config", nil, "topic config key=value to set (repeatable)")
	cmd.Flags().BoolVar(&ifExists, "if-exists", false, "succeed without changes if the topic does not exist")
	return cmd
}

// kafkaUuidString prints a topic id as Kafka's tools do: URL-safe base64
// without padding (kadm's String uses standard base64 with padding).
func kafkaUuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }
