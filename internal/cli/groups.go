package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "List, describe, delete consumer groups and reset their offsets (kafka-consumer-groups.sh)",
		Example: `  vltava groups list
  vltava groups describe billing
  vltava groups reset-offsets billing --topic orders --to-earliest --execute
  vltava groups --describe --all-groups               # kafka-consumer-groups.sh form`,
	}
	cmd.AddCommand(newGroupsListCommand(), newGroupsDescribeCommand(), newGroupsDeleteCommand(), newGroupsResetCommand(),
		newGroupsDeleteOffsetsCommand())
	for _, sub := range cmd.Commands() {
		if sub.Name() != "list" {
			acceptNameFlag(sub, "group", "group")
		}
	}
	// kafka-consumer-groups.sh --describe --group g ...
	addKafkaModes(cmd, "group", map[string]string{"list": "list", "describe": "describe", "delete": "delete",
		"reset-offsets": "reset-offsets", "delete-offsets": "delete-offsets"})
	return cmd
}

type groupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func newGroupsListCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List consumer groups",
		Example: `  vltava groups list --output json`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			groups, err := adm.ListGroups(in.ctx)
			if err != nil {
				return groupAPIError("listing groups", err)
			}
			rows := []groupSummary{}
			for _, g := range groups.Sorted() {
				rows = append(rows, groupSummary{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
			}
			if in.json {
				return writeJSON(in.stdout, rows)
			}
			t := newTable(in.stdout, "GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR")
			for _, r := range rows {
				t.row(r.Group, r.State, r.ProtocolType, r.Coordinator)
			}
			return t.flush()
		}),
	}
}

// groupDescription is the result of `groups describe`.
type groupDescription struct {
	Group    string            `json:"group"`
	State    string            `json:"state"`
	Protocol string            `json:"protocol"`
	Members  []groupMember     `json:"members"`
	Offsets  []partitionOffset `json:"offsets"`
}

type groupMember struct {
	MemberID    string             `json:"member_id"`
	InstanceID  string             `json:"instance_id,omitempty"`
	ClientID    string             `json:"client_id"`
	Host        string             `json:"host"`
	Assignments []topicAssignments `json:"assignments"`
}

type topicAssignments struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// partitionOffset is one row of the lag table. Lag is log end offset minus
// committed offset; -1 when either is unknown (shown as "-" by Kafka).
type partitionOffset struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	LogEndOffset  int64  `json:"log_end_offset"`
	Lag           int64  `json:"lag"`
	// TimeLagSeconds is the age of the record at the committed offset
	// (groups_time_lag.go); -1 when unknown.
	TimeLagSeconds float64 `json:"time_lag_seconds"`
	MemberID       string  `json:"member_id,omitempty"`
	ClientID       string  `json:"client_id,omitempty"`
	Host           string  `json:"host,omitempty"`
}

// groupAPIError explains a failure of a group request; clusters without
// consumer group support answer with unsupported-API errors, which franz-go
// reports as "broker is too old".
func groupAPIError(what string, err error) error {
	if errors.Is(err, kerr.UnsupportedVersion) || strings.Contains(err.Error(), "broker is too old") {
		return fmt.Errorf("%s: the cluster does not support consumer group APIs: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// errGroupNotFound mirrors kafka-consumer-groups' "does not exist".
func errGroupNotFound(group string) error {
	return fmt.Errorf("consumer group %q does not exist", group)
}

// describeGroup gathers the state, members and per-partition lag.
func describeGroup(ctx context.Context, adm *kadm.Client, group string) (groupDescription, error) {
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return groupDescription{}, groupAPIError(fmt.Sprintf("describing group %q", group), err)
	}
	l, ok := lags[group]
	if !ok {
		return groupDescription{}, errGroupNotFound(group)
	}
	if err := l.Error(); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return groupDescription{}, errGroupNotFound(group)
		}
		return groupDescription{}, groupAPIError(fmt.Sprintf("describing group %q", group), err)
	}
	d := groupDescription{Group: group, State: l.State, Protocol: l.Protocol, Members: []groupMember{}, Offsets: []partitionOffset{}}
	for _, m := range l.Members {
		gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignments: []topicAssignments{}}
		if m.InstanceID != nil {
			gm.InstanceID = *m.InstanceID
		}
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range c.Topics {
				ps := append([]int32(nil), t.Partitions...)
				sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
				gm.Assignments = append(gm.Assignments, topicAssignments{Topic: t.Topic, Partitions: ps})
			}
		}
		d.Members = append(d.Members, gm)
	}
	for _, ml := range l.Lag.Sorted() {
		po := partitionOffset{Topic: ml.Topic, Partition: ml.Partition, CurrentOffset: ml.Commit.At,
			LogEndOffset: ml.End.Offset, Lag: ml.Lag}
		if ml.End.Err != nil {
			po.LogEndOffset = -1
		}
		if ml.Member != nil {
			po.MemberID, po.ClientID, po.Host = ml.Member.MemberID, ml.Member.ClientID, ml.Member.ClientHost
		}
		d.Offsets = append(d.Offsets, po)
	}
	// Kafka answers DescribeGroups for an unknown group with state Dead.
	if (d.State == "Dead" || d.State == "") && len(d.Members) == 0 && len(d.Offsets) == 0 {
		return d, errGroupNotFound(group)
	}
	return d, nil
}

func dashIfNegative(n int64) any {
	if n < 0 {
		return "-"
	}
	return n
}

