package cli

// kafka-reassign-partitions.sh's --generate, --execute, --verify and
// --cancel over JSON plans.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawJSON embeds an already encoded plan in a JSON answer.
func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// configAlterer is the part of kadm.Client the throttle code uses.
type configAlterer interface {
	AlterBrokerConfigs(ctx context.Context, configs []kadm.AlterConfig, brokers ...int32) (kadm.AlterConfigsResponses, error)
	AlterTopicConfigs(ctx context.Context, configs []kadm.AlterConfig, topics ...string) (kadm.AlterConfigsResponses, error)
	// ThrottledBrokers returns those of brokers with a throttle rate set
	// on them.
	ThrottledBrokers(ctx context.Context, brokers []int32) ([]int32, error)
}

// routedAlterer sends each broker's config change to that broker, as
// Kafka's admin client does for broker resources; topic changes go
// through kadm (to the controller or any broker).
type routedAlterer struct {
	cl  *kgo.Client
	adm *kadm.Client
}

func (r routedAlterer) AlterBrokerConfigs(ctx context.Context, configs []kadm.AlterConfig, brokers ...int32) (kadm.AlterConfigsResponses, error) {
	var out kadm.AlterConfigsResponses
	for _, b := range brokers {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(b))
		for _, c := range configs {
			rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			rc.Name, rc.Value, rc.Op = c.Name, c.Value, kmsg.IncrementalAlterConfigOpSet
			if c.Op == kadm.DeleteConfig {
				rc.Op = kmsg.IncrementalAlterConfigOpDelete
			}
			rr.Configs = append(rr.Configs, rc)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, r.cl.Broker(int(b)))
		if err != nil {
			return nil, fmt.Errorf("broker %d: %w", b, err)
		}
		for _, res := range resp.Resources {
			ar := kadm.AlterConfigsResponse{Name: res.ResourceName, Err: kerr.ErrorForCode(res.ErrorCode)}
			if res.ErrorMessage != nil {
				ar.ErrMessage = *res.ErrorMessage
			}
			out = append(out, ar)
		}
	}
	return out, nil
}

func (r routedAlterer) ThrottledBrokers(ctx context.Context, brokers []int32) ([]int32, error) {
	var out []int32
	for _, b := range brokers {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(b))
		rr.ConfigNames = []string{leaderThrottledRate, followerThrottledRate, logDirsThrottledRate}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, r.cl.Broker(int(b)))
		if err != nil {
			return nil, fmt.Errorf("describing the configs of broker %d: %w", b, err)
		}
		for _, res := range resp.Resources {
			if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
				return nil, fmt.Errorf("describing the configs of broker %d: %w", b, err)
			}
			for _, c := range res.Configs {
				if c.Source == kmsg.ConfigSourceDynamicBrokerConfig && slices.Contains(rr.ConfigNames, c.Name) {
					out = append(out, b)
					break
				}
			}
		}
	}
	return slices.Compact(out), nil
}

func (r routedAlterer) AlterTopicConfigs(ctx context.Context, configs []kadm.AlterConfig, topics ...string) (kadm.AlterConfigsResponses, error) {
	return r.adm.AlterTopicConfigs(ctx, configs, topics...)
}

func alterErr(what string, resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("%s on %s: %w%s", what, r.Name, r.Err, detail(r.ErrMessage))
		}
	}
	return nil
}

