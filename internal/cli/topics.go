package cli

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTopicsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List, describe, create, delete and alter topics (kafka-topics.sh)",
		Example: `  vltava topics list
  vltava topics create orders --partitions 6 --config retention.ms=86400000
  vltava topics describe orders`,
	}
	cmd.AddCommand(newTopicsListCommand(), newTopicsDescribeCommand(), newTopicsCreateCommand(),
		newTopicsDeleteCommand(), newTopicsAlterCommand())
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
	return cmd
}

// topicDescription is the result of `topics describe` for one topic.
type topicDescription struct {
	Topic             string                 `json:"topic"`
	TopicID           string                 `json:"topic_id"`
	PartitionCount    int                    `json:"partition_count"`
	ReplicationFactor int                    `json:"replication_factor"`
	Configs           map[string]string      `json:"configs"`
	Partitions        []partitionDescription `json:"partitions"`
}

type partitionDescription struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	Error     string  `json:"error,omitempty"`
}

func newTopicsDescribeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "describe [TOPIC...]",
		Short: "Show partitions, leaders, replicas, ISR and non-default configs",
		Long: `Describe topics (all topics when none are named). Configs lists only the
settings set on the topic itself (dynamic topic configs), as kafka-topics.sh
--describe does; use "vltava configs describe --topic X --all" for every value.`,
		Example: `  vltava topics describe orders
  vltava topics describe orders payments --output json`,
		RunE: clusterCommand(func(in *invocation) error {
			ctx := in.ctx
			_, adm, err := in.cluster(ctx)
			if err != nil {
				return err
			}
			td, err := adm.ListTopics(ctx, in.args...)
			if err != nil {
				return fmt.Errorf("describing topics: %w", err)
			}
			for _, name := range in.args {
				d, ok := td[name]
				if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
					return fmt.Errorf("topic %q does not exist", name)
				}
				if d.Err != nil {
					return fmt.Errorf("topic %q: %w", name, d.Err)
				}
			}
			names := td.Names()
			var cfgs kadm.ResourceConfigs
			if len(names) > 0 {
				if cfgs, err = adm.DescribeTopicConfigs(ctx, names...); err != nil {
					return fmt.Errorf("describing topic configs: %w", err)
				}
			}
			out := []topicDescription{}
			for _, name := range names {
				d := td[name]
				desc := topicDescription{Topic: name, TopicID: kafkaUuidString(d.ID), PartitionCount: len(d.Partitions),
					ReplicationFactor: d.Partitions.NumReplicas(), Configs: map[string]string{}}
				if rc, err := cfgs.On(name, nil); err == nil && rc.Err == nil {
					for _, c := range rc.Configs {
						if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
							desc.Configs[c.Key] = configValue(c)
						}
					}
				}
				for _, p := range d.Partitions.Sorted() {
					pd := partitionDescription{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
					if p.Err != nil {
						pd.Error = p.Err.Error()
					}
					desc.Partitions = append(desc.Partitions, pd)
				}
				out = append(out, desc)
			}
			if in.json {
				return writeJSON(in.stdout, out)
			}
			for _, d := range out {
				keys := make([]string, 0, len(d.Configs))
				for k := range d.Configs {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				cfg := ""
				for i, k := range keys {
					if i > 0 {
						cfg += ","
					}
					cfg += k + "=" + d.Configs[k]
				}
				fmt.Fprintf(in.stdout, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
					d.Topic, d.TopicID, d.PartitionCount, d.ReplicationFactor, cfg)
				t := newTable(in.stdout, "PARTITION", "LEADER", "REPLICAS", "ISR")
				for _, p := range d.Partitions {
					t.row(p.Partition, p.Leader, joinInt32s(p.Replicas), joinInt32s(p.ISR))
				}
				if err := t.flush(); err != nil {
					return err
				}
			}
			return nil
		}),
	}
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
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC",
		Short: "Create a topic",
		Long: `Create a topic. --partitions and --replication-factor default to -1, which
asks the broker for its num.partitions and default.replication.factor.`,
		Example: `  vltava topics create orders --partitions 3 --replication-factor 1 --config cleanup.policy=compact
  vltava topics create orders --if-not-exists`,
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
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			resp, err := adm.CreateTopic(in.ctx, partitions, replication, cfg, in.args[0])
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
				if err := alterConfigs(ctx, adm, topicResource(topic), kvs, nil); err != nil {
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
