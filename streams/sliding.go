package streams

import (
	"fmt"
	"sort"
	"time"
)

// SlidingWindows are windows of a fixed time difference that slide with
// the records (KIP-450): a window [start, start+TimeDifference], both ends
// inclusive, exists for every distinct set of a key's records that fit in
// such an interval. Each record has its left window, ending at its
// timestamp, and a right window starting just after it when later records
// fall there. Records with a timestamp below TimeDifference share the
// window [0, TimeDifference]. A window closes at its end + Grace in stream
// time.
type SlidingWindows struct {
	TimeDifference time.Duration // the largest time difference between records of one window
	Grace          time.Duration // how long after its end a window still takes records
}

// SlidingWindowsOfTimeDifferenceAndGrace returns sliding windows (Kafka
// Streams' SlidingWindows.ofTimeDifferenceAndGrace).
func SlidingWindowsOfTimeDifferenceAndGrace(diff, grace time.Duration) SlidingWindows {
	return SlidingWindows{TimeDifference: diff, Grace: grace}
}

// SlidingWindowsOfTimeDifferenceWithNoGrace returns sliding windows with
// no grace period.
func SlidingWindowsOfTimeDifferenceWithNoGrace(diff time.Duration) SlidingWindows {
	return SlidingWindows{TimeDifference: diff}
}

// SlidingWindowedStream is a grouped stream cut into sliding windows
// (Kafka Streams' TimeWindowedKStream over SlidingWindows).
type SlidingWindowedStream[K, V any] struct {
	g GroupedStream[K, V]
	w SlidingWindows
}

// WindowedBySliding cuts the grouped stream into sliding windows (Kafka
// Streams' groupedStream.windowedBy(SlidingWindows)).
func WindowedBySliding[K, V any](g GroupedStream[K, V], w SlidingWindows) SlidingWindowedStream[K, V] {
	if w.TimeDifference <= 0 || w.Grace < 0 || w.TimeDifference%time.Millisecond != 0 || w.Grace%time.Millisecond != 0 {
		g.s.b.errs = append(g.s.b.errs, fmt.Errorf("streams: SlidingWindows time difference %v grace %v: want whole milliseconds, difference > 0, grace >= 0", w.TimeDifference, w.Grace))
	}
	return SlidingWindowedStream[K, V]{g: g, w: w}
}

// Count counts records per key and sliding window. Options: Named,
// Materialized, WithBackend, WithLoggingDisabled.
func (s SlidingWindowedStream[K, V]) Count(options ...Option) Table[Windowed[K], int64] {
	return slidingAggregate(s, "Count", "KSTREAM-AGGREGATE-", func() int64 { return 0 },
		func(_ K, _ V, agg int64, _ bool) int64 { return agg + 1 }, Int64(), options)
}

// Reduce combines values per key and sliding window. Options as Count.
func (s SlidingWindowedStream[K, V]) Reduce(fn func(agg, v V) V, options ...Option) Table[Windowed[K], V] {
	return slidingAggregate(s, "Reduce", "KSTREAM-REDUCE-", func() V { var z V; return z },
		func(_ K, v V, agg V, first bool) V {
			if first {
				return v
			}
			return fn(agg, v)
		}, s.g.s.vs, options)
}

// SlidingAggregate folds values per key and sliding window from init().
// Options as Count, plus WithValueSerde.
func SlidingAggregate[K, V, VA any](s SlidingWindowedStream[K, V], init func() VA, adder func(K, V, VA) VA, options ...Option) Table[Windowed[K], VA] {
	o := peekOpts(options)
	vs := serdeOr(s.g.s.b, "SlidingAggregate", o.valSerde, defaultSerde[VA]())
	return slidingAggregate(s, "SlidingAggregate", "KSTREAM-AGGREGATE-", init,
		func(k K, v V, agg VA, _ bool) VA { return adder(k, v, agg) }, vs, stripOpt(options, "WithValueSerde"))
}

// slidingAggregate keeps two stores: the window store of aggregates
// (queryable, as Kafka Streams') and <store>-records, the key's records in
// the time range that open windows can still take, from which each
// affected window is recomputed in timestamp order. The aggregate of a
// window is therefore the fold of its records by timestamp, whatever order
// they arrived in.
func slidingAggregate[K, V, VA any](s SlidingWindowedStream[K, V], op, prefix string, init func() VA, add func(K, V, VA, bool) VA, vs Serde[VA], options []Option) Table[Windowed[K], VA] {
	b := s.g.s.b
	o := b.collect(op, options, "Named", "Materialized", "WithBackend", "WithLoggingDisabled")
	store := o.store
	if store == "" {
		store = b.newStoreName(prefix)
	}
	name := o.nameOr(b, prefix)
	in := s.g.input(store)
	diff, grace := s.w.TimeDifference.Milliseconds(), s.w.Grace.Milliseconds()
	retention := diff + grace
	b.addStore(&storeSpec{name: store, kind: kindWindow, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(s.g.s.ks), valSerde: eraseSerde(vs), retention: retention, segment: segmentInterval(retention),
		windowed: true, winSize: diff, queryable: true})
	records := store + "-records"
	rawRetention := 2*diff + grace + 2
	b.addStore(&storeSpec{name: records, kind: kindWindow, backend: o.backendOr(Pebble), logged: !o.loggingOff,
		keySerde: eraseSerde(s.g.s.ks), valSerde: eraseSerde(s.g.s.vs), retention: rawRetention, segment: segmentInterval(rawRetention)})
	n := b.addNode(&node{name: name, stores: []string{store, records}, newProc: func() proc {
		return &slidingAggProc[K, V, VA]{store: store, records: records, initFn: init, add: add, diff: diff, grace: grace}
	}}, in.n)
	return Table[Windowed[K], VA]{b: b, n: n, ks: defaultSerde[Windowed[K]](), vs: vs, store: store, win: &windowInfo{grace: grace}}
}