// applyThrottles sets the broker rates (when >= 0) and the topics'
// throttled replica lists, as Kafka's tool does before starting moves.
func applyThrottles(ctx context.Context, a configAlterer, th throttles, rate, logDirRate int64) error {
	var brokerCfg []kadm.AlterConfig
	set := func(k string, v int64) {
		s := strconv.FormatInt(v, 10)
		brokerCfg = append(brokerCfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &s})
	}
	if rate >= 0 {
		set(leaderThrottledRate, rate)
		set(followerThrottledRate, rate)
	}
	if logDirRate >= 0 {
		set(logDirsThrottledRate, logDirRate)
	}
	if len(brokerCfg) > 0 && len(th.brokers) > 0 {
		resps, err := a.AlterBrokerConfigs(ctx, brokerCfg, th.brokers...)
		if err := alterErr("setting broker throttles", resps, err); err != nil {
			return err
		}
	}
	if rate < 0 {
		return nil
	}
	for _, t := range sortedKeys(th.topics) {
		lf := th.topics[t]
		var cfg []kadm.AlterConfig
		for i, k := range []string{leaderThrottledReplicas, followerThrottledReplicas} {
			v := lf[i]
			if v == "" {
				continue
			}
			cfg = append(cfg, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
		resps, err := a.AlterTopicConfigs(ctx, cfg, t)
		if err := alterErr("setting topic throttles", resps, err); err != nil {
			return err
		}
	}
	return nil
}

// clearThrottles removes every throttle config from brokers and topics,
// as Kafka's tool does once a reassignment completes or is cancelled.
func clearThrottles(ctx context.Context, a configAlterer, brokers []int32, topics []string) error {
	del := func(keys ...string) []kadm.AlterConfig {
		var out []kadm.AlterConfig
		for _, k := range keys {
			out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
		return out
	}
	if len(brokers) > 0 {
		resps, err := a.AlterBrokerConfigs(ctx, del(leaderThrottledRate, followerThrottledRate, logDirsThrottledRate), brokers...)
		if err := alterErr("clearing broker throttles", resps, err); err != nil {
			return err
		}
	}
	if len(topics) > 0 {
		resps, err := a.AlterTopicConfigs(ctx, del(leaderThrottledReplicas, followerThrottledReplicas), topics...)
		if err := alterErr("clearing topic throttles", resps, err); err != nil {
			return err
		}
	}
	return nil
}

// currentAssignment reads the replica sets of topics' partitions; only
// is, when set, limits it to the plan's partitions.
func currentAssignment(ctx context.Context, adm *kadm.Client, topics []string, only map[string]map[int32][]int32) (map[string]map[int32][]int32, kadm.Metadata, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, md, fmt.Errorf("describing topics: %w", err)
	}
	out := map[string]map[int32][]int32{}
	for _, t := range topics {
		d, ok := md.Topics[t]
		if !ok || d.Err != nil {
			return nil, md, fmt.Errorf("topic %q does not exist", t)
		}
		out[t] = map[int32][]int32{}
		for p, pd := range d.Partitions {
			if only != nil {
				if _, ok := only[t][p]; !ok {
					continue
				}
			}
			out[t][p] = slices.Clone(pd.Replicas)
		}
		for p := range only[t] {
			if _, ok := d.Partitions[p]; !ok {
				return nil, md, fmt.Errorf("topic %q has no partition %d", t, p)
			}
		}
	}
	return out, md, nil
}

// anyMoving reports whether a listed reassignment still adds or removes
// replicas.
func anyMoving(rs kadm.ListPartitionReassignmentsResponses) bool {
	for _, ps := range rs {
		for _, r := range ps {
			if len(r.AddingReplicas)+len(r.RemovingReplicas) > 0 {
				return true
			}
		}
	}
	return false
}

// partitionState is one partition's line of --verify.
type partitionState struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	State     string  `json:"state"` // completed, in_progress or different
	Replicas  []int32 `json:"replicas"`
	Target    []int32 `json:"target"`
}

func runReassignPlan(in *invocation, rf *reassignFlags) error {
	cl, adm, err := in.cluster(in.ctx)
	if err != nil {
		return err
	}
	alt := routedAlterer{cl: cl, adm: adm}
	switch {
	case rf.generate:
		return reassignGenerate(in, adm, rf)
	case rf.execute:
		return reassignExecute(in, adm, alt, rf)
	case rf.verify:
		return reassignVerify(in, adm, alt, rf)
	default:
		return reassignCancel(in, adm, alt, rf)
	}
}

func reassignGenerate(in *invocation, adm *kadm.Client, rf *reassignFlags) error {
	if rf.topicsFile == "" || rf.brokerList == "" {
		return errors.New("--generate needs --topics-to-move-json-file and --broker-list")
	}
	if rf.planFile != "" {
		return errors.New("--generate takes --topics-to-move-json-file, not --reassignment-json-file")
	}
	var ttm topicsToMove
	if err := readJSONFile("topics-to-move-json-file", rf.topicsFile, &ttm); err != nil {
		return err
	}
	if ttm.Version != 1 || len(ttm.Topics) == 0 {
		return fmt.Errorf("--topics-to-move-json-file %s: want version 1 and at least one topic", rf.topicsFile)
	}
	var topics []string
	for _, t := range ttm.Topics {
		if t.Topic == "" {
			return fmt.Errorf("--topics-to-move-json-file %s: an entry has no topic", rf.topicsFile)
		}
		topics = append(topics, t.Topic)
	}
	brokers, err := parseBrokerList(rf.brokerList)
	if err != nil {
		return fmt.Errorf("--broker-list: %w", err)
	}
	current, md, err := currentAssignment(in.ctx, adm, topics, nil)
	if err != nil {
		return err
	}
	for _, b := range brokers {
		if !slices.Contains(md.Brokers.NodeIDs(), b) {
			return fmt.Errorf("--broker-list: broker %d is not registered in the cluster", b)
		}
	}
	proposed, err := proposeAssignment(current, brokers)
	if err != nil {
		return err
	}
	if in.json {
		return writeJSON(in.stdout, map[string]any{"current": rawJSON(planJSON(current)), "proposed": rawJSON(planJSON(proposed))})
	}
	fmt.Fprintf(in.stdout, "Current partition replica assignment\n%s\n\nProposed partition reassignment configuration\n%s\n", planJSON(current), planJSON(proposed))
	return nil
}

