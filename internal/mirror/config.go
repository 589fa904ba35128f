package mirror

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// Config is a parsed mm2.properties: the clusters and the flows between
// them, with Kafka's MirrorMakerConfig names.
type Config struct {
	Clusters map[string]Cluster
	// Flows are the enabled source->target pairs, sorted.
	Flows []Flow
	// HeartbeatOnly are the pairs not enabled that still emit heartbeats
	// (Kafka runs the heartbeat connector for every pair, so that the
	// other direction has a heartbeats topic to mirror).
	HeartbeatOnly []Flow
}

// Cluster is one cluster's client settings (<alias>.bootstrap.servers,
// <alias>.security.protocol, <alias>.ssl.*, <alias>.sasl.*).
type Cluster struct {
	Alias     string
	Bootstrap []string
	Security  *clientauth.Security
}

// Flow is one source->target replication with its settings: a key given as
// "<source>-><target>.<key>" wins over the top-level key.
type Flow struct {
	Source, Target string
	Policy         ReplicationPolicy

	Topics, TopicsExclude, Groups, GroupsExclude []*regexp.Regexp
	ConfigExclude                                []*regexp.Regexp

	ReplicationFactor            int16 // -1: the target broker's default
	OffsetSyncsReplicationFactor int16
	CheckpointsReplicationFactor int16
	HeartbeatsReplicationFactor  int16
	OffsetsReplicationFactor     int16 // offset.storage.replication.factor

	SyncTopicConfigs         bool
	SyncTopicConfigsInterval time.Duration
	SyncTopicACLs            bool
	SyncTopicACLsInterval    time.Duration
	EmitCheckpoints          bool
	EmitCheckpointsInterval  time.Duration
	SyncGroupOffsets         bool
	SyncGroupOffsetsInterval time.Duration
	EmitHeartbeats           bool
	EmitHeartbeatsInterval   time.Duration
	RefreshTopics            bool
	RefreshTopicsInterval    time.Duration
	RefreshGroups            bool
	RefreshGroupsInterval    time.Duration
	// OffsetSyncsOnTarget: offset-syncs.topic.location=target.
	OffsetSyncsOnTarget bool
	OffsetLagMax        int64
	ExactlyOnce         bool // exactly.once.source.support=enabled
	OffsetFlushInterval time.Duration
	// PreserveOffsets (vltava.preserve.offsets): every record lands at its
	// source offset on the target, whose remote topics are created with the
	// topic config of the same name (Vltava targets only).
	PreserveOffsets bool
}

// Name is "A->B".
func (f Flow) Name() string { return f.Source + "->" + f.Target }

// OffsetsTopic is the topic on the target holding the flow's source
// offsets (dedicated mode's offset.storage.topic).
func (f Flow) OffsetsTopic() string { return "mm2-offsets." + f.Source + ".internal" }

// setting is one flow-level key with its default.
type setting struct {
	def   string
	apply func(f *Flow, v string) error
}

// Kafka's defaults (MirrorSourceConfig, MirrorCheckpointConfig,
// MirrorHeartbeatConfig, DefaultConfigPropertyFilter, DefaultTopicFilter,
// DefaultGroupFilter).
const (
	defaultTopicsExclude = `.*[\-\.]internal, .*\.replica, __.*`
	defaultGroupsExclude = `console-consumer-.*, connect-.*, __.*`
	defaultConfigExclude = `follower\.replication\.throttled\.replicas, leader\.replication\.throttled\.replicas, message\.timestamp\.difference\.max\.ms, message\.timestamp\.type, unclean\.leader\.election\.enable, min\.insync\.replicas`
)

