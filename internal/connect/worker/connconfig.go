package worker

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vltava/vltava/connect"
)

// Connector config keys, as Kafka Connect's ConnectorConfig, SinkConnectorConfig
// and SourceConnectorConfig.
const (
	KeyName              = "name"
	KeyConnectorClass    = "connector.class"
	KeyTasksMax          = "tasks.max"
	KeyTasksMaxEnforce   = "tasks.max.enforce"
	KeyTransforms        = "transforms"
	KeyPredicates        = "predicates"
	KeyConfigReload      = "config.action.reload"
	KeyRetryTimeout      = "errors.retry.timeout"
	KeyRetryDelayMax     = "errors.retry.delay.max.ms"
	KeyTolerance         = "errors.tolerance"
	KeyErrorsLog         = "errors.log.enable"
	KeyErrorsLogMessages = "errors.log.include.messages"
	KeyTopics            = "topics"
	KeyTopicsRegex       = "topics.regex"
	KeyDLQTopic          = "errors.deadletterqueue.topic.name"
	KeyDLQRF             = "errors.deadletterqueue.topic.replication.factor"
	KeyDLQHeaders        = "errors.deadletterqueue.context.headers.enable"
	KeyExactlyOnce       = "exactly.once.support"
	KeyTxnBoundary       = "transaction.boundary"
	KeyTxnInterval       = "transaction.boundary.interval.ms"
	KeyOffsetsTopic      = "offsets.storage.topic"
	KeyTopicCreation     = "topic.creation.groups"
)

// The groups of the connector config, in Kafka's order (validate output).
const (
	GroupCommon      = "Common"
	GroupTransforms  = "Transforms"
	GroupPredicates  = "Predicates"
	GroupErrors      = "Error Handling"
	GroupExactlyOnce = "Exactly Once Support"
)

