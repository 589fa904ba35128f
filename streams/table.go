package streams

// Table is a changelog table, Kafka Streams' KTable<K, V>: the latest
// value per key, where a record with a null value deletes the key. Table
// operators pass changes (new and previous value) downstream.
type Table[K, V any] struct {
	b     *Builder
	n     *node
	ks    Serde[K]
	vs    Serde[V]
	store string // "" when not materialized
	win   *windowInfo
}

// windowInfo marks a windowed table (keys are Windowed[K]) and carries what
// Suppress(UntilWindowCloses) needs.
type windowInfo struct {
	grace int64
}

// StoreName is the table's state store ("" if it is not materialized).
func (t Table[K, V]) StoreName() string { return t.store }

// NewTable reads topic as a Table (Kafka Streams' builder.table). Its
// store is <topic>-STATE-STORE-<index> unless Materialized names it.
// Options: Named, Materialized, WithBackend, WithLoggingDisabled,
// WithTimestampExtractor.
func NewTable[K, V any](b *Builder, topic string, keySerde Serde[K], valueSerde Serde[V], options ...Option) Table[K, V] {
	o := b.collect("NewTable", options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled", "WithTimestampExtractor")
	store := o.store
	if store == "" {
		store = b.newStoreName(topic + "-")
	}
	src := b.addNode(&node{
		name:     b.newName("KSTREAM-SOURCE-"),
		topics:   []string{topic},
		keySerde: eraseSerde(keySerde),
		valSerde: eraseSerde(valueSerde),
		tsx:      o.tsx,
	})
	return materializeTable[K, V](b, o.nameOr(b, "KTABLE-SOURCE-"), src, store, o, keySerde, valueSerde, func(r record) change {
		return change{newV: r.value}
	})
}

// materializeTable adds a processor that keeps a table in a key-value
// store: it reads the previous value, writes the new one and forwards the
// change.
func materializeTable[K, V any](b *Builder, name string, parent *node, store string, o *opts, ks Serde[K], vs Serde[V], toChange func(record) change) Table[K, V] {
	b.addStore(&storeSpec{
		name: store, kind: kindKeyValue, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(ks), valSerde: eraseSerde(vs), queryable: true,
	})
	n := b.addNode(&node{name: name, stores: []string{store}, newProc: func() proc {
		return &tableStoreProc{store: store, toChange: toChange}
	}}, parent)
	return Table[K, V]{b: b, n: n, ks: ks, vs: vs, store: store}
}

type tableStoreProc struct {
	c        *pctx
	s        kvView
	store    string
	toChange func(record) change
}

func (p *tableStoreProc) init(c *pctx) { p.c = c; p.s = kvView{c.store(p.store)} }

func (p *tableStoreProc) process(r record) {
	if r.key == nil {
		return // a table cannot hold a null key; Kafka Streams skips it
	}
	ch := p.toChange(r)
	// A delete of an absent key is still forwarded (and logged), as Kafka
	// Streams' KTableSource does.
	old, _, _ := p.s.get(r.key)
	ts := r.ts
	if ch.newV == nil {
		p.s.delete(r.key)
	} else {
		p.s.put(r.key, ch.newV, ts)
	}
	p.c.forward(record{key: r.key, value: change{newV: ch.newV, oldV: old}, ts: ts, headers: r.headers})
}

// kvView reads and writes a DSL key-value store in terms of boxed keys and
// values (timestamped values).
type kvView struct{ s *storeInst }

func (v kvView) keyBytes(k any) []byte {
	kb, err := v.s.spec.keySerde.ser(v.topic(), k)
	if err != nil {
		panic(processingError{err})
	}
	return kb
}

func (v kvView) topic() string {
	if v.s.changelog != "" {
		return v.s.changelog
	}
	return v.s.spec.name
}

func (v kvView) get(k any) (any, int64, bool) {
	b, ok := v.s.get(v.keyBytes(k))
	if !ok {
		return nil, 0, false
	}
	ts, vb := splitTsValue(b)
	val, err := v.s.spec.valSerde.de(v.topic(), vb)
	if err != nil {
		panic(storeError{err})
	}
	return val, ts, true
}

func (v kvView) put(k, val any, ts int64) {
	vb, err := v.s.spec.valSerde.ser(v.topic(), val)
	if err != nil {
		panic(processingError{err})
	}
	v.s.put(v.keyBytes(k), tsValue(ts, vb))
}

func (v kvView) delete(k any) { v.s.put(v.keyBytes(k), nil) }

// ensureStore returns t materialized: t itself if it has a store, else t
// followed by a processor that materializes it (a lookup join needs one).
func (t Table[K, V]) ensureStore() Table[K, V] {
	if t.store != "" {
		return t
	}
	b := t.b
	out := materializeTable[K, V](b, b.newName("KTABLE-MATERIALIZE-"), t.n, b.newStoreName("KTABLE-MATERIALIZE-"), &opts{}, t.ks, t.vs,
		func(r record) change { return r.value.(change) })
	out.win = t.win
	return out
}

// maybeMaterialize follows a table operator with a store when the options
// ask for one.
func (t Table[K, V]) maybeMaterialize(name string, o *opts) Table[K, V] {
	if o.store == "" {
		return t
	}
	out := materializeTable[K, V](t.b, name+"-MATERIALIZE", t.n, o.store, o, t.ks, t.vs,
		func(r record) change { return r.value.(change) })
	out.win = t.win
	return out
}

// Filter keeps the keys whose value pred accepts; a value that stops
// passing becomes a delete downstream (Kafka Streams' KTable.filter).
// Options: Named, Materialized, WithBackend, WithLoggingDisabled.
func (t Table[K, V]) Filter(pred func(K, V) bool, options ...Option) Table[K, V] {
	return t.filter("Filter", pred, false, options)
}

// FilterNot keeps the keys whose value pred rejects. Options as Filter.
func (t Table[K, V]) FilterNot(pred func(K, V) bool, options ...Option) Table[K, V] {
	return t.filter("FilterNot", pred, true, options)
}

func (t Table[K, V]) filter(op string, pred func(K, V) bool, not bool, options []Option) Table[K, V] {
	o := t.b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	name := o.nameOr(t.b, "KTABLE-FILTER-")
	keep := func(k, v any) any {
		if v == nil || pred(as[K](k), as[V](v)) == not {
			return nil
		}
		return v
	}
	n := t.b.stateless(name, t.n, func(c *pctx, r record) {
		ch := r.value.(change)
		nv, ov := keep(r.key, ch.newV), keep(r.key, ch.oldV)
		if nv == nil && ov == nil {
			return
		}
		c.forward(record{key: r.key, value: change{newV: nv, oldV: ov}, ts: r.ts, headers: r.headers})
	})
	return Table[K, V]{b: t.b, n: n, ks: t.ks, vs: t.vs, win: t.win}.maybeMaterialize(name, o)
}

// TableMapValues replaces each value of t (Kafka Streams'
// KTable.mapValues). Options: Named, Materialized, WithBackend,
// WithLoggingDisabled, WithValueSerde.
func TableMapValues[K, V, VR any](t Table[K, V], fn func(K, V) VR, options ...Option) Table[K, VR] {
	o := t.b.collect("TableMapValues", options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled", "WithValueSerde")
	name := o.nameOr(t.b, "KTABLE-MAPVALUES-")
	m := func(k, v any) any {
		if v == nil {
			return nil
		}
		return fn(as[K](k), as[V](v))
	}
	n := t.b.stateless(name, t.n, func(c *pctx, r record) {
		ch := r.value.(change)
		c.forward(record{key: r.key, value: change{newV: m(r.key, ch.newV), oldV: m(r.key, ch.oldV)}, ts: r.ts, headers: r.headers})
	})
	out := Table[K, VR]{b: t.b, n: n, ks: t.ks, vs: serdeOr(t.b, "TableMapValues", o.valSerde, defaultSerde[VR]()), win: t.win}
	return out.maybeMaterialize(name, o)
}

// ToStream turns the table's changes into a stream of the new values; a
// delete becomes a record with a null value (the zero V in user functions;
// a tombstone when written with To). Options: Named.
func (t Table[K, V]) ToStream(options ...Option) Stream[K, V] {
	o := t.b.collect("ToStream", options, "Named")
	n := t.b.stateless(o.nameOr(t.b, "KTABLE-TOSTREAM-"), t.n, func(c *pctx, r record) {
		c.forward(record{key: r.key, value: r.value.(change).newV, ts: r.ts, headers: r.headers})
	})
	return Stream[K, V]{b: t.b, n: n, ks: t.ks, vs: t.vs}
}

// GlobalTable is a table fully replicated to every instance, Kafka
// Streams' GlobalKTable: every instance reads all partitions of its topic,
// so a stream can join it by any key without co-partitioning.
type GlobalTable[K, V any] struct {
	b     *Builder
	store string
	ks    Serde[K]
	vs    Serde[V]
}

// StoreName is the global table's store.
func (g GlobalTable[K, V]) StoreName() string { return g.store }

// NewGlobalTable reads topic as a GlobalTable (Kafka Streams'
// builder.globalTable). Its store is not changelogged: the topic is its
// changelog. Options: Named, Materialized, WithBackend,
// WithTimestampExtractor.
func NewGlobalTable[K, V any](b *Builder, topic string, keySerde Serde[K], valueSerde Serde[V], options ...Option) GlobalTable[K, V] {
	o := b.collect("NewGlobalTable", options, "Named", "Materialized", "WithBackend", "WithTimestampExtractor")
	store := o.store
	if store == "" {
		store = b.newStoreName(topic + "-")
	}
	src := b.addNode(&node{
		name: b.newName("KSTREAM-SOURCE-"), topics: []string{topic}, global: true,
		keySerde: eraseSerde(keySerde), valSerde: eraseSerde(valueSerde), tsx: o.tsx,
	})
	b.addStore(&storeSpec{
		name: store, kind: kindKeyValue, backend: o.backendOr(Pebble), global: true,
		keySerde: eraseSerde(keySerde), valSerde: eraseSerde(valueSerde), queryable: true,
	})
	b.addNode(&node{name: o.nameOr(b, "KTABLE-SOURCE-"), global: true, stores: []string{store}, newProc: func() proc {
		return &tableStoreProc{store: store, toChange: func(r record) change { return change{newV: r.value} }}
	}}, src)
	return GlobalTable[K, V]{b: b, store: store, ks: keySerde, vs: valueSerde}
}
