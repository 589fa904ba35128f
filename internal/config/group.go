package config

import (
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Group (dynamic) config keys of consumer groups (KIP-848, Kafka's
// GroupConfig): set per group with IncrementalAlterConfigs / AlterConfigs on
// resource type GROUP, they override the broker's group.consumer.* value for
// that group's members.
const (
	GroupConsumerSessionTimeoutKey    = "consumer.session.timeout.ms"
	GroupConsumerHeartbeatIntervalKey = "consumer.heartbeat.interval.ms"
)

// groupDefaultFrom names, for each group key, the broker key that supplies
// its default (GroupCoordinatorConfig.extractGroupConfigMap), with the broker
// keys bounding it.
var groupDefaultFrom = map[string]struct{ dflt, min, max string }{
	GroupConsumerSessionTimeoutKey:    {"group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	GroupConsumerHeartbeatIntervalKey: {"group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
}

// groupDefList is Kafka 4.0's GroupConfig definition list for consumer
// groups. Its share.* keys (KIP-932 share groups) are not defined here:
// ValidateGroupConfigs refuses them with INVALID_CONFIG.
var groupDefList = []Def{
	def(GroupConsumerSessionTimeoutKey, Int, "45000", "Session timeout of this consumer group's members: one not heard from for this long is fenced. Bounded by group.consumer.min/max.session.timeout.ms.", atLeast(1)),
	def(GroupConsumerHeartbeatIntervalKey, Int, "5000", "Heartbeat interval given to this consumer group's members. Bounded by group.consumer.min/max.heartbeat.interval.ms.", atLeast(1)),
}

var (
	groupDefs     = map[string]*Def{}
	groupDefNames []string
)

func init() {
	for i := range groupDefList {
		d := &groupDefList[i]
		r, name, typ := d.rule, d.Name, d.Type
		d.Validate = func(v string) error { return checkValue(name, typ, r, v, true) }
		groupDefs[d.Name] = d
		groupDefNames = append(groupDefNames, d.Name)
	}
	sort.Strings(groupDefNames)
}

// GroupDefs returns every group config key, sorted by name.
func GroupDefs() []Def {
	out := make([]Def, 0, len(groupDefNames))
	for _, n := range groupDefNames {
		out = append(out, *groupDefs[n])
	}
	return out
}

// GroupDef looks up one group config key.
func GroupDef(name string) (Def, bool) {
	d, ok := groupDefs[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// GroupServerDefault returns the broker key that provides a group key's
// default ("consumer.session.timeout.ms" -> "group.consumer.session.timeout.ms").
func GroupServerDefault(groupKey string) (string, bool) {
	s, ok := groupDefaultFrom[groupKey]
	return s.dflt, ok
}

// GroupSupport returns what Vltava does with a group key: both are honoured
// by the group coordinator.
func GroupSupport(name string) Support {
	if _, ok := groupDefs[name]; !ok {
		return Support{}
	}
	return Support{Status: Honoured}
}

// GroupConfigValues returns the effective value of every group key for a
// group with the given overrides: the override, else the broker's
// group.consumer.* value.
func GroupConfigValues(b *Broker, overrides map[string]string) map[string]string {
	out := make(map[string]string, len(groupDefNames))
	for _, name := range groupDefNames {
		if v, ok := overrides[name]; ok {
			out[name] = strings.TrimSpace(v)
			continue
		}
		out[name] = brokerValue(b, groupDefaultFrom[name].dflt)
	}
	return out
}

func brokerValue(b *Broker, key string) string {
	if b != nil {
		if v, _, ok := b.Value(key); ok {
			return strings.TrimSpace(v)
		}
	}
	return brokerDefs[key].Default
}

// ValidateGroupConfigs checks a group's complete set of overrides as Kafka's
// GroupConfig.validate does: unknown keys (the share.* keys included) and
// bad values are INVALID_CONFIG, and the resulting values must lie within
// the broker's group.consumer.min/max bounds, with the heartbeat interval
// below the session timeout; the messages are Kafka's.
func ValidateGroupConfigs(b *Broker, overrides map[string]string) error {
	for _, k := range sortedNames(overrides) {
		d, ok := groupDefs[k]
		if !ok && strings.HasPrefix(k, "share.") {
			return &Error{Code: kerr.InvalidConfig, Message: "Group config " + k + " is a share group config: share groups (KIP-932) are not supported"}
		}
		if !ok {
			return &Error{Code: kerr.InvalidConfig, Message: "Unknown group config name: " + k}
		}
		if err := d.Validate(overrides[k]); err != nil {
			return err
		}
	}
	values := GroupConfigValues(b, overrides)
	num := func(v string) int64 {
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	for _, name := range []string{GroupConsumerHeartbeatIntervalKey, GroupConsumerSessionTimeoutKey} {
		bounds := groupDefaultFrom[name]
		v := num(values[name])
		if v < num(brokerValue(b, bounds.min)) {
			return &Error{Code: kerr.InvalidConfig, Message: name + " must be greater than or equal to " + bounds.min}
		}
		if v > num(brokerValue(b, bounds.max)) {
			return &Error{Code: kerr.InvalidConfig, Message: name + " must be less than or equal to " + bounds.max}
		}
	}
	if num(values[GroupConsumerSessionTimeoutKey]) <= num(values[GroupConsumerHeartbeatIntervalKey]) {
		return &Error{Code: kerr.InvalidConfig, Message: GroupConsumerSessionTimeoutKey + " must be greater than " + GroupConsumerHeartbeatIntervalKey}
	}
	return nil
}

// DescribeGroup returns DescribeConfigs entries for every group key of a
// group, sorted by name, as Kafka's ConfigHelper describes a GROUP
// resource: an override is GROUP_CONFIG, anything else DEFAULT_CONFIG with
// the broker's group.consumer.* value.
func DescribeGroup(b *Broker, overrides map[string]string) []Entry {
	values := GroupConfigValues(b, overrides)
	out := make([]Entry, 0, len(groupDefNames))
	for _, name := range groupDefNames {
		d := groupDefs[name]
		e := Entry{Name: name, Value: values[name], HasValue: true, Type: d.Type, Doc: d.Doc, Source: SourceDefaultConfig}
		if _, ok := overrides[name]; ok {
			e.Source = SourceGroupConfig
		}
		e.Synonyms = []Synonym{{Name: name, Value: values[name], HasValue: true, Source: e.Source}}
		out = append(out, e)
	}
	return out
}
