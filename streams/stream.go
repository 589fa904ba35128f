package streams

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Stream is a record stream, Kafka Streams' KStream<K, V>: every record is
// an independent event. Create one with NewStream or derive it from
// another Stream or a Table.
type Stream[K, V any] struct {
	b  *Builder
	n  *node
	ks Serde[K]
	vs Serde[V]
	// keyChanged: an upstream operator may have changed the key, so a
	// grouping or join first repartitions by the new key.
	keyChanged bool
}

// KeyValue is a key and a value, as returned by FlatMap.
type KeyValue[K, V any] struct {
	Key   K // the record key
	Value V // the record value
}

// KV builds a KeyValue.
func KV[K, V any](k K, v V) KeyValue[K, V] { return KeyValue[K, V]{Key: k, Value: v} }

// RecordContext describes the input record being processed: where it was
// read from, its timestamp (ms since the epoch) and headers. During a
// punctuation Topic is "" and Offset -1.
type RecordContext struct {
	Topic     string             // the topic read from
	Partition int32              // its partition
	Offset    int64              // the record's offset
	Timestamp int64              // the record's event time, ms since the epoch
	Headers   []kgo.RecordHeader // the record's headers
}

func (t *task) recordContext() RecordContext {
	return RecordContext{Topic: t.cur.topic, Partition: t.cur.partition, Offset: t.cur.offset, Timestamp: t.cur.ts, Headers: t.cur.headers}
}

// as unboxes a record key or value; null becomes the zero value.
func as[T any](v any) T {
	if v == nil {
		var zero T
		return zero
	}
	return v.(T)
}

// funcProc is a stateless processor: f per record.
type funcProc struct {
	c *pctx
	f func(c *pctx, r record)
}

func (p *funcProc) init(c *pctx)     { p.c = c }
func (p *funcProc) process(r record) { p.f(p.c, r) }

func (b *Builder) stateless(name string, parent *node, f func(c *pctx, r record)) *node {
	return b.addNode(&node{name: name, newProc: func() proc { return &funcProc{f: f} }}, parent)
}

// NewStream reads topic as a Stream with the given serdes (Kafka Streams'
// builder.stream(topic, Consumed.with(keySerde, valueSerde))). Options:
// Named, WithTimestampExtractor.
func NewStream[K, V any](b *Builder, topic string, keySerde Serde[K], valueSerde Serde[V], options ...Option) Stream[K, V] {
	o := b.collect("NewStream", options, "Named", "WithTimestampExtractor")
	n := b.addNode(&node{
		name:     o.nameOr(b, "KSTREAM-SOURCE-"),
		topics:   []string{topic},
		keySerde: eraseSerde(keySerde),
		valSerde: eraseSerde(valueSerde),
		tsx:      o.tsx,
	})
	return Stream[K, V]{b: b, n: n, ks: keySerde, vs: valueSerde}
}

func (s Stream[K, V]) derive(n *node) Stream[K, V] {
	return Stream[K, V]{b: s.b, n: n, ks: s.ks, vs: s.vs, keyChanged: s.keyChanged}
}

// Filter keeps the records for which pred is true. Options: Named.
func (s Stream[K, V]) Filter(pred func(K, V) bool, options ...Option) Stream[K, V] {
	o := s.b.collect("Filter", options, "Named")
	return s.derive(s.b.stateless(o.nameOr(s.b, "KSTREAM-FILTER-"), s.n, func(c *pctx, r record) {
		if pred(as[K](r.key), as[V](r.value)) {
			c.forward(r)
		}
	}))
}

// FilterNot keeps the records for which pred is false. Options: Named.
func (s Stream[K, V]) FilterNot(pred func(K, V) bool, options ...Option) Stream[K, V] {
	o := s.b.collect("FilterNot", options, "Named")
	return s.derive(s.b.stateless(o.nameOr(s.b, "KSTREAM-FILTER-"), s.n, func(c *pctx, r record) {
		if !pred(as[K](r.key), as[V](r.value)) {
			c.forward(r)
		}
	}))
}

// Peek calls fn for each record and passes it on unchanged. Options: Named.
func (s Stream[K, V]) Peek(fn func(K, V), options ...Option) Stream[K, V] {
	o := s.b.collect("Peek", options, "Named")
	return s.derive(s.b.stateless(o.nameOr(s.b, "KSTREAM-PEEK-"), s.n, func(c *pctx, r record) {
		fn(as[K](r.key), as[V](r.value))
		c.forward(r)
	}))
}

