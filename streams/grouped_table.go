package streams

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// GroupedTable is a table regrouped by a new key for aggregation, Kafka
// Streams' KGroupedTable. Each update of the source table retracts the
// old value from its group (the subtractor) and adds the new value to its
// group (the adder), so the aggregates follow updates and deletes.
type GroupedTable[K, V any] struct {
	b    *Builder
	n    *node // emits change records keyed by the new key
	ks   Serde[K]
	vs   Serde[V]
	name string
}

// TableGroupBy regroups t by fn(key, value), which gives each row's new
// key and value (Kafka Streams' KTable.groupBy). The aggregation always
// goes through a repartition topic. Options: Named, WithKeySerde,
// WithValueSerde (of the new key and value).
func TableGroupBy[K, V, KR, VR any](t Table[K, V], fn func(K, V) KeyValue[KR, VR], options ...Option) GroupedTable[KR, VR] {
	b := t.b
	o := b.collect("TableGroupBy", options, "Named", "WithKeySerde", "WithValueSerde")
	ks := serdeOr(b, "TableGroupBy", o.keySerde, defaultSerde[KR]())
	vs := serdeOr(b, "TableGroupBy", o.valSerde, defaultSerde[VR]())
	sameKey := func(a, c KR) bool {
		ab, err1 := ks.Serialize("", a)
		cb, err2 := ks.Serialize("", c)
		return err1 == nil && err2 == nil && bytes.Equal(ab, cb)
	}
	n := b.stateless(b.newName("KTABLE-SELECT-"), t.n, func(c *pctx, r record) {
		ch := r.value.(change)
		var oldKV, newKV KeyValue[KR, VR]
		if ch.oldV != nil {
			oldKV = fn(as[K](r.key), ch.oldV.(V))
		}
		if ch.newV != nil {
			newKV = fn(as[K](r.key), ch.newV.(V))
		}
		switch {
		case ch.oldV != nil && ch.newV != nil && sameKey(oldKV.Key, newKV.Key):
			// One record carries both sides (KIP-904): the aggregate
			// subtracts and adds before it emits once.
			c.forward(record{key: newKV.Key, value: change{newV: newKV.Value, oldV: oldKV.Value}, ts: r.ts, headers: r.headers})
		default:
			if ch.oldV != nil {
				c.forward(record{key: oldKV.Key, value: change{oldV: oldKV.Value}, ts: r.ts, headers: r.headers})
			}
			if ch.newV != nil {
				c.forward(record{key: newKV.Key, value: change{newV: newKV.Value}, ts: r.ts, headers: r.headers})
			}
		}
	})
	return GroupedTable[KR, VR]{b: b, n: n, ks: ks, vs: vs, name: o.name}
}

// Count counts the rows per group into a Table. Options: Named,
// Materialized, WithBackend, WithLoggingDisabled.
func (g GroupedTable[K, V]) Count(options ...Option) Table[K, int64] {
	return tableAggregate(g, "Count", "KTABLE-AGGREGATE-", func() int64 { return 0 },
		func(_ K, _ V, agg int64, _ bool) int64 { return agg + 1 },
		func(_ K, _ V, agg int64) int64 { return agg - 1 }, Int64(), options)
}

// Reduce combines each group's values with adder and retracts replaced
// or deleted values with subtractor (Kafka Streams'
// KGroupedTable.reduce). Options as Count.
func (g GroupedTable[K, V]) Reduce(adder, subtractor func(agg, v V) V, options ...Option) Table[K, V] {
	return tableAggregate(g, "Reduce", "KTABLE-REDUCE-", func() V { var z V; return z },
		func(_ K, v V, agg V, first bool) V {
			if first {
				return v
			}
			return adder(agg, v)
		},
		func(_ K, v V, agg V) V { return subtractor(agg, v) }, g.vs, options)
}

// TableAggregate folds each group's values into an aggregate from init(),
// with adder for new values and subtractor for replaced or deleted ones
// (Kafka Streams' KGroupedTable.aggregate). Options as Count, and
// WithValueSerde (the aggregate's serde).
func TableAggregate[K, V, VA any](g GroupedTable[K, V], init func() VA, adder, subtractor func(K, V, VA) VA, options ...Option) Table[K, VA] {
	o := peekOpts(options)
	vs := serdeOr(g.b, "TableAggregate", o.valSerde, defaultSerde[VA]())
	return tableAggregate(g, "TableAggregate", "KTABLE-AGGREGATE-", init,
		func(k K, v V, agg VA, _ bool) VA { return adder(k, v, agg) }, subtractor, vs, stripOpt(options, "WithValueSerde"))
}