var flowSettings = map[string]setting{
	"topics":                                              {".*", regexes(func(f *Flow) *[]*regexp.Regexp { return &f.Topics })},
	"topics.exclude":                                      {defaultTopicsExclude, regexes(func(f *Flow) *[]*regexp.Regexp { return &f.TopicsExclude })},
	"groups":                                              {".*", regexes(func(f *Flow) *[]*regexp.Regexp { return &f.Groups })},
	"groups.exclude":                                      {defaultGroupsExclude, regexes(func(f *Flow) *[]*regexp.Regexp { return &f.GroupsExclude })},
	"config.properties.exclude":                           {defaultConfigExclude, regexes(func(f *Flow) *[]*regexp.Regexp { return &f.ConfigExclude })},
	"replication.factor":                                  {"2", replicas(func(f *Flow) *int16 { return &f.ReplicationFactor })},
	"offset-syncs.topic.replication.factor":               {"3", replicas(func(f *Flow) *int16 { return &f.OffsetSyncsReplicationFactor })},
	"checkpoints.topic.replication.factor":                {"3", replicas(func(f *Flow) *int16 { return &f.CheckpointsReplicationFactor })},
	"heartbeats.topic.replication.factor":                 {"3", replicas(func(f *Flow) *int16 { return &f.HeartbeatsReplicationFactor })},
	"offset.storage.replication.factor":                   {"3", replicas(func(f *Flow) *int16 { return &f.OffsetsReplicationFactor })},
	"sync.topic.configs.enabled":                          {"true", boolean(func(f *Flow) *bool { return &f.SyncTopicConfigs })},
	"sync.topic.configs.interval.seconds":                 {"600", seconds(func(f *Flow) *time.Duration { return &f.SyncTopicConfigsInterval })},
	"sync.topic.acls.enabled":                             {"true", boolean(func(f *Flow) *bool { return &f.SyncTopicACLs })},
	"sync.topic.acls.interval.seconds":                    {"600", seconds(func(f *Flow) *time.Duration { return &f.SyncTopicACLsInterval })},
	"emit.checkpoints.enabled":                            {"true", boolean(func(f *Flow) *bool { return &f.EmitCheckpoints })},
	"emit.checkpoints.interval.seconds":                   {"60", seconds(func(f *Flow) *time.Duration { return &f.EmitCheckpointsInterval })},
	"sync.group.offsets.enabled":                          {"false", boolean(func(f *Flow) *bool { return &f.SyncGroupOffsets })},
	"sync.group.offsets.interval.seconds":                 {"60", seconds(func(f *Flow) *time.Duration { return &f.SyncGroupOffsetsInterval })},
	"emit.heartbeats.enabled":                             {"true", boolean(func(f *Flow) *bool { return &f.EmitHeartbeats })},
	"emit.heartbeats.interval.seconds":                    {"1", seconds(func(f *Flow) *time.Duration { return &f.EmitHeartbeatsInterval })},
	"refresh.topics.enabled":                              {"true", boolean(func(f *Flow) *bool { return &f.RefreshTopics })},
	"refresh.topics.interval.seconds":                     {"600", seconds(func(f *Flow) *time.Duration { return &f.RefreshTopicsInterval })},
	"refresh.groups.enabled":                              {"true", boolean(func(f *Flow) *bool { return &f.RefreshGroups })},
	"refresh.groups.interval.seconds":                     {"600", seconds(func(f *Flow) *time.Duration { return &f.RefreshGroupsInterval })},
	"offset.lag.max":                                      {"100", int64Of(func(f *Flow) *int64 { return &f.OffsetLagMax })},
	"offset.flush.interval.ms":                            {"60000", millis(func(f *Flow) *time.Duration { return &f.OffsetFlushInterval })},
	"offset-syncs.topic.location":                         {"source", location},
	"exactly.once.source.support":                         {"disabled", exactlyOnce},
	"vltava.preserve.offsets":                             {"false", boolean(func(f *Flow) *bool { return &f.PreserveOffsets })},
	"tasks.max":                                           {"1", onlyOne},
	"replication.policy.class":                            {DefaultPolicyClass, nil},
	"replication.policy.separator":                        {".", nil},
	"topics.blacklist":                                    {"", nil}, // deprecated alias, mapped below
	"groups.blacklist":                                    {"", nil},
	"dedicated.mode.enable.internal.rest":                 {"false", mustBeFalse},
	"emit.offset-syncs.enabled":                           {"true", mustBeTrue},
	"replication.policy.internal.topic.separator.enabled": {"true", mustBeTrue},
}

// clusterKeys are the client keys accepted under "<alias>." (and at the top
// level, where they apply to every cluster).
func isClientKey(k string) bool {
	switch k {
	case "security.protocol", "sasl.mechanism", "sasl.jaas.config", "client.id":
		return true
	}
	for _, t := range tlsconf.Keys {
		if k == t && k != "ssl.client.auth" && k != "ssl.principal.mapping.rules" {
			return true
		}
	}
	return false
}