// loadPlan reads --reassignment-json-file for --execute or --verify
// (mode), with the current assignment of the partitions it names.
func loadPlan(in *invocation, adm *kadm.Client, rf *reassignFlags, mode string) (plan reassignmentPlan, target, current map[string]map[int32][]int32, md kadm.Metadata, err error) {
	if rf.planFile == "" {
		return plan, nil, nil, md, fmt.Errorf("--%s needs --reassignment-json-file", mode)
	}
	if plan, err = readReassignmentPlan("reassignment-json-file", rf.planFile, true); err != nil {
		return plan, nil, nil, md, err
	}
	target = assignmentOf(plan)
	current, md, err = currentAssignment(in.ctx, adm, sortedKeys(target), target)
	return plan, target, current, md, err
}

// planPartitions is the set of partitions a plan names.
func planPartitions(p reassignmentPlan) kadm.TopicsSet {
	set := kadm.TopicsSet{}
	for _, a := range p.Partitions {
		set.Add(a.Topic, a.Partition)
	}
	return set
}

func reassignExecute(in *invocation, adm *kadm.Client, alt configAlterer, rf *reassignFlags) error {
	plan, target, current, md, err := loadPlan(in, adm, rf, "execute")
	if err != nil {
		return err
	}
	live := md.Brokers.NodeIDs()
	for _, a := range plan.Partitions {
		for _, b := range a.Replicas {
			if !slices.Contains(live, b) {
				return fmt.Errorf("%s-%d: broker %d is not registered in the cluster", a.Topic, a.Partition, b)
			}
		}
	}
	// As Kafka's tool: a running reassignment is not silently replaced.
	if !rf.additional {
		ongoing, err := adm.ListPartitionReassignments(in.ctx, planPartitions(plan))
		if err != nil {
			return fmt.Errorf("listing reassignments: %w", err)
		}
		if anyMoving(ongoing) {
			return errors.New("cannot execute because there is an existing partition reassignment; use --additional to start this one as well, or --cancel the other first")
		}
	}
	if !in.json {
		fmt.Fprintf(in.stdout, "Current partition replica assignment\n\n%s\n\nSave this to use as the --reassignment-json-file option during rollback\n", planJSON(current))
	}
	if rf.throttle >= 0 || rf.logDirThrottle >= 0 {
		if err := applyThrottles(in.ctx, alt, planThrottles(current, target), rf.throttle, rf.logDirThrottle); err != nil {
			return err
		}
		if !in.json {
			fmt.Fprintln(in.stdout, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
			if rf.throttle >= 0 {
				fmt.Fprintf(in.stdout, "The inter-broker throttle limit was set to %d B/s\n", rf.throttle)
			}
			if rf.logDirThrottle >= 0 {
				fmt.Fprintf(in.stdout, "The replica-alter-dir throttle limit was set to %d B/s\n", rf.logDirThrottle)
			}
		}
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, a := range plan.Partitions {
		req.Assign(a.Topic, a.Partition, a.Replicas)
	}
	resps, err := adm.AlterPartitionAssignments(in.ctx, req)
	if err != nil {
		return fmt.Errorf("reassigning: %w", err)
	}
	var failed []string
	for _, a := range plan.Partitions {
		if r, ok := resps[a.Topic][a.Partition]; ok && r.Err != nil {
			msg := r.Err.Error()
			if r.ErrMessage != "" {
				msg = r.ErrMessage
			}
			failed = append(failed, fmt.Sprintf("%s-%d: %s", a.Topic, a.Partition, msg))
		}
	}
	if in.json {
		if err := writeJSON(in.stdout, map[string]any{"current": rawJSON(planJSON(current)), "failed": failed, "throttle": rf.throttle}); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d reassignments failed to start; first: %s", len(failed), len(plan.Partitions), failed[0])
	}
	if !in.json {
		fmt.Fprintf(in.stdout, "Successfully started partition reassignments for %s\n", partitionNames(target))
	}
	return nil
}

func reassignVerify(in *invocation, adm *kadm.Client, alt configAlterer, rf *reassignFlags) error {
	plan, target, current, md, err := loadPlan(in, adm, rf, "verify")
	if err != nil {
		return err
	}
	ongoing, err := adm.ListPartitionReassignments(in.ctx, planPartitions(plan))
	if err != nil {
		return fmt.Errorf("listing reassignments: %w", err)
	}
	var states []partitionState
	done := true
	for _, t := range sortedKeys(target) {
		for _, p := range slices.Sorted(mapKeysOf(target[t])) {
			st := partitionState{Topic: t, Partition: p, Replicas: current[t][p], Target: target[t][p]}
			r, listed := ongoing[t][p]
			moving := listed && len(r.AddingReplicas)+len(r.RemovingReplicas) > 0
			switch {
			case moving:
				st.State, done = "in_progress", false
			case slices.Equal(current[t][p], target[t][p]):
				st.State = "completed"
			default:
				st.State = "different"
			}
			states = append(states, st)
		}
	}
	clearNow := done && !rf.preserveThrottles
	if !in.json {
		fmt.Fprintln(in.stdout, "Status of partition reassignment:")
		for _, s := range states {
			name := fmt.Sprintf("%s-%d", s.Topic, s.Partition)
			switch s.State {
			case "in_progress":
				fmt.Fprintf(in.stdout, "Reassignment of partition %s is still in progress.\n", name)
			case "completed":
				fmt.Fprintf(in.stdout, "Reassignment of partition %s is completed.\n", name)
			default:
				fmt.Fprintf(in.stdout, "There is no active reassignment of partition %s, but replica set is %s rather than %s.\n",
					name, joinBrokers(s.Replicas), joinBrokers(s.Target))
			}
		}
	}
	if clearNow {
		if err := clearAllThrottles(in, alt, md, sortedKeys(target)); err != nil {
			return err
		}
	}
	if in.json {
		return writeJSON(in.stdout, map[string]any{"partitions": states, "complete": done, "throttles_cleared": clearNow})
	}
	return nil
}

// clearAllThrottles removes the throttles from every broker of the cluster
// and from topics, reporting it as Kafka's tool does.
func clearAllThrottles(in *invocation, a configAlterer, md kadm.Metadata, topics []string) error {
	brokers := slices.Sorted(slices.Values(md.Brokers.NodeIDs()))
	// Kafka's tool deletes the rates on every broker; deleting only where
	// one is set leaves the same state and spares the other brokers a
	// config change.
	set, err := a.ThrottledBrokers(in.ctx, brokers)
	if err != nil {
		return err
	}
	if err := clearThrottles(in.ctx, a, set, topics); err != nil {
		return err
	}
	if !in.json {
		fmt.Fprintf(in.stdout, "Clearing broker-level throttles on brokers %s\n", joinBrokers(brokers))
		for _, t := range topics {
			fmt.Fprintf(in.stdout, "Clearing topic-level throttles on topic %s\n", t)
		}
	}
	return nil
}

func reassignCancel(in *invocation, adm *kadm.Client, alt configAlterer, rf *reassignFlags) error {
	plan, err := readReassignmentPlan("reassignment-json-file", rf.planFile, false)
	if err != nil {
		return err
	}
	if rf.topic != "" || len(rf.partitions) > 0 {
		return errors.New("--cancel takes --reassignment-json-file or --topic/--partition, not both")
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, a := range plan.Partitions {
		req.Assign(a.Topic, a.Partition, nil)
	}
	names := assignmentOf(plan)
	resps, err := adm.AlterPartitionAssignments(in.ctx, req)
	if err != nil {
		return fmt.Errorf("cancelling reassignments: %w", err)
	}
	var failed []string
	for _, a := range plan.Partitions {
		// Cancelling a partition that is not moving is not an error: the
		// plan may have finished already.
		if r, ok := resps[a.Topic][a.Partition]; ok && r.Err != nil && !errors.Is(r.Err, kerr.NoReassignmentInProgress) {
			failed = append(failed, fmt.Sprintf("%s-%d: %v", a.Topic, a.Partition, r.Err))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d cancellations failed; first: %s", len(failed), len(plan.Partitions), failed[0])
	}
	if !in.json {
		fmt.Fprintf(in.stdout, "Successfully cancelled partition reassignments for: %s\n", partitionNames(names))
	}
	cleared := false
	if !rf.preserveThrottles {
		md, err := adm.BrokerMetadata(in.ctx)
		if err != nil {
			return fmt.Errorf("describing the cluster: %w", err)
		}
		if err := clearAllThrottles(in, alt, md, sortedKeys(names)); err != nil {
			return err
		}
		cleared = true
	}
	if in.json {
		return writeJSON(in.stdout, map[string]any{"cancelled": partitionNames(names), "throttles_cleared": cleared})
	}
	return nil
}
