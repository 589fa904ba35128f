package connect

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Converter turns Connect data into the bytes of a Kafka record's key or
// value and back (Kafka Connect's Converter).
type Converter interface {
	// Configure is called once with the converter's settings (the worker's
	// or connector's key.converter.* / value.converter.* keys, prefix
	// removed); isKey says which side it converts.
	Configure(props map[string]string, isKey bool) error
	// FromConnectData serializes; a nil value gives nil bytes (a tombstone).
	FromConnectData(topic string, headers []Header, schema *Schema, value any) ([]byte, error)
	// ToConnectData deserializes; nil bytes give a nil value.
	ToConnectData(topic string, headers []Header, data []byte) (*Schema, any, error)
}

// HeaderConverter turns Connect header values into header bytes and back.
type HeaderConverter interface {
	Configure(props map[string]string) error
	FromConnectHeader(topic, key string, schema *Schema, value any) ([]byte, error)
	ToConnectHeader(topic, key string, data []byte) (*Schema, any, error)
}

// Transformation is a Single Message Transform: it changes or drops one
// record. Apply returns nil to drop the record; it must not change r's
// values in place (use Record.Clone and new values).
type Transformation interface {
	Config() *ConfigDef
	Configure(props map[string]string) error
	Apply(r *Record) (*Record, error)
	Close() error
}

// Predicate decides whether a transformation applies to a record (KIP-585).
type Predicate interface {
	Config() *ConfigDef
	Configure(props map[string]string) error
	Test(r *Record) (bool, error)
	Close() error
}

// PluginType is the kind of a registered plugin, as GET /connector-plugins
// names it.
type PluginType string

// The plugin types.
const (
	PluginSource          PluginType = "source"
	PluginSink            PluginType = "sink"
	PluginConverter       PluginType = "converter"
	PluginHeaderConverter PluginType = "header_converter"
	PluginTransformation  PluginType = "transformation"
	PluginPredicate       PluginType = "predicate"
)

// PluginInfo describes one registered plugin.
type PluginInfo struct {
	Class   string     // the full class name users put in configs
	Type    PluginType // what it is
	Version string
	Aliases []string // further names accepted for it
}

type plugin struct {
	info PluginInfo
	make func() any
}

var registry struct {
	sync.RWMutex
	byName map[string]*plugin // every accepted name → plugin
	all    []*plugin
}

// RegisterSource registers a source connector under its class name and
// aliases. Kafka's short names are accepted too: the simple class name and,
// for names ending in "Connector", that name without the suffix.
func RegisterSource(class, version string, factory func() SourceConnector, aliases ...string) {
	register(PluginInfo{Class: class, Type: PluginSource, Version: version, Aliases: aliases}, func() any { return factory() })
}

// RegisterSink registers a sink connector (see RegisterSource for names).
func RegisterSink(class, version string, factory func() SinkConnector, aliases ...string) {
	register(PluginInfo{Class: class, Type: PluginSink, Version: version, Aliases: aliases}, func() any { return factory() })
}

// RegisterConverter registers a converter.
func RegisterConverter(class, version string, factory func() Converter, aliases ...string) {
	register(PluginInfo{Class: class, Type: PluginConverter, Version: version, Aliases: aliases}, func() any { return factory() })
}

// RegisterHeaderConverter registers a header converter.
func RegisterHeaderConverter(class, version string, factory func() HeaderConverter, aliases ...string) {
	register(PluginInfo{Class: class, Type: PluginHeaderConverter, Version: version, Aliases: aliases}, func() any { return factory() })
}

// RegisterTransformation registers a transformation. Kafka's key/value
// variants are separate classes (InsertField$Key, InsertField$Value), so
// they are registered separately.
func RegisterTransformation(class, version string, factory func() Transformation, aliases ...string) {
	register(PluginInfo{Class: class, Type: PluginTransformation, Version: version, Aliases: aliases}, func() any { return factory() })
}

// RegisterPredicate registers a predicate.
func RegisterPredicate(class, version string, factory func() Predicate, aliases ...string) {
	register(PluginInfo{Class: class, Type: PluginPredicate, Version: version, Aliases: aliases}, func() any { return factory() })
}

