package streams

// GroupedStream is a stream grouped by key for aggregation, Kafka Streams'
// KGroupedStream. Records with a null key or a null value are skipped by
// its aggregations, as in Kafka Streams.
type GroupedStream[K, V any] struct {
	s Stream[K, V]
	// name bases the repartition topic when the grouping needs one
	// (Grouped.as); "" bases it on the store name.
	name string
}

// GroupByKey groups by the current key; if an upstream operator changed
// the key, the aggregation first repartitions. Options: Named (the
// repartition topic's base name), WithKeySerde, WithValueSerde.
func (s Stream[K, V]) GroupByKey(options ...Option) GroupedStream[K, V] {
	o := s.b.collect("GroupByKey", options, "Named", "WithKeySerde", "WithValueSerde")
	s.ks = serdeOr(s.b, "GroupByKey", o.keySerde, s.ks)
	s.vs = serdeOr(s.b, "GroupByKey", o.valSerde, s.vs)
	return GroupedStream[K, V]{s: s, name: o.name}
}

// GroupBy groups by a new key, fn(key, value); the aggregation
// repartitions. Options: Named, WithKeySerde, WithValueSerde.
func GroupBy[K, V, KR any](s Stream[K, V], fn func(K, V) KR, options ...Option) GroupedStream[KR, V] {
	o := s.b.collect("GroupBy", options, "Named", "WithKeySerde", "WithValueSerde")
	sel := s.b.stateless(s.b.newName("KSTREAM-KEY-SELECT-"), s.n, func(c *pctx, r record) {
		c.forward(record{key: fn(as[K](r.key), as[V](r.value)), value: r.value, ts: r.ts, headers: r.headers})
	})
	out := Stream[KR, V]{b: s.b, n: sel, keyChanged: true,
		ks: serdeOr(s.b, "GroupBy", o.keySerde, defaultSerde[KR]()),
		vs: serdeOr(s.b, "GroupBy", o.valSerde, s.vs)}
	return GroupedStream[KR, V]{s: out, name: o.name}
}

// input returns the stream to aggregate: repartitioned if needed.
func (g GroupedStream[K, V]) input(store string) Stream[K, V] {
	if !g.s.keyChanged {
		return g.s
	}
	base := g.name
	if base == "" {
		base = store
	}
	return repartition(g.s, base, g.s.ks, g.s.vs, 0, nil)
}

// Count counts records per key into a Table (Kafka Streams' count).
// Options: Named, Materialized, WithBackend, WithLoggingDisabled.
func (g GroupedStream[K, V]) Count(options ...Option) Table[K, int64] {
	return aggregate(g, "Count", "KSTREAM-AGGREGATE-", func() int64 { return 0 },
		func(_ K, _ V, agg int64, _ bool) int64 { return agg + 1 }, Int64(), options)
}

// Reduce combines each key's values with fn (the first value starts the
// aggregate). Options: Named, Materialized, WithBackend,
// WithLoggingDisabled.
func (g GroupedStream[K, V]) Reduce(fn func(agg, v V) V, options ...Option) Table[K, V] {
	return aggregate(g, "Reduce", "KSTREAM-REDUCE-", func() V { var z V; return z },
		func(_ K, v V, agg V, first bool) V {
			if first {
				return v
			}
			return fn(agg, v)
		}, g.s.vs, options)
}

// Aggregate folds each key's values into an aggregate starting from
// init() (Kafka Streams' aggregate(initializer, aggregator)). Options:
// Named, Materialized, WithBackend, WithLoggingDisabled, WithValueSerde
// (the aggregate's serde).
func Aggregate[K, V, VA any](g GroupedStream[K, V], init func() VA, adder func(K, V, VA) VA, options ...Option) Table[K, VA] {
	o := peekOpts(options)
	vs := serdeOr(g.s.b, "Aggregate", o.valSerde, defaultSerde[VA]())
	return aggregate(g, "Aggregate", "KSTREAM-AGGREGATE-", init,
		func(k K, v V, agg VA, _ bool) VA { return adder(k, v, agg) }, vs, stripOpt(options, "WithValueSerde"))
}

// stripOpt drops options already consumed by a wrapper.
func stripOpt(in []Option, name string) []Option {
	var out []Option
	for _, x := range in {
		o := &opts{}
		x.apply(o)
		if !o.used[name] {
			out = append(out, x)
		}
	}
	return out
}

func aggregate[K, V, VA any](g GroupedStream[K, V], op, prefix string, init func() VA, add func(K, V, VA, bool) VA, vs Serde[VA], options []Option) Table[K, VA] {
	b := g.s.b
	o := b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	store := o.store
	if store == "" {
		store = b.newStoreName(prefix)
	}
	name := o.nameOr(b, prefix)
	in := g.input(store)
	b.addStore(&storeSpec{name: store, kind: kindKeyValue, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(g.s.ks), valSerde: eraseSerde(vs), queryable: true})
	n := b.addNode(&node{name: name, stores: []string{store}, newProc: func() proc {
		return &aggProc[K, V, VA]{store: store, initFn: init, add: add}
	}}, in.n)
	return Table[K, VA]{b: b, n: n, ks: g.s.ks, vs: vs, store: store}
}

type aggProc[K, V, VA any] struct {
	c      *pctx
	s      kvView
	store  string
	initFn func() VA
	add    func(K, V, VA, bool) VA
}

func (p *aggProc[K, V, VA]) init(c *pctx) { p.c = c; p.s = kvView{c.store(p.store)} }

func (p *aggProc[K, V, VA]) process(r record) {
	if r.key == nil || r.value == nil {
		p.c.t.metrics.skipped.Add(1)
		return
	}
	old, oldTs, had := p.s.get(r.key)
	agg := p.initFn()
	if had {
		agg = old.(VA)
	}
	nv := p.add(r.key.(K), r.value.(V), agg, !had)
	ts := max(r.ts, oldTs)
	p.s.put(r.key, nv, ts)
	p.c.forward(record{key: r.key, value: change{newV: nv, oldV: old}, ts: ts, headers: r.headers})
}
