package streams

// TimeWindowedStream is a grouped stream cut into time windows, Kafka
// Streams' TimeWindowedKStream.
type TimeWindowedStream[K, V any] struct {
	g GroupedStream[K, V]
	w TimeWindows
}

// WindowedBy cuts the grouped stream into time windows, tumbling or
// hopping (Kafka Streams' groupedStream.windowedBy(TimeWindows)). It is a
// function, not a method, because the windowed results are keyed by
// Windowed[K] and Go forbids a method chain instantiating its own type
// with a growing key type.
func WindowedBy[K, V any](g GroupedStream[K, V], w TimeWindows) TimeWindowedStream[K, V] {
	if err := w.validate(); err != nil {
		g.s.b.errs = append(g.s.b.errs, err)
	}
	return TimeWindowedStream[K, V]{g: g, w: w}
}

// Count counts records per key and window. Options: Named, Materialized,
// WithBackend, WithLoggingDisabled.
func (t TimeWindowedStream[K, V]) Count(options ...Option) Table[Windowed[K], int64] {
	return windowedAggregate(t, "Count", "KSTREAM-AGGREGATE-", func() int64 { return 0 },
		func(_ K, _ V, agg int64, _ bool) int64 { return agg + 1 }, Int64(), options)
}

// Reduce combines values per key and window. Options as Count.
func (t TimeWindowedStream[K, V]) Reduce(fn func(agg, v V) V, options ...Option) Table[Windowed[K], V] {
	return windowedAggregate(t, "Reduce", "KSTREAM-REDUCE-", func() V { var z V; return z },
		func(_ K, v V, agg V, first bool) V {
			if first {
				return v
			}
			return fn(agg, v)
		}, t.g.s.vs, options)
}

// WindowedAggregate folds values per key and window, starting each window
// from init(). Options as Count, plus WithValueSerde.
func WindowedAggregate[K, V, VA any](t TimeWindowedStream[K, V], init func() VA, adder func(K, V, VA) VA, options ...Option) Table[Windowed[K], VA] {
	o := peekOpts(options)
	vs := serdeOr(t.g.s.b, "WindowedAggregate", o.valSerde, defaultSerde[VA]())
	return windowedAggregate(t, "WindowedAggregate", "KSTREAM-AGGREGATE-", init,
		func(k K, v V, agg VA, _ bool) VA { return adder(k, v, agg) }, vs, stripOpt(options, "WithValueSerde"))
}

func windowedAggregate[K, V, VA any](t TimeWindowedStream[K, V], op, prefix string, init func() VA, add func(K, V, VA, bool) VA, vs Serde[VA], options []Option) Table[Windowed[K], VA] {
	b := t.g.s.b
	o := b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	store := o.store
	if store == "" {
		store = b.newStoreName(prefix)
	}
	name := o.nameOr(b, prefix)
	in := t.g.input(store)
	size, grace := t.w.Size.Milliseconds(), t.w.Grace.Milliseconds()
	retention := size + grace
	b.addStore(&storeSpec{name: store, kind: kindWindow, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(t.g.s.ks), valSerde: eraseSerde(vs), retention: retention, segment: segmentInterval(retention),
		windowed: true, winSize: size, queryable: true})
	w := t.w
	n := b.addNode(&node{name: name, stores: []string{store}, newProc: func() proc {
		return &windowAggProc[K, V, VA]{store: store, initFn: init, add: add, w: w, grace: grace}
	}}, in.n)
	return Table[Windowed[K], VA]{b: b, n: n, ks: defaultSerde[Windowed[K]](), vs: vs, store: store, win: &windowInfo{grace: grace}}
}

type windowAggProc[K, V, VA any] struct {
	c      *pctx
	s      segmented
	store  string
	initFn func() VA
	add    func(K, V, VA, bool) VA
	w      TimeWindows
	grace  int64
}

func (p *windowAggProc[K, V, VA]) init(c *pctx) { p.c = c; p.s = segmented{c.store(p.store)} }

