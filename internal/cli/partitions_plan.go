package cli

// The JSON plans of kafka-reassign-partitions.sh and the replication
// throttles it sets around a reassignment.

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// reassignmentPlan is Kafka's reassignment JSON:
// {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..],"log_dirs":["any",..]}]}.
type reassignmentPlan struct {
	Version    int                 `json:"version"`
	Partitions []plannedAssignment `json:"partitions"`
}

type plannedAssignment struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// topicsToMove is --generate's --topics-to-move-json-file:
// {"topics":[{"topic":"foo"}],"version":1}.
type topicsToMove struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

// Kafka's tool names these throttle configs (KIP-73).
const (
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
	logDirsThrottledRate      = "replica.alter.log.dirs.io.max.bytes.per.second"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
)

func readJSONFile(flag, path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--%s: %w", flag, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return nil
}

// readReassignmentPlan reads and checks a plan: known version, every
// partition once, replicas present without duplicates, and log_dirs (when
// given) "any" for each replica, the only placement Vltava supports.
func readReassignmentPlan(flag, path string, needReplicas bool) (reassignmentPlan, error) {
	var p reassignmentPlan
	if err := readJSONFile(flag, path, &p); err != nil {
		return p, err
	}
	if p.Version != 1 {
		return p, fmt.Errorf("--%s %s: version %d, want 1", flag, path, p.Version)
	}
	if len(p.Partitions) == 0 {
		return p, fmt.Errorf("--%s %s: no partitions", flag, path)
	}
	seen := map[string]bool{}
	for _, a := range p.Partitions {
		name := fmt.Sprintf("%s-%d", a.Topic, a.Partition)
		if a.Topic == "" || a.Partition < 0 {
			return p, fmt.Errorf("--%s %s: an entry lacks topic or partition", flag, path)
		}
		if seen[name] {
			return p, fmt.Errorf("--%s %s: %s appears twice", flag, path, name)
		}
		seen[name] = true
		if !needReplicas {
			continue
		}
		if len(a.Replicas) == 0 {
			return p, fmt.Errorf("--%s %s: %s has no replicas", flag, path, name)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(a.Replicas)))) != len(a.Replicas) {
			return p, fmt.Errorf("--%s %s: %s lists a replica twice", flag, path, name)
		}
		if len(a.LogDirs) > 0 {
			if len(a.LogDirs) != len(a.Replicas) {
				return p, fmt.Errorf("--%s %s: %s has %d log_dirs for %d replicas", flag, path, name, len(a.LogDirs), len(a.Replicas))
			}
			for _, d := range a.LogDirs {
				if d != "any" {
					return p, fmt.Errorf("--%s %s: %s: log_dirs %q is not supported, only \"any\"", flag, path, name, d)
				}
			}
		}
	}
	return p, nil
}

// planJSON renders a plan on one line as Kafka's tool prints it, with
// "any" log dirs.
func planJSON(assign map[string]map[int32][]int32) string {
	p := reassignmentPlan{Version: 1, Partitions: []plannedAssignment{}}
	for _, t := range sortedKeys(assign) {
		parts := assign[t]
		for _, n := range slices.Sorted(mapKeysOf(parts)) {
			dirs := make([]string, len(parts[n]))
			for i := range dirs {
				dirs[i] = "any"
			}
			p.Partitions = append(p.Partitions, plannedAssignment{Topic: t, Partition: n, Replicas: parts[n], LogDirs: dirs})
		}
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// proposeAssignment spreads each topic's partitions over brokers keeping
// their replication factors, in the manner of Kafka's rack-unaware
// assignReplicasToBrokers: partition p's first replica is broker
// (p+start) mod n, the followers follow at a shift that grows every n
// partitions so replicas do not pile up on neighbours. Kafka picks start
// and the initial shift at random; they are 0 here so that the proposal is
// reproducible.
func proposeAssignment(current map[string]map[int32][]int32, brokers []int32) (map[string]map[int32][]int32, error) {
	brokers = slices.Sorted(slices.Values(brokers))
	n := len(brokers)
	out := map[string]map[int32][]int32{}
	for _, t := range sortedKeys(current) {
		out[t] = map[int32][]int32{}
		shift := 0
		for _, p := range slices.Sorted(mapKeysOf(current[t])) {
			rf := len(current[t][p])
			if rf > n {
				return nil, fmt.Errorf("topic %q partition %d has %d replicas but --broker-list names %d brokers", t, p, rf, n)
			}
			if p > 0 && int(p)%n == 0 {
				shift++
			}
			first := int(p) % n
			replicas := []int32{brokers[first]}
			for j := 0; j < rf-1; j++ {
				replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
			}
			out[t][p] = replicas
		}
	}
	return out, nil
}

// throttles are the configs a throttled reassignment sets.
type throttles struct {
	brokers []int32              // brokers that get the rate configs
	topics  map[string][2]string // topic -> leader, follower throttled replicas
}

// planThrottles computes Kafka's throttles for moving from current to
// target: every broker holding or receiving a replica of a moved
// partition gets the rates; each moved partition throttles its current
// replicas as leaders ("p:b") and its new replicas as followers.
func planThrottles(current, target map[string]map[int32][]int32) throttles {
	th := throttles{topics: map[string][2]string{}}
	brokerSet := map[int32]bool{}
	for _, t := range sortedKeys(target) {
		var leaders, followers []string
		for _, p := range slices.Sorted(mapKeysOf(target[t])) {
			cur, tgt := current[t][p], target[t][p]
			for _, b := range cur {
				brokerSet[b] = true
			}
			for _, b := range tgt {
				brokerSet[b] = true
			}
			if slices.Equal(cur, tgt) {
				continue
			}
			for _, b := range cur {
				leaders = append(leaders, fmt.Sprintf("%d:%d", p, b))
			}
			for _, b := range tgt {
				if !slices.Contains(cur, b) {
					followers = append(followers, fmt.Sprintf("%d:%d", p, b))
				}
			}
		}
		if len(leaders)+len(followers) > 0 {
			th.topics[t] = [2]string{strings.Join(leaders, ","), strings.Join(followers, ",")}
		}
	}
	th.brokers = slices.Sorted(mapKeysOf(brokerSet))
	return th
}

// assignmentOf groups a plan by topic and partition.
func assignmentOf(p reassignmentPlan) map[string]map[int32][]int32 {
	out := map[string]map[int32][]int32{}
	for _, a := range p.Partitions {
		if out[a.Topic] == nil {
			out[a.Topic] = map[int32][]int32{}
		}
		out[a.Topic][a.Partition] = a.Replicas
	}
	return out
}

func joinBrokers(ids []int32) string {
	parts := make([]string, len(ids))
	for i, b := range ids {
		parts[i] = strconv.Itoa(int(b))
	}
	return strings.Join(parts, ",")
}

func partitionNames(assign map[string]map[int32][]int32) string {
	var names []string
	for _, t := range sortedKeys(assign) {
		ps := slices.Sorted(mapKeysOf(assign[t]))
		for _, p := range ps {
			names = append(names, fmt.Sprintf("%s-%d", t, p))
		}
	}
	return strings.Join(names, ",")
}
