package cli

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	// LocalSize and RemoteSize are set for tiered topics
	// (remote.storage.enable=true): the leader's bytes on disk and the
	// bytes in the remote tier.
	LocalSize  *int64 `json:"local_size,omitempty"`
	RemoteSize *int64 `json:"remote_size,omitempty"`
}

// partitionFilter is one of kafka-topics.sh --describe's partition
// selectors; when one is given only matching partitions are shown, and
// topics without one are left out.
type partitionFilter struct {
	underReplicated bool // ISR smaller than the replica set
	unavailable     bool // no leader, or the leader is not a live broker
	underMinISR     bool // ISR smaller than min.insync.replicas
	atMinISR        bool // ISR exactly min.insync.replicas
	withOverrides   bool // topics with configs set on them (topic level)
}

func (f partitionFilter) partitionLevel() bool {
	return f.underReplicated || f.unavailable || f.underMinISR || f.atMinISR
}

// keep reports whether p passes the partition selectors, as Kafka's
// TopicCommand.PartitionDescription does: the ISR is compared with the
// replica count and min.insync.replicas, a leader that is not registered
// counts as unavailable, and a partition without a leader is both
// unavailable and under min ISR.
func (f partitionFilter) keep(p partitionDescription, live map[int32]bool, minISR int) bool {
	if !f.partitionLevel() {
		return true
	}
	switch {
	case f.underReplicated && len(p.ISR) < len(p.Replicas):
	case f.unavailable && (p.Leader < 0 || !live[p.Leader]):
	case f.underMinISR && (p.Leader < 0 || len(p.ISR) < minISR):
	case f.atMinISR && len(p.ISR) == minISR:
	default:
		return false
	}
	return true
}