func (p *windowAggProc[K, V, VA]) process(r record) {
	t := p.c.t
	if r.key == nil || r.value == nil {
		t.metrics.skipped.Add(1)
		return
	}
	spec := p.s.s.spec
	topic := p.s.s.changelog
	kb, err := spec.keySerde.ser(topic, r.key)
	if err != nil {
		panic(processingError{err})
	}
	closeTime := t.streamTime - p.grace
	for _, win := range p.w.windowsFor(r.ts) {
		if win.End <= closeTime {
			// KIP-328: a window closes at end + grace in stream time.
			t.metrics.dropped.Add(1)
			continue
		}
		var old any
		var oldTs int64
		had := false
		p.s.fetch(kb, win.Start, win.Start, func(_, _ int64, v []byte) bool {
			ts, vb := splitTsValue(v)
			o, err := spec.valSerde.de(topic, vb)
			if err != nil {
				panic(storeError{err})
			}
			old, oldTs, had = o, ts, true
			return false
		})
		agg := p.initFn()
		if had {
			agg = old.(VA)
		}
		nv := p.add(r.key.(K), r.value.(V), agg, !had)
		vb, err := spec.valSerde.ser(topic, nv)
		if err != nil {
			panic(processingError{err})
		}
		ts := max(r.ts, oldTs)
		p.s.put(kb, win.Start, 0, tsValue(ts, vb))
		p.c.forward(record{key: Windowed[K]{Key: r.key.(K), Window: win}, value: change{newV: nv, oldV: old}, ts: ts, headers: r.headers})
	}
	p.s.expire(t.streamTime)
}

// SessionWindowedStream is a grouped stream cut into sessions, Kafka
// Streams' SessionWindowedKStream.
type SessionWindowedStream[K, V any] struct {
	g GroupedStream[K, V]
	w SessionWindows
}

// WindowedBySession cuts the grouped stream into session windows (Kafka
// Streams' groupedStream.windowedBy(SessionWindows)).
func WindowedBySession[K, V any](g GroupedStream[K, V], w SessionWindows) SessionWindowedStream[K, V] {
	if w.InactivityGap <= 0 || w.Grace < 0 {
		g.s.b.fail("SessionWindows gap %v grace %v: want gap > 0, grace >= 0", w.InactivityGap, w.Grace)
	}
	return SessionWindowedStream[K, V]{g: g, w: w}
}

// Count counts records per key and session. Options: Named, Materialized,
// WithBackend, WithLoggingDisabled.
func (s SessionWindowedStream[K, V]) Count(options ...Option) Table[Windowed[K], int64] {
	return sessionAggregate(s, "Count", "KSTREAM-AGGREGATE-", func() int64 { return 0 },
		func(_ K, _ V, agg int64) int64 { return agg + 1 },
		func(_ K, a, b int64) int64 { return a + b }, Int64(), options)
}

// Reduce combines values per key and session; merging sessions combines
// their aggregates with fn too. Options as Count.
func (s SessionWindowedStream[K, V]) Reduce(fn func(agg, v V) V, options ...Option) Table[Windowed[K], V] {
	return sessionReduce(s, fn, options)
}

func sessionReduce[K, V any](s SessionWindowedStream[K, V], fn func(agg, v V) V, options []Option) Table[Windowed[K], V] {
	// A reduce has no initial value: the first value starts the session.
	return sessionAggregateFirst(s, "Reduce", "KSTREAM-REDUCE-",
		func(_ K, v V, agg V, first bool) V {
			if first {
				return v
			}
			return fn(agg, v)
		},
		func(_ K, a, b V) V { return fn(a, b) }, s.g.s.vs, options)
}

// SessionAggregate folds values per key and session from init(). A record
// that joins or bridges sessions starts from init() and folds each of them
// in, in end-time order, with merger, then adds itself (as Kafka Streams'
// session aggregation does). Options as Count, plus WithValueSerde.
func SessionAggregate[K, V, VA any](s SessionWindowedStream[K, V], init func() VA, adder func(K, V, VA) VA, merger func(K, VA, VA) VA, options ...Option) Table[Windowed[K], VA] {
	o := peekOpts(options)
	vs := serdeOr(s.g.s.b, "SessionAggregate", o.valSerde, defaultSerde[VA]())
	return sessionAggregate(s, "SessionAggregate", "KSTREAM-AGGREGATE-", init, adder, merger, vs, stripOpt(options, "WithValueSerde"))
}

func sessionAggregate[K, V, VA any](s SessionWindowedStream[K, V], op, prefix string, init func() VA, adder func(K, V, VA) VA, merger func(K, VA, VA) VA, vs Serde[VA], options []Option) Table[Windowed[K], VA] {
	return sessionAggregateFrom(s, op, prefix, init, func(k K, v V, agg VA, first bool) VA {
		if first {
			agg = init()
		}
		return adder(k, v, agg)
	}, merger, vs, options)
}

func sessionAggregateFirst[K, V, VA any](s SessionWindowedStream[K, V], op, prefix string, add func(K, V, VA, bool) VA, merger func(K, VA, VA) VA, vs Serde[VA], options []Option) Table[Windowed[K], VA] {
	return sessionAggregateFrom(s, op, prefix, nil, add, merger, vs, options)
}

