package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deletedOffset is one row of `groups delete-offsets`.
type deletedOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Error     string `json:"error,omitempty"`
}

// partitionsOf resolves Kafka's --topic t / t:0,1 flags to a set of
// existing partitions (every partition of t when none is named).
func partitionsOf(ctx context.Context, adm *kadm.Client, topicFlags []string) (kadm.TopicsSet, error) {
	var names []string
	explicit := map[string][]int32{}
	for _, tf := range topicFlags {
		t, ps, err := topicPartitionsFlag(tf)
		if err != nil {
			return nil, err
		}
		names = append(names, t)
		explicit[t] = append(explicit[t], ps...)
	}
	td, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describing topics: %w", err)
	}
	set := kadm.TopicsSet{}
	for _, t := range names {
		d, ok := td[t]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist", t)
		}
		if len(explicit[t]) == 0 {
			for p := range d.Partitions {
				set.Add(t, p)
			}
			continue
		}
		for _, p := range explicit[t] {
			if _, ok := d.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d", t, p)
			}
			set.Add(t, p)
		}
	}
	return set, nil
}

func newGroupsDeleteOffsetsCommand() *cobra.Command {
	var topics []string
	cmd := &cobra.Command{
		Use:   "delete-offsets GROUP",
		Short: "Delete a group's committed offsets for some topics or partitions (OffsetDelete, KIP-496)",
		Long: `Delete the committed offsets of one group for the given topics (--topic t for
every partition, t:0,1 for some). As in Kafka, the coordinator refuses
partitions of topics the group's live members are subscribed to
(GROUP_SUBSCRIBED_TO_TOPIC).`,
		Example: `  vltava groups delete-offsets billing --topic orders
  vltava groups --delete-offsets --group billing --topic orders:0,1`,
		Args: exactArgs(1, "one GROUP"),
		RunE: clusterCommand(func(in *invocation) error {
			if len(topics) == 0 {
				return errors.New("give at least one --topic")
			}
			group := in.args[0]
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			set, err := partitionsOf(in.ctx, adm, topics)
			if err != nil {
				return err
			}
			resps, err := adm.DeleteOffsets(in.ctx, group, set)
			if errors.Is(err, kerr.GroupIDNotFound) {
				return errGroupNotFound(group)
			}
			if err != nil {
				return groupAPIError(fmt.Sprintf("deleting offsets of group %q", group), err)
			}
			rows := []deletedOffset{}
			failed := 0
			for _, tp := range set.Sorted() {
				for _, p := range tp.Partitions {
					r := deletedOffset{Topic: tp.Topic, Partition: p}
					if perr, ok := resps.Lookup(tp.Topic, p); !ok {
						r.Error = "no response from the coordinator"
					} else if perr != nil {
						r.Error = perr.Error()
					}
					if r.Error != "" {
						failed++
					}
					rows = append(rows, r)
				}
			}
			if in.json {
				if err := writeJSON(in.stdout, rows); err != nil {
					return err
				}
			} else {
				t := newTable(in.stdout, "TOPIC", "PARTITION", "STATUS")
				for _, r := range rows {
					status := "Successful"
					if r.Error != "" {
						status = "Error: " + r.Error
					}
					t.row(r.Topic, r.Partition, status)
				}
				if err := t.flush(); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("deleting offsets of group %q failed for %d of %d partitions", group, failed, len(rows))
			}
			return nil
		}),
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, `topic whose offsets to delete, "topic" or "topic:0,1" (repeatable)`)
	return cmd
}
