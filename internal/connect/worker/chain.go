package worker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vltava/vltava/connect"
)

// simpleHeaderConverter is Kafka's default header converter class.
const simpleHeaderConverter = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

// newHeaderConverter makes a header converter by name. Until a plugin
// registers SimpleHeaderConverter, its name gives stringHeaders, which
// writes every header value as its string form and reads headers as
// strings (SimpleHeaderConverter's behaviour for string values).
func newHeaderConverter(name string) (connect.HeaderConverter, error) {
	hc, err := connect.NewHeaderConverter(name)
	if err == nil {
		return hc, nil
	}
	if _, found := connect.Lookup(name); !found && (name == simpleHeaderConverter || name == "SimpleHeaderConverter") {
		return stringHeaders{}, nil
	}
	return nil, err
}

type stringHeaders struct{}

func (stringHeaders) Configure(map[string]string) error { return nil }
func (stringHeaders) FromConnectHeader(_, _ string, _ *connect.Schema, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return []byte(fmt.Sprint(v)), nil
}
func (stringHeaders) ToConnectHeader(_, _ string, data []byte) (*connect.Schema, any, error) {
	if data == nil {
		return nil, nil, nil
	}
	return &connect.Schema{Type: connect.String, Optional: true}, string(data), nil
}

// Converters are a connector's key, value and header converters, with
// their class names (the dead letter queue's __connect.errors.class.name).
type Converters struct {
	Key    connect.Converter
	Value  connect.Converter
	Header connect.HeaderConverter

	KeyClass, ValueClass, HeaderClass string
}

// className is the registered class of the plugin named name (name itself
// when it is not registered).
func className(name string) string {
	if info, ok := connect.Lookup(name); ok {
		return info.Class
	}
	return name
}

// NewConverters builds the converters of a connector: each is the
// connector's key.converter (with its key.converter.* settings) if set,
// else the worker's (with the worker's settings).
func NewConverters(w *Config, props map[string]string) (*Converters, error) {
	pick := func(key, workerClass string) (string, map[string]string) {
		if c := strings.TrimSpace(props[key]); c != "" {
			return c, SubProps(props, key+".")
		}
		return workerClass, w.ConverterProps(key + ".")
	}
	c := &Converters{}
	var err error
	kc, kp := pick(KeyKeyConverter, w.KeyConverter)
	c.KeyClass = className(kc)
	if c.Key, err = connect.NewConverter(kc); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyKeyConverter, err)
	}
	if err := c.Key.Configure(kp, true); err != nil {
		return nil, fmt.Errorf("%s %s: %w", KeyKeyConverter, kc, err)
	}
	vc, vp := pick(KeyValueConverter, w.ValueConverter)
	c.ValueClass = className(vc)
	if c.Value, err = connect.NewConverter(vc); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyValueConverter, err)
	}
	if err := c.Value.Configure(vp, false); err != nil {
		return nil, fmt.Errorf("%s %s: %w", KeyValueConverter, vc, err)
	}
	hc, hp := pick(KeyHeaderConverter, w.HeaderConverter)
	c.HeaderClass = className(hc)
	if c.HeaderClass == "SimpleHeaderConverter" {
		c.HeaderClass = simpleHeaderConverter
	}
	if c.Header, err = newHeaderConverter(hc); err != nil {
		return nil, fmt.Errorf("%s: %w", KeyHeaderConverter, err)
	}
	if err := c.Header.Configure(hp); err != nil {
		return nil, fmt.Errorf("%s %s: %w", KeyHeaderConverter, hc, err)
	}
	return c, nil
}

// step is one transformation with its optional predicate.
type step struct {
	alias  string
	class  string
	t      connect.Transformation
	pred   connect.Predicate
	negate bool
}

// Chain is a connector's transformations in order (Kafka's
// TransformationChain), each applied when its predicate (negated or not)
// holds.
type Chain struct {
	steps []step
	preds []connect.Predicate
}

// NewChain builds the chain from transforms, transforms.<a>.type,
// transforms.<a>.predicate, transforms.<a>.negate, predicates and
// predicates.<p>.type, configuring each plugin with its prefixed keys.
func NewChain(props map[string]string) (*Chain, error) {
	c := &Chain{}
	preds := map[string]connect.Predicate{}
	for _, alias := range listOf(props[KeyPredicates]) {
		prefix := "predicates." + alias + "."
		p, err := connect.NewPredicate(strings.TrimSpace(props[prefix+"type"]))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("predicate %s: %w", alias, err)
		}
		sub := SubProps(props, prefix)
		delete(sub, "type")
		if err := p.Configure(sub); err != nil {
			c.Close()
			return nil, fmt.Errorf("predicate %s: %w", alias, err)
		}
		preds[alias] = p
		c.preds = append(c.preds, p)
	}
	for _, alias := range listOf(props[KeyTransforms]) {
		prefix := "transforms." + alias + "."
		typ := strings.TrimSpace(props[prefix+"type"])
		t, err := connect.NewTransformation(typ)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("transformation %s: %w", alias, err)
		}
		sub := SubProps(props, prefix)
		s := step{alias: alias, class: className(typ), t: t}
		if p := strings.TrimSpace(sub["predicate"]); p != "" {
			if s.pred = preds[p]; s.pred == nil {
				c.Close()
				return nil, fmt.Errorf("transformation %s: predicate %s is not defined", alias, p)
			}
			s.negate, _ = strconv.ParseBool(strings.TrimSpace(sub["negate"]))
		}
		for _, k := range []string{"type", "predicate", "negate"} {
			delete(sub, k)
		}
		if err := t.Configure(sub); err != nil {
			c.Close()
			return nil, fmt.Errorf("transformation %s: %w", alias, err)
		}
		c.steps = append(c.steps, s)
	}
	return c, nil
}

// Apply runs the chain; a nil result means a transformation dropped the
// record.
func (c *Chain) Apply(r *connect.Record) (*connect.Record, error) {
	for _, s := range c.steps {
		if s.pred != nil {
			ok, err := s.pred.Test(r)
			if err != nil {
				return nil, fmt.Errorf("predicate of transformation %s: %w", s.alias, err)
			}
			if ok == s.negate {
				continue
			}
		}
		out, err := s.t.Apply(r)
		if err != nil {
			return nil, &TransformError{Class: s.class, err: fmt.Errorf("transformation %s: %w", s.alias, err)}
		}
		if out == nil {
			return nil, nil
		}
		r = out
	}
	return r, nil
}

// TransformError is a transformation's failure, with the transformation's
// class (the dead letter queue's __connect.errors.class.name).
type TransformError struct {
	Class string
	err   error
}

func (e *TransformError) Error() string { return e.err.Error() }
func (e *TransformError) Unwrap() error { return e.err }

// Close closes every transformation and predicate.
func (c *Chain) Close() {
	for _, s := range c.steps {
		_ = s.t.Close()
	}
	for _, p := range c.preds {
		_ = p.Close()
	}
}