// Foreach calls fn for each record; it ends the stream. Options: Named.
func (s Stream[K, V]) Foreach(fn func(K, V), options ...Option) {
	o := s.b.collect("Foreach", options, "Named")
	s.b.stateless(o.nameOr(s.b, "KSTREAM-FOREACH-"), s.n, func(_ *pctx, r record) {
		fn(as[K](r.key), as[V](r.value))
	})
}

// Merge returns a stream of the records of s and other. Options: Named.
func (s Stream[K, V]) Merge(other Stream[K, V], options ...Option) Stream[K, V] {
	o := s.b.collect("Merge", options, "Named")
	n := s.b.addNode(&node{name: o.nameOr(s.b, "KSTREAM-MERGE-"), newProc: func() proc {
		return &funcProc{f: func(c *pctx, r record) { c.forward(r) }}
	}}, s.n, other.n)
	out := s.derive(n)
	out.keyChanged = s.keyChanged || other.keyChanged
	return out
}

// To writes the stream to topic (Kafka Streams' to(topic, Produced)).
// Options: Named, WithKeySerde, WithValueSerde, WithPartitioner.
func (s Stream[K, V]) To(topic string, options ...Option) {
	s.to(topic, nil, options)
}

// TopicNameExtractor picks the output topic of each record.
type TopicNameExtractor[K, V any] func(key K, value V, rc RecordContext) string

// ToTopicFunc writes each record to the topic extract returns (Kafka
// Streams' to(TopicNameExtractor)). The topics must exist. Options as To.
func (s Stream[K, V]) ToTopicFunc(extract TopicNameExtractor[K, V], options ...Option) {
	s.to("", func(r record, rc RecordContext) string {
		return extract(as[K](r.key), as[V](r.value), rc)
	}, options)
}

func (s Stream[K, V]) to(topic string, extract func(record, RecordContext) string, options []Option) {
	o := s.b.collect("To", options, "Named", "WithKeySerde", "WithValueSerde", "WithPartitioner")
	s.b.addNode(&node{name: o.nameOr(s.b, "KSTREAM-SINK-"), sink: &sinkSpec{
		topic:     topic,
		extract:   extract,
		keySerde:  eraseSerde(serdeOr(s.b, "To", o.keySerde, s.ks)),
		valSerde:  eraseSerde(serdeOr(s.b, "To", o.valSerde, s.vs)),
		partition: partitionerOf[K, V](s.b, "To", o.partitioner),
	}}, s.n)
}

// Repartition writes the stream through the internal topic
// <application.id>-<name>-repartition and reads it back, so records with
// equal keys meet in one task (Kafka Streams' repartition). Options:
// Named (the topic's base name), WithKeySerde, WithValueSerde,
// WithNumPartitions, WithPartitioner.
func (s Stream[K, V]) Repartition(options ...Option) Stream[K, V] {
	o := s.b.collect("Repartition", options, "Named", "WithKeySerde", "WithValueSerde", "WithNumPartitions", "WithPartitioner")
	base := o.nameOr(s.b, "KSTREAM-REPARTITION-")
	ks := serdeOr(s.b, "Repartition", o.keySerde, s.ks)
	vs := serdeOr(s.b, "Repartition", o.valSerde, s.vs)
	return repartition(s, base, ks, vs, o.numParts, partitionerOf[K, V](s.b, "Repartition", o.partitioner))
}

// repartition inserts <base>-repartition: a sink to it and a source from it.
func repartition[K, V any](s Stream[K, V], base string, ks Serde[K], vs Serde[V], numParts int32, part func(string, any, any, int32) (int32, bool)) Stream[K, V] {
	b := s.b
	topic := base + "-repartition"
	// Records with a null key cannot be partitioned by key: Kafka Streams
	// drops them before the repartition topic.
	filter := b.stateless(topic+"-filter", s.n, func(c *pctx, r record) {
		if r.key != nil {
			c.forward(r)
		}
	})
	b.addNode(&node{name: topic + "-sink", sink: &sinkSpec{
		topic: topic, internal: true, numParts: numParts,
		keySerde: eraseSerde(ks), valSerde: eraseSerde(vs), partition: part,
	}}, filter)
	src := b.addNode(&node{
		name: topic + "-source", topics: []string{topic}, internalSource: true,
		keySerde: eraseSerde(ks), valSerde: eraseSerde(vs),
	})
	return Stream[K, V]{b: b, n: src, ks: ks, vs: vs}
}