func shortNames(class string) []string {
	simple := class
	if i := strings.LastIndexByte(class, '.'); i >= 0 {
		simple = class[i+1:]
	}
	names := []string{simple}
	if s, ok := strings.CutSuffix(simple, "Connector"); ok && s != "" {
		names = append(names, s)
	}
	return names
}

func register(info PluginInfo, factory func() any) {
	registry.Lock()
	defer registry.Unlock()
	if registry.byName == nil {
		registry.byName = map[string]*plugin{}
	}
	p := &plugin{info: info, make: factory}
	if old, ok := registry.byName[info.Class]; ok && old.info.Class == info.Class {
		panic(fmt.Sprintf("connect: plugin %s registered twice", info.Class))
	}
	registry.byName[info.Class] = p
	for _, n := range append(shortNames(info.Class), info.Aliases...) {
		// A short name shared by two plugins stays with the first; the full
		// class name always works.
		if _, taken := registry.byName[n]; !taken {
			registry.byName[n] = p
		}
	}
	registry.all = append(registry.all, p)
}

// Plugins lists the registered plugins of the given types (all when none),
// sorted by class name.
func Plugins(types ...PluginType) []PluginInfo {
	registry.RLock()
	defer registry.RUnlock()
	var out []PluginInfo
	for _, p := range registry.all {
		if len(types) == 0 || containsType(types, p.info.Type) {
			out = append(out, p.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

func containsType(ts []PluginType, t PluginType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// Lookup finds a plugin by any accepted name.
func Lookup(name string) (PluginInfo, bool) {
	registry.RLock()
	defer registry.RUnlock()
	p, ok := registry.byName[name]
	if !ok {
		return PluginInfo{}, false
	}
	return p.info, true
}

func newPlugin(name string) (any, PluginInfo, error) {
	registry.RLock()
	p, ok := registry.byName[name]
	registry.RUnlock()
	if !ok {
		return nil, PluginInfo{}, fmt.Errorf("failed to find any class that implements %s", name)
	}
	return p.make(), p.info, nil
}

// NewConnector makes a source or sink connector by name.
func NewConnector(name string) (Connector, PluginInfo, error) {
	v, info, err := newPlugin(name)
	if err != nil {
		return nil, info, fmt.Errorf("Failed to find any class that implements Connector and which name matches %s", name)
	}
	c, ok := v.(Connector)
	if !ok {
		return nil, info, fmt.Errorf("%s is a %s, not a connector", info.Class, info.Type)
	}
	return c, info, nil
}

// NewConverter makes a converter by name.
func NewConverter(name string) (Converter, error) {
	v, info, err := newPlugin(name)
	if err != nil {
		return nil, err
	}
	c, ok := v.(Converter)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a converter", info.Class, info.Type)
	}
	return c, nil
}

// HeaderConverterProvider is implemented by converters that are header
// converters too (Kafka's StringConverter, ByteArrayConverter): the two
// interfaces' Configure methods differ, so the converter hands out its
// header-converter side. Registered as a converter, such a class is found
// by NewHeaderConverter as well.
type HeaderConverterProvider interface {
	AsHeaderConverter() HeaderConverter
}

// NewHeaderConverter makes a header converter by name.
func NewHeaderConverter(name string) (HeaderConverter, error) {
	v, info, err := newPlugin(name)
	if err != nil {
		return nil, err
	}
	if hp, ok := v.(HeaderConverterProvider); ok {
		return hp.AsHeaderConverter(), nil
	}
	c, ok := v.(HeaderConverter)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a header converter", info.Class, info.Type)
	}
	return c, nil
}

// NewTransformation makes a transformation by name.
func NewTransformation(name string) (Transformation, error) {
	v, info, err := newPlugin(name)
	if err != nil {
		return nil, err
	}
	t, ok := v.(Transformation)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a transformation", info.Class, info.Type)
	}
	return t, nil
}

// NewPredicate makes a predicate by name.
func NewPredicate(name string) (Predicate, error) {
	v, info, err := newPlugin(name)
	if err != nil {
		return nil, err
	}
	p, ok := v.(Predicate)
	if !ok {
		return nil, fmt.Errorf("%s is a %s, not a predicate", info.Class, info.Type)
	}
	return p, nil
}
