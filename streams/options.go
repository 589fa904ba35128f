package streams

import (
	"fmt"
	"reflect"
)

// Option adjusts one DSL operator: its processor name, its store, the
// serdes it writes with, its repartitioning. It plays the role of Kafka
// Streams' Named, Materialized, Grouped, Produced, Repartitioned and
// Joined. An option an operator cannot use fails Build.
type Option interface{ apply(*opts) }

type opts struct {
	name        string
	store       string
	backend     StoreBackend
	hasBackend  bool
	loggingOff  bool
	keySerde    any
	valSerde    any
	numParts    int32
	partitioner any
	stores      []string
	tsx         TimestampExtractor
	used        map[string]bool
}

type optFunc func(*opts)

func (f optFunc) apply(o *opts) { f(o) }

// Named names the operator's processor (and, where the operator creates a
// repartition topic or store without an explicit name, bases those on it),
// as Kafka Streams' Named.as / Grouped.as.
func Named(name string) Option {
	return optFunc(func(o *opts) { o.name = name; o.mark("Named") })
}

// Materialized names the operator's state store, making it queryable, as
// Kafka Streams' Materialized.as(name).
func Materialized(store string) Option {
	return optFunc(func(o *opts) { o.store = store; o.mark("Materialized") })
}

// WithBackend picks the store backend (default Pebble).
func WithBackend(b StoreBackend) Option {
	return optFunc(func(o *opts) { o.backend = b; o.hasBackend = true; o.mark("WithBackend") })
}

// WithLoggingDisabled turns the store's changelog off (Kafka Streams'
// Materialized.withLoggingDisabled): the store is not restored after a
// restart or a move.
func WithLoggingDisabled() Option {
	return optFunc(func(o *opts) { o.loggingOff = true; o.mark("WithLoggingDisabled") })
}

// WithKeySerde sets the key serde an operator writes with (sink,
// repartition topic, store). Its type must match the operator's key type.
func WithKeySerde[K any](s Serde[K]) Option {
	return optFunc(func(o *opts) { o.keySerde = s; o.mark("WithKeySerde") })
}

// WithValueSerde sets the value serde an operator writes with. Its type
// must match the operator's value type.
func WithValueSerde[V any](s Serde[V]) Option {
	return optFunc(func(o *opts) { o.valSerde = s; o.mark("WithValueSerde") })
}

// WithNumPartitions sets a repartition topic's partition count (Kafka
// Streams' Repartitioned.withNumberOfPartitions).
func WithNumPartitions(n int32) Option {
	return optFunc(func(o *opts) { o.numParts = n; o.mark("WithNumPartitions") })
}

// StreamPartitioner picks the partition of a record written by To or
// Repartition, given the topic's partition count; ok=false leaves the
// choice to the default partitioner (murmur2 of the serialized key).
type StreamPartitioner[K, V any] func(topic string, key K, value V, numPartitions int32) (partition int32, ok bool)

// WithPartitioner sets the partitioner of To or Repartition.
func WithPartitioner[K, V any](p StreamPartitioner[K, V]) Option {
	return optFunc(func(o *opts) { o.partitioner = p; o.mark("WithPartitioner") })
}

// WithStores connects state stores (declared with AddKeyValueStore) to a
// Process operator.
func WithStores(names ...string) Option {
	return optFunc(func(o *opts) { o.stores = append(o.stores, names...); o.mark("WithStores") })
}

func (o *opts) mark(name string) {
	if o.used == nil {
		o.used = map[string]bool{}
	}
	o.used[name] = true
}

// collect applies options and fails the build for any not in allowed.
func (b *Builder) collect(op string, in []Option, allowed ...string) *opts {
	o := &opts{}
	for _, x := range in {
		x.apply(o)
	}
	for u := range o.used {
		if !contains(allowed, u) {
			b.fail("%s does not take the %s option", op, u)
		}
	}
	return o
}

// serdeOr returns the option's serde if set (checking its type), else def.
func serdeOr[T any](b *Builder, op string, given any, def Serde[T]) Serde[T] {
	if given == nil {
		return def
	}
	s, ok := given.(Serde[T])
	if !ok {
		b.fail("%s: serde %T does not serialize %v", op, given, reflect.TypeFor[T]())
		return def
	}
	return s
}

func partitionerOf[K, V any](b *Builder, op string, given any) func(string, any, any, int32) (int32, bool) {
	if given == nil {
		return nil
	}
	p, ok := given.(StreamPartitioner[K, V])
	if !ok {
		b.fail("%s: partitioner %T does not take %v, %v", op, given, reflect.TypeFor[K](), reflect.TypeFor[V]())
		return nil
	}
	return func(topic string, k, v any, n int32) (int32, bool) {
		kk, _ := k.(K)
		vv, _ := v.(V)
		part, ok := p(topic, kk, vv, n)
		if ok && (part < 0 || part >= n) {
			panic(processingError{fmt.Errorf("streams: partitioner chose partition %d of %q, which has %d", part, topic, n)})
		}
		return part, ok
	}
}

func (o *opts) nameOr(b *Builder, prefix string) string {
	if o.name != "" {
		return o.name
	}
	return b.newName(prefix)
}

func (o *opts) backendOr(def StoreBackend) StoreBackend {
	if o.hasBackend {
		return o.backend
	}
	return def
}

// peekOpts applies options without checking them, for a wrapper that reads
// one option and passes the rest on to a checking collect.
func peekOpts(in []Option) *opts {
	o := &opts{}
	for _, x := range in {
		x.apply(o)
	}
	return o
}