func commonDef() *connect.ConfigDef {
	d := connect.NewConfigDef()
	o := 0
	def := func(k connect.ConfigKey) {
		o++
		k.Order = o
		if k.Group == "" {
			k.Group = GroupCommon
		}
		d.Define(k)
	}
	def(connect.ConfigKey{Name: KeyName, Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "Globally unique name to use for this connector.", Width: connect.WidthMedium, Display: "Connector name", Check: nonEmpty})
	def(connect.ConfigKey{Name: KeyConnectorClass, Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "Name or alias of the class for this connector.", Width: connect.WidthLong, Display: "Connector class"})
	def(connect.ConfigKey{Name: KeyTasksMax, Type: connect.TypeInt, Default: int32(1), Importance: connect.High, Doc: "Maximum number of tasks to use for this connector.", Width: connect.WidthShort, Display: "Tasks max", Check: connect.InRange(1, 1<<31-1)})
	def(connect.ConfigKey{Name: KeyTasksMaxEnforce, Type: connect.TypeBoolean, Default: true, Importance: connect.Low, Doc: "Fail the connector when it generates more task configs than tasks.max.", Width: connect.WidthShort, Display: "Enforce tasks max"})
	def(connect.ConfigKey{Name: KeyKeyConverter, Type: connect.TypeClass, Importance: connect.Low, Doc: "Converter class used for record keys (overrides the worker's).", Width: connect.WidthShort, Display: "Key converter class"})
	def(connect.ConfigKey{Name: KeyValueConverter, Type: connect.TypeClass, Importance: connect.Low, Doc: "Converter class used for record values (overrides the worker's).", Width: connect.WidthShort, Display: "Value converter class"})
	def(connect.ConfigKey{Name: KeyHeaderConverter, Type: connect.TypeClass, Importance: connect.Low, Doc: "Header converter class (overrides the worker's).", Width: connect.WidthShort, Display: "Header converter class"})
	def(connect.ConfigKey{Name: KeyConfigReload, Type: connect.TypeString, Default: "restart", Importance: connect.Low, Doc: "What to do when external configuration providers change a value: none or restart.", Width: connect.WidthMedium, Display: "Reload Action", Check: connect.OneOf(true, "none", "restart")})
	def(connect.ConfigKey{Name: KeyTransforms, Type: connect.TypeList, Default: []string{}, Importance: connect.Low, Doc: "Aliases for the transformations to be applied to records.", Group: GroupTransforms, Width: connect.WidthLong, Display: "Transforms", Check: uniqueAliases})
	def(connect.ConfigKey{Name: KeyPredicates, Type: connect.TypeList, Default: []string{}, Importance: connect.Low, Doc: "Aliases for the predicates used by transformations.", Group: GroupPredicates, Width: connect.WidthLong, Display: "Predicates", Check: uniqueAliases})
	def(connect.ConfigKey{Name: KeyRetryTimeout, Type: connect.TypeLong, Default: int64(0), Importance: connect.Medium, Doc: "Maximum duration in milliseconds that a failed operation will be reattempted (-1: infinite).", Group: GroupErrors, Width: connect.WidthMedium, Display: "Retry Timeout for Errors", Check: connect.InRange(-1, 1<<62)})
	def(connect.ConfigKey{Name: KeyRetryDelayMax, Type: connect.TypeLong, Default: int64(60000), Importance: connect.Medium, Doc: "Maximum duration in milliseconds between consecutive retry attempts.", Group: GroupErrors, Width: connect.WidthMedium, Display: "Maximum Delay Between Retries for Errors", Check: connect.InRange(0, 1<<62)})
	def(connect.ConfigKey{Name: KeyTolerance, Type: connect.TypeString, Default: "none", Importance: connect.Medium, Doc: "Behavior for tolerating errors during connector operation: none or all.", Group: GroupErrors, Width: connect.WidthShort, Display: "Error Tolerance", Check: connect.OneOf(true, "none", "all")})
	def(connect.ConfigKey{Name: KeyErrorsLog, Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Doc: "Log each error and the details of the failed operation.", Group: GroupErrors, Width: connect.WidthShort, Display: "Log Errors"})
	def(connect.ConfigKey{Name: KeyErrorsLogMessages, Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Doc: "Include the failed record in the error log.", Group: GroupErrors, Width: connect.WidthShort, Display: "Log Error Details"})
	return d
}

// SinkDef is the worker-level definition of a sink connector's config.
func SinkDef() *connect.ConfigDef {
	d := commonDef()
	d.Define(connect.ConfigKey{Name: KeyTopics, Type: connect.TypeList, Default: []string{}, Importance: connect.High, Doc: "List of topics to consume, separated by commas.", Group: GroupCommon, Order: 4, Width: connect.WidthLong, Display: "Topics"})
	d.Define(connect.ConfigKey{Name: KeyTopicsRegex, Type: connect.TypeString, Default: "", Importance: connect.High, Doc: "Regular expression giving topics to consume.", Group: GroupCommon, Order: 4, Width: connect.WidthLong, Display: "Topics regex", Check: validRegex})
	d.Define(connect.ConfigKey{Name: KeyDLQTopic, Type: connect.TypeString, Default: "", Importance: connect.Medium, Doc: "The name of the topic to be used as the dead letter queue for messages that could not be processed.", Group: GroupErrors, Order: 6, Width: connect.WidthMedium, Display: "Dead Letter Queue Topic Name"})
	d.Define(connect.ConfigKey{Name: KeyDLQRF, Type: connect.TypeShort, Default: int16(3), Importance: connect.Medium, Doc: "Replication factor used to create the dead letter queue topic when it doesn't already exist.", Group: GroupErrors, Order: 7, Width: connect.WidthMedium, Display: "Dead Letter Queue Topic Replication Factor"})
	d.Define(connect.ConfigKey{Name: KeyDLQHeaders, Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Doc: "If true, add headers containing error context to the messages written to the dead letter queue.", Group: GroupErrors, Order: 8, Width: connect.WidthMedium, Display: "Enable Error Context Headers"})
	return d
}