// Parse reads an mm2.properties. Every key is either honoured or refused
// by name; an invalid regex or value is an error naming its key.
func Parse(props map[string]string) (*Config, error) {
	aliases := splitList(props["clusters"])
	if len(aliases) == 0 {
		return nil, fmt.Errorf("clusters: at least one cluster alias is required")
	}
	known := map[string]bool{}
	for _, a := range aliases {
		if strings.ContainsAny(a, ">. ") || a == "" {
			return nil, fmt.Errorf("clusters: invalid alias %q", a)
		}
		known[a] = true
	}
	// Classify every key: top-level, cluster-prefixed or flow-prefixed.
	for k := range props {
		if k == "clusters" {
			continue
		}
		if _, ok := flowSettings[k]; ok || isClientKey(k) {
			continue
		}
		if src, rest, ok := strings.Cut(k, "->"); ok && known[src] {
			tgt, key, ok := strings.Cut(rest, ".")
			if !ok || !known[tgt] {
				return nil, fmt.Errorf("%s: unknown cluster pair", k)
			}
			if _, ok := flowSettings[key]; ok || key == "enabled" {
				continue
			}
			return nil, fmt.Errorf("%s: unsupported configuration %q", k, key)
		}
		if a, key, ok := strings.Cut(k, "."); ok && known[a] {
			if key == "bootstrap.servers" || isClientKey(key) {
				continue
			}
			return nil, fmt.Errorf("%s: unsupported client configuration %q", k, key)
		}
		return nil, fmt.Errorf("%s: unsupported configuration", k)
	}
	cfg := &Config{Clusters: map[string]Cluster{}}
	for _, a := range aliases {
		boot := splitList(props[a+".bootstrap.servers"])
		if len(boot) == 0 {
			return nil, fmt.Errorf("%s.bootstrap.servers is required", a)
		}
		lookup := func(k string) (string, bool) {
			if v, ok := props[a+"."+k]; ok {
				return v, true
			}
			v, ok := props[k]
			return v, ok
		}
		sec, err := clientauth.New(lookup, "", "")
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", a, err)
		}
		cfg.Clusters[a] = Cluster{Alias: a, Bootstrap: boot, Security: sec}
	}
	for _, src := range aliases {
		for _, tgt := range aliases {
			if src == tgt {
				continue
			}
			f, err := parseFlow(props, src, tgt)
			if err != nil {
				return nil, err
			}
			enabled, err := flowValue(props, src, tgt, "enabled", "false")
			if err != nil {
				return nil, err
			}
			on, err := strconv.ParseBool(strings.TrimSpace(enabled))
			if err != nil {
				return nil, fmt.Errorf("%s->%s.enabled: %q is not true or false", src, tgt, enabled)
			}
			if on {
				cfg.Flows = append(cfg.Flows, f)
			} else if f.EmitHeartbeats {
				cfg.HeartbeatOnly = append(cfg.HeartbeatOnly, f)
			}
		}
	}
	sort.Slice(cfg.Flows, func(i, j int) bool { return cfg.Flows[i].Name() < cfg.Flows[j].Name() })
	return cfg, nil
}

func flowValue(props map[string]string, src, tgt, key, def string) (string, error) {
	if v, ok := props[src+"->"+tgt+"."+key]; ok {
		return v, nil
	}
	if v, ok := props[key]; ok {
		return v, nil
	}
	return def, nil
}