func tableAggregate[K, V, VA any](g GroupedTable[K, V], op, prefix string, init func() VA,
	add func(K, V, VA, bool) VA, sub func(K, V, VA) VA, vs Serde[VA], options []Option,
) Table[K, VA] {
	b := g.b
	o := b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	store := o.store
	if store == "" {
		store = b.newStoreName(prefix)
	}
	name := o.nameOr(b, prefix)
	base := g.name
	if base == "" {
		base = store
	}
	topic := base + "-repartition"
	cs := changeSerde(eraseSerde(g.vs))
	b.addNode(&node{name: topic + "-sink", sink: &sinkSpec{
		topic: topic, internal: true, keySerde: eraseSerde(g.ks), valSerde: cs,
	}}, g.n)
	src := b.addNode(&node{
		name: topic + "-source", topics: []string{topic}, internalSource: true,
		keySerde: eraseSerde(g.ks), valSerde: cs,
	})
	b.addStore(&storeSpec{name: store, kind: kindKeyValue, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(g.ks), valSerde: eraseSerde(vs), queryable: true})
	n := b.addNode(&node{name: name, stores: []string{store}, newProc: func() proc {
		return &tableAggProc[K, V, VA]{store: store, initFn: init, add: add, sub: sub}
	}}, src)
	return Table[K, VA]{b: b, n: n, ks: g.ks, vs: vs, store: store}
}

type tableAggProc[K, V, VA any] struct {
	c      *pctx
	s      kvView
	store  string
	initFn func() VA
	add    func(K, V, VA, bool) VA
	sub    func(K, V, VA) VA
}

func (p *tableAggProc[K, V, VA]) init(c *pctx) { p.c = c; p.s = kvView{c.store(p.store)} }

func (p *tableAggProc[K, V, VA]) process(r record) {
	ch, ok := r.value.(change)
	if r.key == nil || !ok {
		p.c.t.metrics.skipped.Add(1)
		return
	}
	old, oldTs, had := p.s.get(r.key)
	agg := p.initFn()
	if had {
		agg = old.(VA)
	}
	first := !had
	if ch.oldV != nil && had {
		agg = p.sub(r.key.(K), ch.oldV.(V), agg)
	}
	if ch.newV != nil {
		agg = p.add(r.key.(K), ch.newV.(V), agg, first)
	}
	ts := max(r.ts, oldTs)
	p.s.put(r.key, agg, ts)
	p.c.forward(record{key: r.key, value: change{newV: agg, oldV: old}, ts: ts, headers: r.headers})
}

// changeSerde writes a change (old and new value) into one repartition
// record: a flags byte (1: new present, 2: old present), the new value's
// length (4 bytes, big-endian) and bytes, then the old value's bytes.
func changeSerde(inner anySerde) anySerde {
	return anySerde{
		ser: func(topic string, v any) ([]byte, error) {
			ch := v.(change)
			nb, err := inner.ser(topic, ch.newV)
			if err != nil {
				return nil, err
			}
			ob, err := inner.ser(topic, ch.oldV)
			if err != nil {
				return nil, err
			}
			var flags byte
			if ch.newV != nil {
				flags |= 1
			}
			if ch.oldV != nil {
				flags |= 2
			}
			out := binary.BigEndian.AppendUint32([]byte{flags}, uint32(len(nb)))
			return append(append(out, nb...), ob...), nil
		},
		de: func(topic string, b []byte) (any, error) {
			if len(b) < 5 || b[0]&^3 != 0 {
				return nil, fmt.Errorf("streams: table repartition record of %d bytes is not a change", len(b))
			}
			flags, n := b[0], binary.BigEndian.Uint32(b[1:5])
			if uint64(n) > uint64(len(b)-5) {
				return nil, fmt.Errorf("streams: table repartition record: new value of %d bytes in %d", n, len(b)-5)
			}
			var ch change
			var err error
			if flags&1 != 0 {
				if ch.newV, err = inner.de(topic, b[5:5+n]); err != nil {
					return nil, err
				}
			}
			if flags&2 != 0 {
				if ch.oldV, err = inner.de(topic, b[5+n:]); err != nil {
					return nil, err
				}
			}
			return ch, nil
		},
	}
}