// SourceDef is the worker-level definition of a source connector's config.
func SourceDef() *connect.ConfigDef {
	d := commonDef()
	d.Define(connect.ConfigKey{Name: KeyTopicCreation, Type: connect.TypeList, Default: []string{}, Importance: connect.Low, Doc: "Groups of configurations for topics created by source connectors (refused until topic creation is supported).", Group: "Topic Creation", Width: connect.WidthLong, Display: "Topic Creation Groups", Check: emptyList})
	d.Define(connect.ConfigKey{Name: KeyExactlyOnce, Type: connect.TypeString, Default: "requested", Importance: connect.Medium, Doc: "requested or required: whether the connector must guarantee exactly-once delivery.", Group: GroupExactlyOnce, Width: connect.WidthShort, Display: "Exactly once support", Check: connect.OneOf(true, "requested", "required")})
	d.Define(connect.ConfigKey{Name: KeyTxnBoundary, Type: connect.TypeString, Default: "poll", Importance: connect.Medium, Doc: "poll, interval or connector: where transactions begin and end.", Group: GroupExactlyOnce, Width: connect.WidthShort, Display: "Transaction Boundary", Check: connect.OneOf(true, "poll", "interval", "connector")})
	d.Define(connect.ConfigKey{Name: KeyTxnInterval, Type: connect.TypeLong, Importance: connect.Low, Doc: "With transaction.boundary=interval, the transaction length (default offset.flush.interval.ms).", Group: GroupExactlyOnce, Width: connect.WidthShort, Display: "Transaction boundary interval", Check: connect.InRange(0, 1<<62)})
	d.Define(connect.ConfigKey{Name: KeyOffsetsTopic, Type: connect.TypeString, Default: "", Importance: connect.Low, Doc: "A separate offsets topic for this connector (refused until supported).", Group: GroupExactlyOnce, Width: connect.WidthLong, Display: "Offsets topic", Check: emptyString})
	return d
}

func nonEmpty(name string, v any) error {
	if s, _ := v.(string); strings.TrimSpace(s) == "" {
		return fmt.Errorf("Invalid value %v for configuration %s: String may not be empty", v, name)
	}
	return nil
}

func emptyList(name string, v any) error {
	if l, _ := v.([]string); len(l) > 0 {
		return fmt.Errorf("Invalid value %s for configuration %s: not supported yet", strings.Join(l, ","), name)
	}
	return nil
}

func emptyString(name string, v any) error {
	if s, _ := v.(string); s != "" {
		return fmt.Errorf("Invalid value %s for configuration %s: a per-connector offsets topic is not supported yet", s, name)
	}
	return nil
}

func uniqueAliases(name string, v any) error {
	l, _ := v.([]string)
	seen := map[string]bool{}
	for _, a := range l {
		if seen[a] {
			return fmt.Errorf("Invalid value %s for configuration %s: Duplicate alias provided.", strings.Join(l, ","), name)
		}
		seen[a] = true
	}
	return nil
}

func validRegex(name string, v any) error {
	if s, _ := v.(string); s != "" {
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: %v", s, name, err)
		}
	}
	return nil
}

// ConnectorKind is whether a connector is a source or a sink.
type ConnectorKind string

// The kinds, as the REST API's "type".
const (
	KindSource  ConnectorKind = "source"
	KindSink    ConnectorKind = "sink"
	KindUnknown ConnectorKind = "unknown"
)

// KindOf is the kind of a connector instance.
func KindOf(c connect.Connector) ConnectorKind {
	switch c.(type) {
	case connect.SourceConnector:
		return KindSource
	case connect.SinkConnector:
		return KindSink
	}
	return KindUnknown
}

// ClassKind is the kind of a registered connector class ("" if none).
func ClassKind(class string) ConnectorKind {
	info, ok := connect.Lookup(class)
	if !ok {
		return KindUnknown
	}
	switch info.Type {
	case connect.PluginSource:
		return KindSource
	case connect.PluginSink:
		return KindSink
	}
	return KindUnknown
}