// sessionAggregateFrom builds a session aggregation. With init, merging
// sessions starts from init() and folds every merged session in with
// merger (Kafka Streams' KStreamSessionWindowAggregate); without it (a
// reduce) the first merged session is the start.
func sessionAggregateFrom[K, V, VA any](s SessionWindowedStream[K, V], op, prefix string, init func() VA, add func(K, V, VA, bool) VA, merger func(K, VA, VA) VA, vs Serde[VA], options []Option) Table[Windowed[K], VA] {
	b := s.g.s.b
	o := b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	store := o.store
	if store == "" {
		store = b.newStoreName(prefix)
	}
	name := o.nameOr(b, prefix)
	in := s.g.input(store)
	gap, grace := s.w.InactivityGap.Milliseconds(), s.w.Grace.Milliseconds()
	retention := gap + grace
	b.addStore(&storeSpec{name: store, kind: kindSession, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(s.g.s.ks), valSerde: eraseSerde(vs), retention: retention, segment: segmentInterval(retention),
		windowed: true, queryable: true})
	n := b.addNode(&node{name: name, stores: []string{store}, newProc: func() proc {
		return &sessionAggProc[K, V, VA]{store: store, initAgg: init, add: add, merge: merger, gap: gap, grace: grace}
	}}, in.n)
	return Table[Windowed[K], VA]{b: b, n: n, ks: defaultSerde[Windowed[K]](), vs: vs, store: store, win: &windowInfo{grace: grace}}
}

// sessionAggProc keeps sessions in a segmented store keyed by session end
// (t1) and start (t2).
type sessionAggProc[K, V, VA any] struct {
	c          *pctx
	s          segmented
	store      string
	initAgg    func() VA // nil for a reduce
	add        func(K, V, VA, bool) VA
	merge      func(K, VA, VA) VA
	gap, grace int64
}

func (p *sessionAggProc[K, V, VA]) init(c *pctx) { p.c = c; p.s = segmented{c.store(p.store)} }

func (p *sessionAggProc[K, V, VA]) process(r record) {
	t := p.c.t
	if r.key == nil || r.value == nil {
		t.metrics.skipped.Add(1)
		return
	}
	spec := p.s.s.spec
	topic := p.s.s.changelog
	kb, err := spec.keySerde.ser(topic, r.key)
	if err != nil {
		panic(processingError{err})
	}
	k := r.key.(K)
	type sess struct {
		w   Window
		agg VA
	}
	var overlapping []sess
	// Sessions ending at or after ts - gap and starting at or before
	// ts + gap overlap the new record's session [ts, ts].
	p.s.fetch(kb, r.ts-p.gap, max(t.streamTime, r.ts), func(end, start int64, v []byte) bool {
		if start > r.ts+p.gap {
			return true
		}
		_, vb := splitTsValue(v)
		a, err := spec.valSerde.de(topic, vb)
		if err != nil {
			panic(storeError{err})
		}
		overlapping = append(overlapping, sess{w: Window{Start: start, End: end}, agg: a.(VA)})
		return true
	})
	merged := Window{Start: r.ts, End: r.ts}
	var agg VA
	first := true
	if p.initAgg != nil && len(overlapping) > 0 {
		agg, first = p.initAgg(), false
	}
	for _, s := range overlapping {
		merged.Start = min(merged.Start, s.w.Start)
		merged.End = max(merged.End, s.w.End)
		if first {
			agg, first = s.agg, false
		} else {
			agg = p.merge(k, agg, s.agg)
		}
	}
	if merged.End < t.streamTime-p.grace {
		t.metrics.dropped.Add(1)
		return
	}
	agg = p.add(k, r.value.(V), agg, first)
	for _, s := range overlapping {
		p.s.put(kb, s.w.End, s.w.Start, nil)
		if s.w != merged {
			p.c.forward(record{key: Windowed[K]{Key: k, Window: s.w}, value: change{oldV: s.agg}, ts: r.ts, headers: r.headers})
		}
	}
	vb, err := spec.valSerde.ser(topic, agg)
	if err != nil {
		panic(processingError{err})
	}
	p.s.put(kb, merged.End, merged.Start, tsValue(r.ts, vb))
	var old any
	for _, s := range overlapping {
		if s.w == merged {
			old = s.agg
		}
	}
	p.c.forward(record{key: Windowed[K]{Key: k, Window: merged}, value: change{newV: agg, oldV: old}, ts: r.ts, headers: r.headers})
	p.s.expire(t.streamTime)
}