func parseFlow(props map[string]string, src, tgt string) (Flow, error) {
	f := Flow{Source: src, Target: tgt}
	for key, s := range flowSettings {
		if s.apply == nil {
			continue
		}
		v, _ := flowValue(props, src, tgt, key, s.def)
		// The deprecated blacklist names still work when the new one is unset.
		if key == "topics.exclude" || key == "groups.exclude" {
			old := strings.TrimSuffix(key, ".exclude") + ".blacklist"
			if _, set := props[src+"->"+tgt+"."+key]; !set {
				if _, set := props[key]; !set {
					if b, _ := flowValue(props, src, tgt, old, ""); b != "" {
						v = b
					}
				}
			}
		}
		if err := s.apply(&f, strings.TrimSpace(v)); err != nil {
			return Flow{}, fmt.Errorf("%s->%s: %s: %w", src, tgt, key, err)
		}
	}
	class, _ := flowValue(props, src, tgt, "replication.policy.class", DefaultPolicyClass)
	sep, _ := flowValue(props, src, tgt, "replication.policy.separator", ".")
	p, err := NewPolicy(strings.TrimSpace(class), strings.TrimSpace(sep), src)
	if err != nil {
		return Flow{}, err
	}
	f.Policy = p
	if f.PreserveOffsets && f.ExactlyOnce {
		return Flow{}, fmt.Errorf("%s->%s: vltava.preserve.offsets: an offset-preserving flow is exactly-once by itself (it resumes at the target's end offsets); leave exactly.once.source.support disabled", src, tgt)
	}
	return f, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func regexes(field func(*Flow) *[]*regexp.Regexp) func(*Flow, string) error {
	return func(f *Flow, v string) error {
		var rs []*regexp.Regexp
		for _, p := range splitList(v) {
			r, err := regexp.Compile("^(?:" + p + ")$")
			if err != nil {
				return fmt.Errorf("invalid regex %q: %v", p, err)
			}
			rs = append(rs, r)
		}
		*field(f) = rs
		return nil
	}
}

func replicas(field func(*Flow) *int16) func(*Flow, string) error {
	return func(f *Flow, v string) error {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || (n < 1 && n != -1) {
			return fmt.Errorf("%q is not a replication factor (a positive number or -1)", v)
		}
		*field(f) = int16(n)
		return nil
	}
}

func boolean(field func(*Flow) *bool) func(*Flow, string) error {
	return func(f *Flow, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		*field(f) = b
		return nil
	}
}

func seconds(field func(*Flow) *time.Duration) func(*Flow, string) error {
	return func(f *Flow, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a number of seconds", v)
		}
		*field(f) = time.Duration(n) * time.Second
		return nil
	}
}

func millis(field func(*Flow) *time.Duration) func(*Flow, string) error {
	return func(f *Flow, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive number of milliseconds", v)
		}
		*field(f) = time.Duration(n) * time.Millisecond
		return nil
	}
}

func int64Of(field func(*Flow) *int64) func(*Flow, string) error {
	return func(f *Flow, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a non-negative number", v)
		}
		*field(f) = n
		return nil
	}
}

func location(f *Flow, v string) error {
	switch strings.ToLower(v) {
	case "source":
		f.OffsetSyncsOnTarget = false
	case "target":
		f.OffsetSyncsOnTarget = true
	default:
		return fmt.Errorf("%q is not source or target", v)
	}
	return nil
}

func exactlyOnce(f *Flow, v string) error {
	switch strings.ToLower(v) {
	case "disabled":
		f.ExactlyOnce = false
	case "enabled":
		f.ExactlyOnce = true
	default:
		return fmt.Errorf("%q is not enabled or disabled", v)
	}
	return nil
}

// onlyOne takes tasks.max: a flow runs as one task in this process, so a
// larger count, which Kafka would split the partitions over, is refused
// rather than ignored.
func onlyOne(_ *Flow, v string) error {
	if n, err := strconv.Atoi(v); err != nil || n != 1 {
		return fmt.Errorf("%q: only 1 is supported (a flow runs as one task)", v)
	}
	return nil
}

// mustBeFalse takes dedicated.mode.enable.internal.rest: there is no REST
// server between mirror processes.
func mustBeFalse(_ *Flow, v string) error {
	if b, err := strconv.ParseBool(v); err != nil || b {
		return fmt.Errorf("only false is supported")
	}
	return nil
}

func mustBeTrue(_ *Flow, v string) error {
	if b, err := strconv.ParseBool(v); err != nil || !b {
		return fmt.Errorf("only true is supported")
	}
	return nil
}

// Mirrored reports whether the flow replicates topic.
func (f Flow) Mirrored(topic string) bool {
	if IsInternalTopic(topic) || IsCycle(f.Policy, topic, f.Target) {
		return false
	}
	return matchAny(f.Topics, topic) && !matchAny(f.TopicsExclude, topic)
}

// GroupMirrored reports whether the flow checkpoints group.
func (f Flow) GroupMirrored(group string) bool {
	return matchAny(f.Groups, group) && !matchAny(f.GroupsExclude, group)
}

// ConfigMirrored reports whether a topic config key is copied.
func (f Flow) ConfigMirrored(key string) bool { return !matchAny(f.ConfigExclude, key) }

func matchAny(rs []*regexp.Regexp, s string) bool {
	for _, r := range rs {
		if r.MatchString(s) {
			return true
		}
	}
	return false
}
