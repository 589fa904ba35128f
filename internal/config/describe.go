package config

import "strings"

// Synonym is one DescribeConfigs synonym: a config, in some layer, that
// contributes to an entry's value.
type Synonym struct {
	Name     string
	Value    string
	HasValue bool // false = null (unset default, or sensitive)
	Source   Source
}

// Entry is one DescribeConfigs result entry.
type Entry struct {
	Name      string
	Value     string
	HasValue  bool // false = null
	Source    Source
	ReadOnly  bool
	Sensitive bool
	Type      Type
	Doc       string
	// Synonyms are in Kafka's precedence order, the entry's own winning layer
	// first; empty when Kafka reports none.
	Synonyms []Synonym
}

// brokerLayers are the broker config layers DescribeConfigs walks, highest
// precedence first (ConfigHelper.configSynonyms).
type brokerLayers struct {
	perBroker, dynamicDefault, static map[string]string
	// defaults is the DEFAULT_CONFIG layer; brokerDefaultValues unless set.
	defaults map[string]string
}

// synonyms lists, for a broker key, every layer that sets it or one of its
// synonyms, in Kafka's order: per-broker dynamic, cluster-default dynamic,
// static, default; within a layer, synonym precedence. As in Kafka, entries
// before the first one naming the key itself are dropped, so log.retention.ms
// reports no synonyms when only log.retention.hours is set.
func (l brokerLayers) synonyms(name string, sensitive bool) []Synonym {
	names := brokerSynonymsOf(name)
	var out []Synonym
	add := func(m map[string]string, src Source) {
		for _, n := range names {
			v, ok := m[n]
			if !ok {
				continue
			}
			s := Synonym{Name: n, Source: src}
			if !sensitive {
				s.Value, s.HasValue = strings.TrimSpace(v), true
			}
			out = append(out, s)
		}
	}
	add(l.perBroker, SourceDynamicBrokerConfig)
	add(l.dynamicDefault, SourceDynamicDefaultBrokerConfig)
	add(l.static, SourceStaticBrokerConfig)
	if l.defaults == nil {
		l.defaults = brokerDefaultValues
	}
	add(l.defaults, SourceDefaultConfig)
	for i, s := range out {
		if s.Name == name {
			return out[i:]
		}
	}
	return nil
}

// brokerDefaultValues holds every broker key with a non-null default.
var brokerDefaultValues = func() map[string]string {
	m := map[string]string{}
	for _, d := range brokerDefList {
		if d.HasDefault {
			m[d.Name] = d.Default
		}
	}
	return m
}()

// DescribeTopic returns DescribeConfigs entries for every topic config of a
// topic, sorted by name, following ConfigHelper.createTopicConfigEntry: a
// topic override is DYNAMIC_TOPIC_CONFIG and comes first in the synonyms,
// followed by the broker synonyms of the topic key's server default (for
// retention.ms: log.retention.ms, .minutes, .hours across the dynamic-default,
// static and default layers). dynamicBroker is the cluster-default dynamic
// broker config.
func DescribeTopic(b *Broker, dynamicBroker, overrides map[string]string) []Entry {
	values := topicValues(b, nil, dynamicBroker, overrides)
	layers := brokerLayers{dynamicDefault: dynamicBroker, static: b.Raw}
	out := make([]Entry, 0, len(topicDefNames))
	for _, name := range topicDefNames {
		d := topicDefs[name]
		e := Entry{Name: name, Value: values[name], HasValue: true, Type: d.Type, Doc: d.Doc, Sensitive: d.Sensitive}
		if _, ok := overrides[name]; ok {
			e.Synonyms = append(e.Synonyms, Synonym{Name: name, Value: values[name], HasValue: true, Source: SourceDynamicTopicConfig})
		}
		if server, ok := TopicServerDefault(name); ok {
			e.Synonyms = append(e.Synonyms, layers.synonyms(server, false)...)
		}
		e.Source = SourceDefaultConfig
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		out = append(out, e)
	}
	return out
}

// DescribeBroker returns DescribeConfigs entries for this broker's resource
// (resource name = its node id), sorted by name, following
// ConfigHelper.createBrokerConfigEntry: the value is the effective one after
// dynamic layers, and synonyms walk per-broker dynamic, cluster-default
// dynamic, static and default layers. Sensitive values are null.
func DescribeBroker(b *Broker, dynamicPerBroker, dynamicDefault map[string]string) []Entry {
	merged := mergeLayers(b.Raw, dynamicDefault, dynamicPerBroker)
	layers := brokerLayers{perBroker: dynamicPerBroker, dynamicDefault: dynamicDefault, static: b.Raw}
	if len(b.defaults) > 0 {
		layers.defaults = mergeLayers(brokerDefaultValues, b.defaults)
	}
	names := append([]string(nil), brokerDefNames...)
	for _, m := range []map[string]string{b.Raw, dynamicDefault, dynamicPerBroker} {
		for k := range m {
			if _, base := brokerDefs[k]; !base && lookupBrokerDef(k) != nil && !contains(names, k) {
				names = append(names, k)
			}
		}
	}
	sortStrings(names)
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		d := lookupBrokerDef(name)
		_, prefixed := listenerBase(name)
		e := Entry{Name: name, Type: d.Type, Doc: d.Doc, Sensitive: d.Sensitive,
			// Kafka checks the full name against AllDynamicConfigs, so
			// listener-prefixed entries report read-only.
			ReadOnly: d.ReadOnly || prefixed}
		if v, ok := merged[name]; ok {
			e.Value, e.HasValue = brokerDisplay(d.Type, v), true
		} else if v, ok := b.defaultOf(d); ok {
			e.Value, e.HasValue = v, true
		}
		if d.Sensitive {
			e.Value, e.HasValue = "", false
		}
		e.Synonyms = layers.synonyms(name, d.Sensitive)
		e.Source = SourceDefaultConfig
		if len(e.Synonyms) > 0 {
			e.Source = e.Synonyms[0].Source
		}
		out = append(out, e)
	}
	return out
}

// DescribeBrokerDefault returns DescribeConfigs entries for the cluster-wide
// default broker resource (empty resource name): only keys set as dynamic
// defaults, each with its DYNAMIC_DEFAULT_BROKER_CONFIG synonyms.
func DescribeBrokerDefault(dynamicDefault map[string]string) []Entry {
	layers := brokerLayers{dynamicDefault: dynamicDefault}
	var out []Entry
	for _, name := range sortedNames(dynamicDefault) {
		d := lookupBrokerDef(name)
		e := Entry{Name: name, Value: strings.TrimSpace(dynamicDefault[name]), HasValue: true, Source: SourceDynamicDefaultBrokerConfig, Type: Unknown, Sensitive: true, ReadOnly: true}
		if d != nil {
			_, prefixed := listenerBase(name)
			e.Type, e.Doc, e.Sensitive, e.ReadOnly = d.Type, d.Doc, d.Sensitive, d.ReadOnly || prefixed
			e.Value = brokerDisplay(d.Type, e.Value)
		}
		if e.Sensitive {
			e.Value, e.HasValue = "", false
		}
		for _, s := range layers.synonyms(name, e.Sensitive) {
			if s.Source == SourceDynamicDefaultBrokerConfig {
				e.Synonyms = append(e.Synonyms, s)
			}
		}
		out = append(out, e)
	}
	return out
}

// brokerDisplay renders a broker value as Kafka does: strings as given,
// other types through their parsed form.
func brokerDisplay(t Type, v string) string {
	if t == String || t == Password || t == Class {
		return strings.TrimSpace(v)
	}
	return canonical(t, v)
}