// BranchedStream routes records to the first branch whose predicate holds
// (Kafka Streams' BranchedKStream, from Split).
type BranchedStream[K, V any] struct {
	s      Stream[K, V]
	prefix string
	n      *node
	preds  []func(K, V) bool
	out    map[string]Stream[K, V]
}

// Split starts routing the stream into branches. Options: Named (the
// prefix of the branch names).
func (s Stream[K, V]) Split(options ...Option) *BranchedStream[K, V] {
	o := s.b.collect("Split", options, "Named")
	bs := &BranchedStream[K, V]{s: s, prefix: o.name, out: map[string]Stream[K, V]{}}
	bs.n = s.b.addNode(&node{name: o.nameOr(s.b, "KSTREAM-BRANCH-"), newProc: func() proc {
		return &funcProc{f: func(c *pctx, r record) {
			k, v := as[K](r.key), as[V](r.value)
			for i, p := range bs.preds {
				if p == nil || p(k, v) {
					c.forwardTo(i, r)
					return
				}
			}
		}}
	}}, s.n)
	return bs
}

// Branch adds a branch taking the records pred accepts (and no earlier
// branch took). Its name is the Split prefix followed by name, or by its
// position (from 1) when name is "".
func (bs *BranchedStream[K, V]) Branch(pred func(K, V) bool, name string) *BranchedStream[K, V] {
	if pred == nil {
		bs.s.b.fail("Branch: nil predicate (use DefaultBranch)")
		pred = func(K, V) bool { return false }
	}
	bs.add(pred, name)
	return bs
}

func (bs *BranchedStream[K, V]) add(pred func(K, V) bool, name string) {
	if name == "" {
		name = strconv.Itoa(len(bs.preds) + 1)
	}
	full := bs.prefix + name
	if _, dup := bs.out[full]; dup {
		bs.s.b.fail("Split: branch %q twice", full)
	}
	bs.preds = append(bs.preds, pred)
	child := bs.s.b.stateless(bs.s.b.newName("KSTREAM-BRANCHCHILD-"), bs.n, func(c *pctx, r record) { c.forward(r) })
	bs.out[full] = bs.s.derive(child)
}

// DefaultBranch adds the branch of records no other branch took and
// returns all branches by name.
func (bs *BranchedStream[K, V]) DefaultBranch(name string) map[string]Stream[K, V] {
	if name == "" {
		name = "0"
	}
	bs.add(nil, name)
	return bs.out
}

// NoDefaultBranch drops the records no branch took and returns the
// branches by name.
func (bs *BranchedStream[K, V]) NoDefaultBranch() map[string]Stream[K, V] { return bs.out }

// Map replaces each record's key and value (Kafka Streams' map); a later
// grouping or join repartitions. Options: Named, WithKeySerde,
// WithValueSerde (the serdes of the new types, for later repartitions,
// stores and sinks; default: see the package doc).
func Map[K, V, KR, VR any](s Stream[K, V], fn func(K, V) (KR, VR), options ...Option) Stream[KR, VR] {
	o := s.b.collect("Map", options, "Named", "WithKeySerde", "WithValueSerde")
	n := s.b.stateless(o.nameOr(s.b, "KSTREAM-MAP-"), s.n, func(c *pctx, r record) {
		k, v := fn(as[K](r.key), as[V](r.value))
		c.forward(record{key: k, value: v, ts: r.ts, headers: r.headers})
	})
	return Stream[KR, VR]{b: s.b, n: n, keyChanged: true,
		ks: serdeOr(s.b, "Map", o.keySerde, defaultSerde[KR]()),
		vs: serdeOr(s.b, "Map", o.valSerde, defaultSerde[VR]())}
}

