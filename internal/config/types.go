// Package config holds Kafka's broker, topic and group configuration as data: key
// names, types, defaults, validation, documentation and the broker/topic
// synonym rules that DescribeConfigs reports.
//
// Everything here is immutable after package initialisation, so all exported
// functions are safe for concurrent use. Parsed configs (*Broker, Topic) are
// values that callers must not mutate once shared.
//
// Names, types and defaults follow Apache Kafka (server/config/*,
// storage/.../log/LogConfig.java, ServerTopicConfigSynonyms.java). The only
// deliberate differences are Vltava's zero-config defaults, listed in
// VltavaDefaults.
package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Type is Kafka's ConfigDef.Type, numbered as the ConfigType field of
// DescribeConfigs v3+ (KIP-569).
type Type int8

// Kafka's config types, with the wire values of DescribeConfigs ConfigType.
const (
	Unknown  Type = 0
	Boolean  Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Class    Type = 8
	Password Type = 9
)

// String returns Kafka's upper-case name of the type (as printed in its docs).
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Short:
		return "SHORT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Class:
		return "CLASS"
	case Password:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// Source is Kafka's DescribeConfigs ConfigSource.
type Source int8

// Config sources with their wire values.
const (
	SourceUnknown                    Source = 0
	SourceDynamicTopicConfig         Source = 1
	SourceDynamicBrokerConfig        Source = 2
	SourceDynamicDefaultBrokerConfig Source = 3
	SourceStaticBrokerConfig         Source = 4
	SourceDefaultConfig              Source = 5
	SourceDynamicBrokerLoggerConfig  Source = 6
	SourceClientMetricsConfig        Source = 7
	// SourceGroupConfig is a group config override (KIP-848, Kafka 4.0).
	SourceGroupConfig Source = 8
)

// String returns Kafka's name of the source.
func (s Source) String() string {
	switch s {
	case SourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case SourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case SourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case SourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case SourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case SourceClientMetricsConfig:
		return "CLIENT_METRICS_CONFIG"
	case SourceGroupConfig:
		return "GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// Def describes one config key. Defs are built once at package init and never
// mutated; BrokerDefs and TopicDefs return copies.
type Def struct {
	Name string
	Type Type
	// Default is the default as Kafka prints it; meaningful only when
	// HasDefault (Kafka's null default has HasDefault=false).
	Default    string
	HasDefault bool
	// Doc is a one-line description.
	Doc       string
	Sensitive bool
	// ReadOnly is true for broker keys that cannot be altered dynamically
	// (not in Kafka's DynamicBrokerConfig.AllDynamicConfigs). Always false for
	// topic keys.
	ReadOnly bool
	// Validate checks a raw value (type and range/enum); nil error if valid.
	// Errors are *ValueError wrapping kerr.InvalidConfig.
	Validate func(v string) error
	// TopicSynonym is, for broker log configs, the topic-level config they
	// provide the cluster default for (log.retention.hours -> retention.ms).
	TopicSynonym string
	// Valid describes the allowed values in words ("[14,...]"), for docs.
	Valid string
	// VltavaOnly marks a key Apache Kafka does not have (observability.go).
	VltavaOnly bool

	rule rule
}

// ValueError reports an invalid config value. It unwraps to kerr.InvalidConfig
// so request handlers can map it to the wire error code with errors.As/Is.
type ValueError struct {
	Name   string
	Value  string
	Reason string // "must be an integer >= 14"
	// kafkaReason, when set, switches Error() to Kafka's ConfigException
	// wording, which is what clients see for topic configs.
	kafkaReason string
}

func (e *ValueError) Error() string {
	if e.kafkaReason != "" {
		return fmt.Sprintf("Invalid value %s for configuration %s: %s", e.Value, e.Name, e.kafkaReason)
	}
	return fmt.Sprintf("invalid value %q for %s: %s", e.Value, e.Name, e.Reason)
}

// Unwrap returns kerr.InvalidConfig.
func (e *ValueError) Unwrap() error { return kerr.InvalidConfig }

// rule is the machine-readable form of a key's constraint; it drives both
// Validate and the human wording of errors and docs.
type rule struct {
	hasMin, hasMax bool
	min, max       int64   // for Int, Short, Long
	fmin, fmax     float64 // for Double
	oneOf          []string
	foldCase       bool     // oneOf ignores case (Kafka's CaseInsensitiveValidString)
	listOf         []string // every list element must be one of these
	allowMinusOne  bool     // compression.gzip.level: -1 or [min,max]
	nonEmptyList   bool
	custom         func(v string) string // returns a reason, "" if valid
	customDesc     string
}

// option adjusts a Def while building the tables.
type option func(*Def)

func atLeast(n int64) option {
	return func(d *Def) { d.rule.hasMin, d.rule.min, d.rule.fmin = true, n, float64(n) }
}

func between(lo, hi int64) option {
	return func(d *Def) {
		d.rule.hasMin, d.rule.min, d.rule.fmin = true, lo, float64(lo)
		d.rule.hasMax, d.rule.max, d.rule.fmax = true, hi, float64(hi)
	}
}

func oneOf(vals ...string) option { return func(d *Def) { d.rule.oneOf = vals } }

// oneOfFold is oneOf ignoring case, as Kafka's CaseInsensitiveValidString.
func oneOfFold(vals ...string) option {
	return func(d *Def) { d.rule.oneOf, d.rule.foldCase = vals, true }
}

func listOf(vals ...string) option { return func(d *Def) { d.rule.listOf = vals } }

func nonEmpty() option { return func(d *Def) { d.rule.nonEmptyList = true } }

func orMinusOne() option { return func(d *Def) { d.rule.allowMinusOne = true } }

func custom(desc string, f func(string) string) option {
	return func(d *Def) { d.rule.custom, d.rule.customDesc = f, desc }
}

// noDefault marks a key whose Kafka default is null.
const noDefault = "\x00null"

func def(name string, t Type, dflt, doc string, opts ...option) Def {
	d := Def{Name: name, Type: t, Doc: doc}
	if dflt != noDefault {
		d.Default, d.HasDefault = dflt, true
	}
	if t == Password {
		d.Sensitive = true
	}
	for _, o := range opts {
		o(&d)
	}
	d.Valid = d.rule.describe(t)
	r, name2, typ := d.rule, d.Name, d.Type
	d.Validate = func(v string) error { return checkValue(name2, typ, r, v, false) }
	return d
}

// describe renders the rule the way Kafka's docs print "Valid Values".
func (r rule) describe(t Type) string {
	switch {
	case r.custom != nil:
		return r.customDesc
	case len(r.oneOf) > 0:
		return "[" + strings.Join(r.oneOf, ", ") + "]"
	case len(r.listOf) > 0:
		return "[" + strings.Join(r.listOf, ", ") + "]"
	case r.allowMinusOne:
		return fmt.Sprintf("[%d,...,%d] or -1", r.min, r.max)
	case r.hasMin && r.hasMax && t == Double:
		return fmt.Sprintf("[%s,...,%s]", javaDouble(r.fmin), javaDouble(r.fmax))
	case r.hasMin && r.hasMax:
		return fmt.Sprintf("[%d,...,%d]", r.min, r.max)
	case r.hasMin && t == Double:
		return fmt.Sprintf("[%s,...]", javaDouble(r.fmin))
	case r.hasMin:
		return fmt.Sprintf("[%d,...]", r.min)
	}
	return ""
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func sortStrings(s []string) { sort.Strings(s) }