type slidingAggProc[K, V, VA any] struct {
	c              *pctx
	aggs, raw      segmented
	store, records string
	initFn         func() VA
	add            func(K, V, VA, bool) VA
	diff, grace    int64
}

func (p *slidingAggProc[K, V, VA]) init(c *pctx) {
	p.c = c
	p.aggs, p.raw = segmented{c.store(p.store)}, segmented{c.store(p.records)}
}

type slidingRec[V any] struct {
	ts, seq int64
	v       V
}

func (p *slidingAggProc[K, V, VA]) process(r record) {
	t := p.c.t
	if r.key == nil || r.value == nil {
		t.metrics.skipped.Add(1)
		return
	}
	rawSpec, aggSpec := p.raw.s.spec, p.aggs.s.spec
	kb, err := rawSpec.keySerde.ser(p.raw.s.changelog, r.key)
	if err != nil {
		panic(processingError{err})
	}
	ts, d := r.ts, p.diff
	closeTime := t.streamTime - p.grace
	if ts+1+d <= closeTime {
		// Even the record's right window has closed.
		t.metrics.dropped.Add(1)
		return
	}
	// Keep the record; seq orders records of equal timestamp by arrival.
	var seq int64
	p.raw.fetch(kb, ts, ts, func(_, s int64, _ []byte) bool { seq = max(seq, s+1); return true })
	vb, err := rawSpec.valSerde.ser(p.raw.s.changelog, r.value)
	if err != nil {
		panic(processingError{err})
	}
	p.raw.put(kb, ts, seq, vb)

	// Every window that can change has its start in [ts-d, ts] (it holds
	// ts) or is the record's right window, so its records lie in
	// [ts-d-1, ts+d+1].
	var recs []slidingRec[V]
	p.raw.fetch(kb, ts-d-1, ts+d+1, func(rt, s int64, b []byte) bool {
		v, err := rawSpec.valSerde.de(p.raw.s.changelog, b)
		if err != nil {
			panic(storeError{err})
		}
		recs = append(recs, slidingRec[V]{ts: rt, seq: s, v: v.(V)})
		return true
	})
	sort.Slice(recs, func(i, j int) bool {
		if recs[i].ts != recs[j].ts {
			return recs[i].ts < recs[j].ts
		}
		return recs[i].seq < recs[j].seq
	})
	holds := func(start int64) bool {
		for _, x := range recs {
			if x.ts >= start && x.ts <= start+d {
				return true
			}
		}
		return false
	}
	starts := map[int64]bool{}
	for _, x := range recs {
		if left := max(0, x.ts-d); left >= ts-d && left <= ts {
			starts[left] = true
		}
		if right := x.ts + 1; right >= ts-d && right <= ts+1 && holds(right) {
			starts[right] = true
		}
	}
	order := make([]int64, 0, len(starts))
	for s := range starts {
		order = append(order, s)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	k := r.key.(K)
	for _, start := range order {
		end := start + d
		if end <= closeTime {
			continue
		}
		agg, first, aggTs := p.initFn(), true, int64(0)
		for _, x := range recs {
			if x.ts < start || x.ts > end {
				continue
			}
			agg, first = p.add(k, x.v, agg, first), false
			aggTs = max(aggTs, x.ts)
		}
		var old any
		p.aggs.fetch(kb, start, start, func(_, _ int64, b []byte) bool {
			_, ob := splitTsValue(b)
			o, err := aggSpec.valSerde.de(p.aggs.s.changelog, ob)
			if err != nil {
				panic(storeError{err})
			}
			old = o
			return false
		})
		ab, err := aggSpec.valSerde.ser(p.aggs.s.changelog, agg)
		if err != nil {
			panic(processingError{err})
		}
		p.aggs.put(kb, start, 0, tsValue(aggTs, ab))
		p.c.forward(record{key: Windowed[K]{Key: k, Window: Window{Start: start, End: end}}, value: change{newV: agg, oldV: old}, ts: aggTs, headers: r.headers})
	}
	p.aggs.expire(t.streamTime)
	p.raw.expire(t.streamTime)
}