// MapValues replaces each record's value, keeping the key (no
// repartition). Options: Named, WithValueSerde.
func MapValues[K, V, VR any](s Stream[K, V], fn func(K, V) VR, options ...Option) Stream[K, VR] {
	o := s.b.collect("MapValues", options, "Named", "WithValueSerde")
	n := s.b.stateless(o.nameOr(s.b, "KSTREAM-MAPVALUES-"), s.n, func(c *pctx, r record) {
		c.forward(record{key: r.key, value: fn(as[K](r.key), as[V](r.value)), ts: r.ts, headers: r.headers})
	})
	return Stream[K, VR]{b: s.b, n: n, ks: s.ks, keyChanged: s.keyChanged,
		vs: serdeOr(s.b, "MapValues", o.valSerde, defaultSerde[VR]())}
}

// FlatMap replaces each record by zero or more records. Options: Named,
// WithKeySerde, WithValueSerde.
func FlatMap[K, V, KR, VR any](s Stream[K, V], fn func(K, V) []KeyValue[KR, VR], options ...Option) Stream[KR, VR] {
	o := s.b.collect("FlatMap", options, "Named", "WithKeySerde", "WithValueSerde")
	n := s.b.stateless(o.nameOr(s.b, "KSTREAM-FLATMAP-"), s.n, func(c *pctx, r record) {
		for _, kv := range fn(as[K](r.key), as[V](r.value)) {
			c.forward(record{key: kv.Key, value: kv.Value, ts: r.ts, headers: r.headers})
		}
	})
	return Stream[KR, VR]{b: s.b, n: n, keyChanged: true,
		ks: serdeOr(s.b, "FlatMap", o.keySerde, defaultSerde[KR]()),
		vs: serdeOr(s.b, "FlatMap", o.valSerde, defaultSerde[VR]())}
}

// FlatMapValues replaces each record's value by zero or more values, each
// a record with the same key. Options: Named, WithValueSerde.
func FlatMapValues[K, V, VR any](s Stream[K, V], fn func(K, V) []VR, options ...Option) Stream[K, VR] {
	o := s.b.collect("FlatMapValues", options, "Named", "WithValueSerde")
	n := s.b.stateless(o.nameOr(s.b, "KSTREAM-FLATMAPVALUES-"), s.n, func(c *pctx, r record) {
		for _, v := range fn(as[K](r.key), as[V](r.value)) {
			c.forward(record{key: r.key, value: v, ts: r.ts, headers: r.headers})
		}
	})
	return Stream[K, VR]{b: s.b, n: n, ks: s.ks, keyChanged: s.keyChanged,
		vs: serdeOr(s.b, "FlatMapValues", o.valSerde, defaultSerde[VR]())}
}

// SelectKey sets each record's key to fn(key, value). Options: Named,
// WithKeySerde.
func SelectKey[K, V, KR any](s Stream[K, V], fn func(K, V) KR, options ...Option) Stream[KR, V] {
	o := s.b.collect("SelectKey", options, "Named", "WithKeySerde")
	n := s.b.stateless(o.nameOr(s.b, "KSTREAM-KEY-SELECT-"), s.n, func(c *pctx, r record) {
		c.forward(record{key: fn(as[K](r.key), as[V](r.value)), value: r.value, ts: r.ts, headers: r.headers})
	})
	return Stream[KR, V]{b: s.b, n: n, keyChanged: true, vs: s.vs,
		ks: serdeOr(s.b, "SelectKey", o.keySerde, defaultSerde[KR]())}
}

// ToTable turns the stream into a changelog table: each record upserts its
// key, a null value deletes it. Options: Named, Materialized, WithBackend,
// WithLoggingDisabled, WithKeySerde, WithValueSerde.
func (s Stream[K, V]) ToTable(options ...Option) Table[K, V] {
	o := s.b.collect("ToTable", options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled", "WithKeySerde", "WithValueSerde")
	name := o.nameOr(s.b, "KSTREAM-TOTABLE-")
	ks := serdeOr(s.b, "ToTable", o.keySerde, s.ks)
	vs := serdeOr(s.b, "ToTable", o.valSerde, s.vs)
	in := s
	if s.keyChanged {
		in = repartition(s, name, ks, vs, 0, nil)
	}
	store := o.store
	if store == "" {
		store = s.b.newStoreName("KSTREAM-TOTABLE-")
	}
	return materializeTable[K, V](s.b, name, in.n, store, o, ks, vs, func(r record) change {
		return change{newV: r.value}
	})
}

// String names the stream by its processor node, for debugging.
func (s Stream[K, V]) String() string { return fmt.Sprintf("Stream(%s)", s.n.name) }