// Validation is the result of validating a connector config: Kafka's
// ConfigInfos.
type Validation struct {
	Name       string
	ErrorCount int
	Groups     []string
	Configs    []ValidatedKey
}

// ValidatedKey is one key's definition and value.
type ValidatedKey struct {
	Def   connect.ConfigKey
	Value connect.ConfigValue
}

// Errors lists every error as "key: message".
func (v *Validation) Errors() []string {
	var out []string
	for _, c := range v.Configs {
		for _, e := range c.Value.Errors {
			out = append(out, c.Value.Name+": "+e)
		}
	}
	return out
}

// ValidateConnectorConfig validates a connector config as Kafka's
// AbstractHerder.validateConnectorConfig: the worker-level keys, each
// transformation's and predicate's keys (prefixed), and the connector's own.
// exactlyOnce is the worker's exactly.once.source.support=enabled, under
// which a source connector's exactly.once.support and transaction.boundary
// are checked against what the connector says it can do (KIP-618).
func ValidateConnectorConfig(props map[string]string, overridePolicy string, exactlyOnce bool) (*Validation, error) {
	class := strings.TrimSpace(props[KeyConnectorClass])
	if class == "" {
		return nil, fmt.Errorf("Connector config %v contains no connector type", sortedProps(props))
	}
	conn, info, err := connect.NewConnector(class)
	if err != nil {
		return nil, fmt.Errorf("%v, available connectors are: %s", err, strings.Join(connectorClasses(), ", "))
	}
	var def *connect.ConfigDef
	switch KindOf(conn) {
	case KindSink:
		def = SinkDef()
	default:
		def = SourceDef()
	}
	v := &Validation{Name: info.Class}
	add := func(d *connect.ConfigDef, p map[string]string, prefix string) {
		vals := d.Validate(p)
		for i, k := range d.Keys() {
			val := vals[i]
			k.Name = prefix + k.Name
			val.Name = k.Name
			v.Configs = append(v.Configs, ValidatedKey{Def: k, Value: val})
		}
	}
	add(def, props, "")
	// Sinks: exactly one of topics and topics.regex.
	if KindOf(conn) == KindSink {
		topics, regex := strings.TrimSpace(props[KeyTopics]), strings.TrimSpace(props[KeyTopicsRegex])
		if (topics == "") == (regex == "") {
			msg := "Must configure one of topics or topics.regex"
			if topics != "" {
				msg = "topics and topics.regex are mutually exclusive options, but both are set."
			}
			v.addError(KeyTopics, msg)
			v.addError(KeyTopicsRegex, msg)
		}
		if dlq := strings.TrimSpace(props[KeyDLQTopic]); dlq != "" {
			for _, t := range strings.Split(topics, ",") {
				if strings.TrimSpace(t) == dlq {
					v.addError(KeyDLQTopic, fmt.Sprintf("The DLQ topic '%s' may not be included in the list of topics ('topics=%s') consumed by the connector", dlq, topics))
				}
			}
		}
	}
	if KindOf(conn) == KindSource {
		validateExactlyOnce(v, conn, props, exactlyOnce)
	}
	// Transformations and predicates, each with its own keys.
	for _, alias := range listOf(props[KeyTransforms]) {
		prefix := "transforms." + alias + "."
		t := strings.TrimSpace(props[prefix+"type"])
		typeKey := connect.ConfigKey{Name: "type", Type: connect.TypeClass, Required: true, Importance: connect.High, Doc: "Class for the '" + alias + "' transformation.", Group: "Transforms: " + alias, Display: "Transformation type for " + alias}
		base := connect.NewConfigDef().Define(typeKey).
			Define(connect.ConfigKey{Name: "predicate", Type: connect.TypeString, Default: "", Importance: connect.Medium, Doc: "The alias of a predicate used to determine whether to apply this transformation.", Group: "Transforms: " + alias, Display: "Predicate"}).
			Define(connect.ConfigKey{Name: "negate", Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Doc: "Whether the configured predicate should be negated.", Group: "Transforms: " + alias, Display: "Negate"})
		sub := SubProps(props, prefix)
		if t == "" {
			add(base, sub, prefix)
			continue
		}
		tr, err := connect.NewTransformation(t)
		if err != nil {
			add(base, sub, prefix)
			v.addError(prefix+"type", fmt.Sprintf("Invalid value %s for configuration %stype: Class %s could not be found.", t, prefix, t))
			continue
		}
		add(base.Merge(groupOf(tr.Config(), "Transforms: "+alias)), sub, prefix)
		if p := strings.TrimSpace(sub["predicate"]); p != "" && !contains(listOf(props[KeyPredicates]), p) {
			v.addError(prefix+"predicate", fmt.Sprintf("Invalid value %s for configuration %spredicate: Predicate '%s' is not defined.", p, prefix, p))
		}
	}
	for _, alias := range listOf(props[KeyPredicates]) {
		prefix := "predicates." + alias + "."
		t := strings.TrimSpace(props[prefix+"type"])
		base := connect.NewConfigDef().Define(connect.ConfigKey{Name: "type", Type: connect.TypeClass, Required: true, Importance: connect.High, Doc: "Class for the '" + alias + "' predicate.", Group: "Predicates: " + alias, Display: "Predicate type for " + alias})
		sub := SubProps(props, prefix)
		if t == "" {
			add(base, sub, prefix)
			continue
		}
		p, err := connect.NewPredicate(t)
		if err != nil {
			add(base, sub, prefix)
			v.addError(prefix+"type", fmt.Sprintf("Invalid value %s for configuration %stype: Class %s could not be found.", t, prefix, t))
			continue
		}
		add(base.Merge(groupOf(p.Config(), "Predicates: "+alias)), sub, prefix)
	}
	// Converters named by the connector must exist.
	for _, k := range []string{KeyKeyConverter, KeyValueConverter} {
		if c := strings.TrimSpace(props[k]); c != "" {
			if _, err := connect.NewConverter(c); err != nil {
				v.addError(k, fmt.Sprintf("Invalid value %s for configuration %s: Class %s could not be found.", c, k, c))
			}
		}
	}
	if c := strings.TrimSpace(props[KeyHeaderConverter]); c != "" {
		if _, err := newHeaderConverter(c); err != nil {
			v.addError(KeyHeaderConverter, fmt.Sprintf("Invalid value %s for configuration %s: Class %s could not be found.", c, KeyHeaderConverter, c))
		}
	}
	// Client overrides allowed by the policy.
	for k := range props {
		for _, p := range []string{"producer.override.", "consumer.override.", "admin.override."} {
			if strings.HasPrefix(k, p) && overridePolicy == "None" {
				v.addExtra(k, props[k], fmt.Sprintf("The '%s' policy does not allow '%s' to be overridden in the connector configuration.", overridePolicy, strings.TrimPrefix(k, p)))
			}
		}
	}
	if err := checkOverrides(props); err != nil {
		v.addExtra(err.key, props[err.key], err.msg)
	}
	// The connector's own keys, and its cross-key checks.
	cdef := conn.Config()
	own := connect.NewConfigDef()
	for _, k := range cdef.Keys() {
		if _, dup := def.Key(k.Name); !dup {
			own.Define(k)
		}
	}
	add(own, props, "")
	if cv, ok := conn.(connect.Validator); ok {
		for _, r := range cv.Validate(props) {
			for _, e := range r.Errors {
				v.addError(r.Name, e)
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range v.Configs {
		if g := c.Def.Group; g != "" && !seen[g] {
			seen[g] = true
			v.Groups = append(v.Groups, g)
		}
		v.ErrorCount += len(c.Value.Errors)
	}
	return v, nil
}

func (v *Validation) addError(name, msg string) {
	for i := range v.Configs {
		if v.Configs[i].Value.Name == name {
			v.Configs[i].Value.Errors = append(v.Configs[i].Value.Errors, msg)
			return
		}
	}
	v.addExtra(name, "", msg)
}

func (v *Validation) addExtra(name, value, msg string) {
	for i := range v.Configs {
		if v.Configs[i].Value.Name == name {
			v.Configs[i].Value.Errors = append(v.Configs[i].Value.Errors, msg)
			return
		}
	}
	v.Configs = append(v.Configs, ValidatedKey{
		Def:   connect.ConfigKey{Name: name, Type: connect.TypeString, Importance: connect.Low, Width: connect.WidthNone},
		Value: connect.ConfigValue{Name: name, Value: value, Errors: []string{msg}, Visible: true},
	})
}

func groupOf(d *connect.ConfigDef, group string) *connect.ConfigDef {
	out := connect.NewConfigDef()
	for _, k := range d.Keys() {
		k.Group = group
		out.Define(k)
	}
	return out
}

type overrideErr struct{ key, msg string }

// checkOverrides checks producer.override.* and consumer.override.* against
// what the clients support.
func checkOverrides(props map[string]string) *overrideErr {
	prod, cons := SubProps(props, "producer.override."), SubProps(props, "consumer.override.")
	for k, v := range prod {
		if _, err := producerOpts(map[string]string{k: v}); err != nil {
			return &overrideErr{"producer.override." + k, err.Error()}
		}
	}
	for k, v := range cons {
		if _, err := consumerOpts(map[string]string{k: v}); err != nil {
			return &overrideErr{"consumer.override." + k, err.Error()}
		}
	}
	for k := range SubProps(props, "admin.override.") {
		if err := checkAdminProp(k); err != nil {
			return &overrideErr{"admin.override." + k, k + " is not a supported admin property"}
		}
	}
	return nil
}

func connectorClasses() []string {
	var out []string
	for _, p := range connect.Plugins(connect.PluginSource, connect.PluginSink) {
		out = append(out, p.Class)
	}
	return out
}

func sortedProps(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + p[k])
	}
	b.WriteByte('}')
	return b.String()
}

func listOf(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TasksMax is the connector's tasks.max (validated already).
func TasksMax(props map[string]string) int {
	n, err := strconv.Atoi(strings.TrimSpace(props[KeyTasksMax]))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// validateExactlyOnce is Kafka's DistributedHerder source checks: with
// exactly.once.support=required, a worker without exactly-once support and a
// connector that cannot promise it are errors; transaction.boundary=connector
// needs a connector that defines boundaries.
func validateExactlyOnce(v *Validation, conn connect.Connector, props map[string]string, exactlyOnce bool) {
	required := strings.EqualFold(strings.TrimSpace(props[KeyExactlyOnce]), "required")
	if !exactlyOnce {
		if required {
			v.addError(KeyExactlyOnce, "This worker does not have exactly-once source support enabled.")
		}
		return
	}
	if required {
		eo, ok := conn.(connect.ExactlyOnceSource)
		switch {
		case !ok:
			v.addError(KeyExactlyOnce, `The connector does not implement the API required for preflight validation of exactly-once source support. Please consult the documentation for the connector to determine whether it supports exactly-once guarantees, and then consider reconfiguring the connector to use the value "requested" for this property (which will disable this preflight check and allow the connector to be created).`)
		case eo.ExactlyOnceSupport(props) != connect.ExactlyOnceSupported:
			v.addError(KeyExactlyOnce, "The connector does not support exactly-once semantics with the provided configuration.")
		}
	}
	if strings.EqualFold(strings.TrimSpace(props[KeyTxnBoundary]), "connector") {
		tb, ok := conn.(connect.TransactionBoundaries)
		if !ok || !tb.CanDefineTransactionBoundaries(props) {
			v.addError(KeyTxnBoundary, "The connector does not support connector-defined transaction boundaries with the given configuration. Please reconfigure it to use a different transaction boundary definition.")
		}
	}
}