// groupNames resolves the groups a command acts on: the named ones, or
// with --all-groups every group of the cluster (Kafka's --all-groups).
func groupNames(ctx context.Context, adm *kadm.Client, args []string, all bool) ([]string, error) {
	switch {
	case all && len(args) > 0:
		return nil, errors.New("name groups or give --all-groups, not both")
	case !all && len(args) == 0:
		return nil, errors.New("expected at least one GROUP (or --group, or --all-groups)")
	case !all:
		return args, nil
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, groupAPIError("listing groups", err)
	}
	return listed.Groups(), nil
}

func newGroupsDescribeCommand() *cobra.Command {
	var members, state, all bool
	cmd := &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show groups' state, members, assignments and lag per partition",
		Long: `Describe consumer groups: by default the lag per partition (Kafka's
--offsets); --members lists members and their assignments, --state the
group's state. With one named group --output json prints one object, with
several or --all-groups an array.`,
		Example: `  vltava groups describe billing
  vltava groups describe billing --members
  vltava groups describe --all-groups --state
  vltava groups describe billing --output json`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if members && state {
				return errors.New("--members and --state are mutually exclusive")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			names, err := groupNames(in.ctx, adm, in.args, all)
			if err != nil {
				return err
			}
			descs := []groupDescription{}
			for _, g := range names {
				d, err := describeGroup(in.ctx, adm, g)
				if err != nil {
					return err
				}
				descs = append(descs, d)
			}
			if !members && !state {
				in.addTimeLags(in.ctx, descs)
			}
			if in.json {
				if len(in.args) == 1 && !all {
					return writeJSON(in.stdout, descs[0])
				}
				return writeJSON(in.stdout, descs)
			}
			if state {
				t := newTable(in.stdout, "GROUP", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
				for _, d := range descs {
					t.row(d.Group, d.Protocol, d.State, len(d.Members))
				}
				return t.flush()
			}
			for i, d := range descs {
				if i > 0 {
					fmt.Fprintln(in.stdout)
				}
				if err := printGroup(in, d, members); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&members, "members", false, "show members and their assignments instead of offsets")
	cmd.Flags().Bool("verbose", false, "with --members, their assignments (always shown)")
	cmd.Flags().Bool("offsets", false, "show offsets and lag (the default)")
	cmd.Flags().BoolVar(&state, "state", false, "show the group's state instead of offsets")
	cmd.Flags().BoolVar(&all, "all-groups", false, "every group of the cluster")
	return cmd
}

// printGroup writes one group's block of `groups describe`.
func printGroup(in *invocation, d groupDescription, members bool) error {
	fmt.Fprintf(in.stdout, "Group: %s\tState: %s\tProtocol: %s\tMembers: %d\n", d.Group, d.State, d.Protocol, len(d.Members))
	if members {
		t := newTable(in.stdout, "MEMBER-ID", "CLIENT-ID", "HOST", "ASSIGNMENT")
		for _, m := range d.Members {
			as := ""
			for i, a := range m.Assignments {
				if i > 0 {
					as += " "
				}
				as += a.Topic + ":" + joinInt32s(a.Partitions)
			}
			t.row(m.MemberID, m.ClientID, m.Host, as)
		}
		return t.flush()
	}
	t := newTable(in.stdout, "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "TIME-LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	for _, o := range d.Offsets {
		t.row(o.Topic, o.Partition, dashIfNegative(o.CurrentOffset), dashIfNegative(o.LogEndOffset),
			dashIfNegative(o.Lag), formatTimeLag(o.TimeLagSeconds), o.MemberID, o.Host, o.ClientID)
	}
	return t.flush()
}

func newGroupsDeleteCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete inactive groups and their committed offsets",
		Example: `  vltava groups delete billing
  vltava groups delete --all-groups`,
		Args: cobra.ArbitraryArgs,
		RunE: clusterCommand(func(in *invocation) error {
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			names, err := groupNames(in.ctx, adm, in.args, all)
			if err != nil {
				return err
			}
			deleted := []string{}
			if len(names) == 0 {
				if in.json {
					return writeJSON(in.stdout, map[string]any{"deleted": deleted})
				}
				return nil
			}
			resps, err := adm.DeleteGroups(in.ctx, names...)
			if err != nil {
				return groupAPIError("deleting groups", err)
			}
			var failed []error
			for _, g := range names {
				r, ok := resps[g]
				switch {
				case !ok:
					err = fmt.Errorf("deleting group %q: no response from the cluster", g)
				case errors.Is(r.Err, kerr.GroupIDNotFound):
					err = errGroupNotFound(g)
				case errors.Is(r.Err, kerr.NonEmptyGroup):
					err = fmt.Errorf("group %q is not empty: stop its consumers before deleting it", g)
				case r.Err != nil:
					err = fmt.Errorf("deleting group %q: %w%s", g, r.Err, detail(r.ErrMessage))
				default:
					err = nil
				}
				if err != nil {
					failed = append(failed, err)
					continue
				}
				deleted = append(deleted, g)
				if !in.json {
					fmt.Fprintf(in.stdout, "Deleted group %s.\n", g)
				}
			}
			if in.json {
				if err := writeJSON(in.stdout, map[string]any{"deleted": deleted}); err != nil {
					return err
				}
			}
			switch len(failed) {
			case 0:
				return nil
			case 1:
				return failed[0]
			default:
				return fmt.Errorf("%d of %d groups were not deleted; first: %w", len(failed), len(names), failed[0])
			}
		}),
	}
	cmd.Flags().BoolVar(&all, "all-groups", false, "every group of the cluster")
	return cmd
}
