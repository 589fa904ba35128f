package streams

// JoinTable is the inner stream-table join (Kafka Streams'
// KStream.join(KTable, ValueJoiner)): each stream record whose key is in
// the table gives joiner(value, tableValue). Table updates emit nothing.
// The stream and the table must be co-partitioned. Options: Named.
func JoinTable[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], joiner func(V, VT) VR, options ...Option) Stream[K, VR] {
	return streamTableJoin[K, V, VT, VR](s, t, false, func(v, tv any) any { return joiner(as[V](v), as[VT](tv)) }, options)
}

// LeftJoinTable is the left stream-table join: a stream record whose key
// is not in the table gives joiner(value, nil).
func LeftJoinTable[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], joiner func(V, *VT) VR, options ...Option) Stream[K, VR] {
	return streamTableJoin[K, V, VT, VR](s, t, true, func(v, tv any) any { return joiner(as[V](v), ptrOf[VT](tv)) }, options)
}

func streamTableJoin[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], left bool, joiner func(v, tv any) any, options []Option) Stream[K, VR] {
	b := s.b
	o := b.collect("JoinTable", options, "Named")
	s = coPartitioned(s)
	t = t.ensureStore()
	store := t.store
	n := b.addNode(&node{name: o.nameOr(b, "KSTREAM-JOIN-"), stores: []string{store}, newProc: func() proc {
		return &lookupJoinProc{store: store, left: left, joiner: joiner, key: func(k, _ any) any { return k }}
	}}, s.n)
	return Stream[K, VR]{b: b, n: n, ks: s.ks, vs: defaultSerde[VR]()}
}

// JoinGlobal is the inner stream-globaltable join (Kafka Streams'
// KStream.join(GlobalKTable, KeyValueMapper, ValueJoiner)): the global
// table is looked up by keyOf(key, value), so no co-partitioning is needed.
func JoinGlobal[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], keyOf func(K, V) KG, joiner func(V, VG) VR, options ...Option) Stream[K, VR] {
	return globalJoin[K, V, KG, VG, VR](s, g, keyOf, false, func(v, gv any) any { return joiner(as[V](v), as[VG](gv)) }, options)
}

// LeftJoinGlobal is the left stream-globaltable join: a record whose
// lookup key is absent gives joiner(value, nil).
func LeftJoinGlobal[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], keyOf func(K, V) KG, joiner func(V, *VG) VR, options ...Option) Stream[K, VR] {
	return globalJoin[K, V, KG, VG, VR](s, g, keyOf, true, func(v, gv any) any { return joiner(as[V](v), ptrOf[VG](gv)) }, options)
}

func globalJoin[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], keyOf func(K, V) KG, left bool, joiner func(v, gv any) any, options []Option) Stream[K, VR] {
	b := s.b
	o := b.collect("JoinGlobal", options, "Named")
	n := b.addNode(&node{name: o.nameOr(b, "KSTREAM-JOIN-"), newProc: func() proc {
		return &lookupJoinProc{store: g.store, left: left, joiner: joiner, key: func(k, v any) any { return keyOf(as[K](k), as[V](v)) }}
	}}, s.n)
	n.globalStores = []string{g.store}
	return Stream[K, VR]{b: b, n: n, ks: s.ks, vs: defaultSerde[VR](), keyChanged: s.keyChanged}
}

// lookupJoinProc joins stream records with a key-value store's values.
type lookupJoinProc struct {
	c      *pctx
	s      kvView
	store  string
	left   bool
	joiner func(v, tv any) any
	key    func(k, v any) any
}

func (p *lookupJoinProc) init(c *pctx) { p.c = c; p.s = kvView{c.store(p.store)} }

func (p *lookupJoinProc) process(r record) {
	if r.value == nil {
		p.c.t.metrics.skipped.Add(1)
		return
	}
	lk := p.key(r.key, r.value)
	var tv any
	found := false
	if r.key != nil && lk != nil {
		tv, _, found = p.s.get(lk)
	}
	if !found && !p.left {
		return
	}
	p.c.forward(record{key: r.key, value: p.joiner(r.value, tv), ts: r.ts, headers: r.headers})
}