func newTopicsDescribeCommand() *cobra.Command {
	var (
		f        partitionFilter
		ifExists bool
	)
	cmd := &cobra.Command{
		Use:   "describe [TOPIC...]",
		Short: "Show partitions, leaders, replicas, ISR and non-default configs",
		Long: `Describe topics (all topics when none are named). Configs lists only the
settings set on the topic itself (dynamic topic configs), as kafka-topics.sh
--describe does; use "vltava configs describe --topic X --all" for every value.

A tiered topic (remote.storage.enable=true) shows each partition's bytes on
the leader's disk and in the remote tier.

The partition selectors (--under-replicated-partitions,
--unavailable-partitions, --under-min-isr-partitions, --at-min-isr-partitions)
show only the partitions that match, and only topics that have one.`,
		Example: `  vltava topics describe orders
  vltava topics describe orders payments --output json
  vltava topics describe --under-replicated-partitions`,
		RunE: clusterCommand(func(in *invocation) error {
			ctx := in.ctx
			_, adm, err := in.cluster(ctx)
			if err != nil {
				return err
			}
			md, err := adm.Metadata(ctx, in.args...)
			if err != nil {
				return fmt.Errorf("describing topics: %w", err)
			}
			td := md.Topics
			for _, name := range in.args {
				d, ok := td[name]
				if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
					if ifExists {
						delete(td, name)
						continue
					}
					return fmt.Errorf("topic %q does not exist", name)
				}
				if d.Err != nil {
					return fmt.Errorf("topic %q: %w", name, d.Err)
				}
			}
			if len(in.args) == 0 {
				for name, d := range td {
					if d.IsInternal {
						delete(td, name) // as ListTopics: internal topics only by name
					}
				}
			}
			live := map[int32]bool{}
			for _, b := range md.Brokers {
				live[b.NodeID] = true
			}
			names := td.Names()
			var cfgs kadm.ResourceConfigs
			if len(names) > 0 {
				if cfgs, err = adm.DescribeTopicConfigs(ctx, names...); err != nil {
					return fmt.Errorf("describing topic configs: %w", err)
				}
			}
			out := []topicDescription{}
			tieredIDs := map[string][16]byte{}
			for _, name := range names {
				d := td[name]
				desc := topicDescription{Topic: name, TopicID: kafkaUuidString(d.ID), PartitionCount: len(d.Partitions),
					ReplicationFactor: d.Partitions.NumReplicas(), Configs: map[string]string{}, Partitions: []partitionDescription{}}
				minISR := 1 // Kafka's min.insync.replicas default
				if rc, err := cfgs.On(name, nil); err == nil && rc.Err == nil {
					for _, c := range rc.Configs {
						if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
							desc.Configs[c.Key] = configValue(c)
						}
						if c.Key == "remote.storage.enable" && c.Value != nil && *c.Value == "true" {
							tieredIDs[name] = d.ID
						}
						if c.Key == "min.insync.replicas" && c.Value != nil {
							if n, err := strconv.Atoi(*c.Value); err == nil {
								minISR = n
							}
						}
					}
				}
				if f.withOverrides && len(desc.Configs) == 0 {
					continue
				}
				for _, p := range d.Partitions.Sorted() {
					pd := partitionDescription{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
					if p.Err != nil && !errors.Is(p.Err, kerr.LeaderNotAvailable) {
						pd.Error = p.Err.Error()
					}
					if f.keep(pd, live, minISR) {
						desc.Partitions = append(desc.Partitions, pd)
					}
				}
				if f.partitionLevel() && len(desc.Partitions) == 0 {
					continue
				}
				out = append(out, desc)
			}
			if err := in.addTierSizes(ctx, adm, out, tieredIDs); err != nil {
				return err
			}
			if in.json {
				return writeJSON(in.stdout, out)
			}
			for _, d := range out {
				if !f.partitionLevel() {
					fmt.Fprintf(in.stdout, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
						d.Topic, d.TopicID, d.PartitionCount, d.ReplicationFactor, joinConfigs(d.Configs))
				}
				if f.withOverrides {
					continue // Kafka prints only the topic line then
				}
				cols := []string{"PARTITION", "LEADER", "REPLICAS", "ISR"}
				if f.partitionLevel() {
					cols = append([]string{"TOPIC"}, cols...)
				}
				_, tiered := tieredIDs[d.Topic]
				if tiered {
					cols = append(cols, "LOCAL-BYTES", "REMOTE-BYTES")
				}
				t := newTable(in.stdout, cols...)
				for _, p := range d.Partitions {
					leader := any(p.Leader)
					if p.Leader < 0 {
						leader = "none"
					}
					row := []any{p.Partition, leader, joinInt32s(p.Replicas), joinInt32s(p.ISR)}
					if f.partitionLevel() {
						row = append([]any{d.Topic}, row...)
					}
					if tiered && p.LocalSize != nil && p.RemoteSize != nil {
						row = append(row, *p.LocalSize, *p.RemoteSize)
					}
					t.row(row...)
				}
				if err := t.flush(); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.underReplicated, "under-replicated-partitions", false, "only partitions whose ISR is smaller than the replica set")
	fl.BoolVar(&f.unavailable, "unavailable-partitions", false, "only partitions without a live leader")
	fl.BoolVar(&f.underMinISR, "under-min-isr-partitions", false, "only partitions whose ISR is smaller than min.insync.replicas")
	fl.BoolVar(&f.atMinISR, "at-min-isr-partitions", false, "only partitions whose ISR is exactly min.insync.replicas")
	fl.BoolVar(&f.withOverrides, "topics-with-overrides", false, "only topics with configs set on them")
	fl.BoolVar(&ifExists, "if-exists", false, "skip named topics that do not exist")
	fl.Bool("exclude-internal", false, "leave out internal topics (the default unless named)")
	return cmd
}

// joinConfigs renders k=v,k=v sorted by key, as kafka-topics.sh does.
func joinConfigs(cfg map[string]string) string {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + cfg[k]
	}
	return strings.Join(parts, ",")
}