// TableJoin is the inner table-table join (Kafka Streams'
// KTable.join(KTable, ValueJoiner)): the result holds joiner(l, r) for
// keys in both tables and changes when either side does. The tables must
// be co-partitioned. Options: Named, Materialized, WithBackend,
// WithLoggingDisabled.
func TableJoin[K, V1, V2, VR any](l Table[K, V1], r Table[K, V2], joiner func(V1, V2) VR, options ...Option) Table[K, VR] {
	return tableJoin[K, V1, V2, VR](l, r, innerJoin, func(a, b any) any { return joiner(as[V1](a), as[V2](b)) }, options)
}

// TableLeftJoin is the left table-table join: keys of the left table
// without a right value give joiner(l, nil).
func TableLeftJoin[K, V1, V2, VR any](l Table[K, V1], r Table[K, V2], joiner func(V1, *V2) VR, options ...Option) Table[K, VR] {
	return tableJoin[K, V1, V2, VR](l, r, leftJoin, func(a, b any) any { return joiner(as[V1](a), ptrOf[V2](b)) }, options)
}

// TableOuterJoin is the outer table-table join: keys in either table.
func TableOuterJoin[K, V1, V2, VR any](l Table[K, V1], r Table[K, V2], joiner func(*V1, *V2) VR, options ...Option) Table[K, VR] {
	return tableJoin[K, V1, V2, VR](l, r, outerJoin, func(a, b any) any { return joiner(ptrOf[V1](a), ptrOf[V2](b)) }, options)
}

func tableJoin[K, V1, V2, VR any](l Table[K, V1], r Table[K, V2], kind joinKind, joiner func(a, b any) any, options []Option) Table[K, VR] {
	b := l.b
	o := b.collect("TableJoin", options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	l, r = l.ensureStore(), r.ensureStore()
	name := o.nameOr(b, "KTABLE-JOINTHIS-")
	stores := []string{l.store, r.store}
	ln := b.addNode(&node{name: name, stores: stores, newProc: func() proc {
		return &tableJoinProc{other: r.store, kind: kind, thisLeft: true, joiner: joiner}
	}}, l.n)
	rn := b.addNode(&node{name: b.newName("KTABLE-JOINOTHER-"), stores: stores, newProc: func() proc {
		return &tableJoinProc{other: l.store, kind: kind, thisLeft: false, joiner: joiner}
	}}, r.n)
	merge := b.addNode(&node{name: b.newName("KTABLE-MERGE-"), newProc: func() proc {
		return &funcProc{f: func(c *pctx, r record) { c.forward(r) }}
	}}, ln, rn)
	out := Table[K, VR]{b: b, n: merge, ks: l.ks, vs: defaultSerde[VR]()}
	return out.maybeMaterialize(name, o)
}

// tableJoinProc handles one side's changes of a table-table join by
// looking up the other side's store.
type tableJoinProc struct {
	c        *pctx
	s        kvView
	other    string
	kind     joinKind
	thisLeft bool
	joiner   func(l, r any) any
}

func (p *tableJoinProc) init(c *pctx) { p.c = c; p.s = kvView{c.store(p.other)} }

// join computes the joined value of this side's value v against the other
// side's ov (nil = absent), or nil if the join has no row for them.
func (p *tableJoinProc) join(v, ov any) any {
	l, r := v, ov
	if !p.thisLeft {
		l, r = ov, v
	}
	switch {
	case l != nil && r != nil:
	case p.kind == outerJoin && (l != nil || r != nil):
	case p.kind == leftJoin && l != nil:
	default:
		return nil
	}
	return p.joiner(l, r)
}

func (p *tableJoinProc) process(r record) {
	ch := r.value.(change)
	ov, ots, _ := p.s.get(r.key)
	nv, old := p.join(ch.newV, ov), p.join(ch.oldV, ov)
	if nv == nil && old == nil {
		return
	}
	p.c.forward(record{key: r.key, value: change{newV: nv, oldV: old}, ts: max(r.ts, ots), headers: r.headers})
}
