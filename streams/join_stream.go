package streams

import (
	"fmt"
	"time"
)

// JoinWindows bound a stream-stream join: a record joins the other side's
// records with equal key whose timestamps lie within Before earlier and
// After later than its own. Grace keeps the windows open for
// out-of-order records; later ones are dropped and counted.
type JoinWindows struct {
	Before time.Duration // how much earlier than a left record a right one may be
	After  time.Duration // how much later than a left record a right one may be
	Grace  time.Duration // how long after the window a record is still joined
}

// JoinWindowsOfTimeDifferenceAndGrace returns symmetric join windows
// (Kafka Streams' JoinWindows.ofTimeDifferenceAndGrace).
func JoinWindowsOfTimeDifferenceAndGrace(diff, grace time.Duration) JoinWindows {
	return JoinWindows{Before: diff, After: diff, Grace: grace}
}

// JoinWindowsOfTimeDifferenceWithNoGrace returns symmetric join windows
// with no grace period.
func JoinWindowsOfTimeDifferenceWithNoGrace(diff time.Duration) JoinWindows {
	return JoinWindows{Before: diff, After: diff}
}

// WithBefore sets how much earlier the other side's records may be.
func (w JoinWindows) WithBefore(d time.Duration) JoinWindows { w.Before = d; return w }

// WithAfter sets how much later the other side's records may be.
func (w JoinWindows) WithAfter(d time.Duration) JoinWindows { w.After = d; return w }

type joinKind int

const (
	innerJoin joinKind = iota
	leftJoin
	outerJoin
)

// Join is the windowed inner stream-stream join (Kafka Streams'
// KStream.join(KStream, ValueJoiner, JoinWindows)): each pair of records
// with equal keys within the windows gives joiner(left, right), timestamped
// with the later of the two. Options: Named.
func Join[K, V1, V2, VR any](left Stream[K, V1], right Stream[K, V2], joiner func(V1, V2) VR, w JoinWindows, options ...Option) Stream[K, VR] {
	return streamJoin[K, V1, V2, VR](left, right, innerJoin, func(l, r any) any { return joiner(as[V1](l), as[V2](r)) }, w, options)
}

// LeftJoin is the windowed left stream-stream join: as Join, and a left
// record that found no right record by the time its window closed gives
// joiner(left, nil) then.
func LeftJoin[K, V1, V2, VR any](left Stream[K, V1], right Stream[K, V2], joiner func(V1, *V2) VR, w JoinWindows, options ...Option) Stream[K, VR] {
	return streamJoin[K, V1, V2, VR](left, right, leftJoin, func(l, r any) any { return joiner(as[V1](l), ptrOf[V2](r)) }, w, options)
}

// OuterJoin is the windowed outer stream-stream join: as LeftJoin, for
// unmatched records of either side.
func OuterJoin[K, V1, V2, VR any](left Stream[K, V1], right Stream[K, V2], joiner func(*V1, *V2) VR, w JoinWindows, options ...Option) Stream[K, VR] {
	return streamJoin[K, V1, V2, VR](left, right, outerJoin, func(l, r any) any { return joiner(ptrOf[V1](l), ptrOf[V2](r)) }, w, options)
}

// ptrOf is nil for an absent value, else a pointer to a copy.
func ptrOf[T any](v any) *T {
	if v == nil {
		return nil
	}
	x := v.(T)
	return &x
}

// coPartitioned repartitions s if its key changed, reusing the topic if s
// was already repartitioned for another join.
func coPartitioned[K, V any](s Stream[K, V]) Stream[K, V] {
	if !s.keyChanged {
		return s
	}
	return repartition(s, s.n.name, s.ks, s.vs, 0, nil)
}

func streamJoin[K, V1, V2, VR any](left Stream[K, V1], right Stream[K, V2], kind joinKind, joiner func(l, r any) any, w JoinWindows, options []Option) Stream[K, VR] {
	b := left.b
	o := b.collect("Join", options, "Named")
	if w.Before < 0 || w.After < 0 || w.Grace < 0 {
		b.fail("JoinWindows %+v: negative duration", w)
	}
	left, right = coPartitioned(left), coPartitioned(right)
	base := o.name
	thisPrefix, otherPrefix := "KSTREAM-JOINTHIS-", "KSTREAM-JOINOTHER-"
	if kind == outerJoin {
		thisPrefix, otherPrefix = "KSTREAM-OUTERTHIS-", "KSTREAM-OUTEROTHER-"
	}
	thisName, otherName := b.newName(thisPrefix), b.newName(otherPrefix)
	if base != "" {
		thisName, otherName = base+"-this-join", base+"-other-join"
	}
	before, after, grace := w.Before.Milliseconds(), w.After.Milliseconds(), w.Grace.Milliseconds()
	retention := before + after + 1 + grace
	mkStore := func(name string, ks, vs anySerde) string {
		b.addStore(&storeSpec{name: name, kind: kindWindow, backend: Pebble, logged: true,
			keySerde: ks, valSerde: vs, retention: retention, segment: segmentInterval(retention)})
		return name
	}
	thisStore := mkStore(thisName+"-store", eraseSerde(left.ks), eraseSerde(left.vs))
	otherStore := mkStore(otherName+"-store", eraseSerde(right.ks), eraseSerde(right.vs))
	outerStore := ""
	if kind != innerJoin {
		outerStore = b.newName("KSTREAM-OUTERSHARED-") + "-store"
		if base != "" {
			outerStore = base + "-outer-shared-join-store"
		}
		b.addStore(&storeSpec{name: outerStore, kind: kindPlain, backend: Pebble, logged: true,
			keySerde: eraseSerde(Bytes()), valSerde: eraseSerde(Bytes())})
	}
	stores := []string{thisStore, otherStore}
	if outerStore != "" {
		stores = append(stores, outerStore)
	}
	lv, rv := eraseSerde(left.vs), eraseSerde(right.vs)
	ln := b.addNode(&node{name: thisName, stores: stores, newProc: func() proc {
		return &joinSideProc{thisStore: thisStore, otherStore: otherStore, outerStore: outerStore,
			isLeft: true, before: before, after: after, grace: grace, kind: kind,
			thisVS: lv, otherVS: rv, joiner: joiner}
	}}, left.n)
	rn := b.addNode(&node{name: otherName, stores: stores, newProc: func() proc {
		return &joinSideProc{thisStore: otherStore, otherStore: thisStore, outerStore: outerStore,
			isLeft: false, before: after, after: before, grace: grace, kind: kind,
			thisVS: rv, otherVS: lv, joiner: func(r, l any) any { return joiner(l, r) }}
	}}, right.n)
	merge := b.addNode(&node{name: b.newName("KSTREAM-MERGE-"), newProc: func() proc {
		return &funcProc{f: func(c *pctx, r record) { c.forward(r) }}
	}}, ln, rn)
	return Stream[K, VR]{b: b, n: merge, ks: left.ks, vs: defaultSerde[VR]()}
}

// joinSideProc is one side of a stream-stream join. "this" is its side;
// before/after are relative to this side's record.
type joinSideProc struct {
	c                                 *pctx
	thisStore, otherStore, outerStore string
	this, other                       segmented
	outer                             *storeInst
	isLeft                            bool
	before, after, grace              int64
	kind                              joinKind
	thisVS, otherVS                   anySerde
	joiner                            func(this, other any) any
	seq                               int64
}

func (p *joinSideProc) init(c *pctx) {
	p.c = c
	p.this, p.other = segmented{c.store(p.thisStore)}, segmented{c.store(p.otherStore)}
	if p.outerStore != "" {
		p.outer = c.store(p.outerStore)
	}
}

// emitsUnmatched: this side's records without a partner are emitted when
// their window closes.
func (p *joinSideProc) emitsUnmatched(left bool) bool {
	return p.kind == outerJoin || p.kind == leftJoin && left
}

func (p *joinSideProc) process(r record) {
	t := p.c.t
	if r.key == nil || r.value == nil {
		t.metrics.skipped.Add(1)
		return
	}
	if r.ts+p.after+p.grace < t.streamTime {
		t.metrics.dropped.Add(1)
		return
	}
	p.emitClosed()
	spec := p.this.s.spec
	kb, err := spec.keySerde.ser(p.this.s.changelog, r.key)
	if err != nil {
		panic(processingError{err})
	}
	vb, err := p.thisVS.ser(p.this.s.changelog, r.value)
	if err != nil {
		panic(processingError{err})
	}
	// A unique suffix per stored record: the input offset, and a counter
	// for records one input record produced.
	p.seq++
	seq := t.cur.offset<<16 | p.seq&0xffff
	p.this.put(kb, r.ts, seq, tsValue(r.ts, vb))
	matched := false
	p.other.fetch(kb, r.ts-p.before, r.ts+p.after, func(ots, oseq int64, v []byte) bool {
		_, ovb := splitTsValue(v)
		ov, err := p.otherVS.de(p.other.s.changelog, ovb)
		if err != nil {
			panic(storeError{err})
		}
		matched = true
		if p.outer != nil && p.emitsUnmatched(!p.isLeft) {
			p.outer.put(outerKey(ots, !p.isLeft, kb, oseq), nil)
		}
		p.c.forward(record{key: r.key, value: p.joiner(r.value, ov), ts: max(r.ts, ots), headers: r.headers})
		return true
	})
	if !matched && p.outer != nil && p.emitsUnmatched(p.isLeft) {
		p.outer.put(outerKey(r.ts, p.isLeft, kb, seq), tsValue(r.ts, vb))
	}
	p.this.expire(t.streamTime)
}

// outerKey orders unmatched records by time: ts | side | key | seq, in the
// segmented layout with the time as the segment.
func outerKey(ts int64, left bool, kb []byte, seq int64) []byte {
	side := int64(0)
	if left {
		side = 1
	}
	return segKey(ts, kb, side, seq)
}

// emitClosed emits the unmatched records whose windows closed: a record of
// the side with window "after" a closes when ts + a + grace < stream time.
func (p *joinSideProc) emitClosed() {
	if p.outer == nil {
		return
	}
	t := p.c.t
	var done [][]byte
	limit := t.streamTime - min(p.before, p.after) - p.grace
	p.outer.bs.scan(nil, segStart(limit), func(k, v []byte) bool {
		ts, kb, side, _ := parseSegKey(k)
		left := side == 1
		// Window after, seen from the record's own side.
		a := p.after
		if left != p.isLeft {
			a = p.before
		}
		if ts+a+p.grace >= t.streamTime {
			return true
		}
		_, vb := splitTsValue(v)
		var out any
		key, err := p.this.s.spec.keySerde.de(p.this.s.changelog, kb)
		if err != nil {
			panic(storeError{err})
		}
		if left == p.isLeft {
			val, err := p.thisVS.de(p.this.s.changelog, vb)
			if err != nil {
				panic(storeError{err})
			}
			out = p.joiner(val, nil)
		} else {
			val, err := p.otherVS.de(p.other.s.changelog, vb)
			if err != nil {
				panic(storeError{err})
			}
			out = p.joiner(nil, val)
		}
		done = append(done, k)
		p.c.forward(record{key: key, value: out, ts: ts})
		return true
	})
	for _, k := range done {
		p.outer.put(k, nil)
	}
}

// String renders the windows.
func (w JoinWindows) String() string {
	return fmt.Sprintf("JoinWindows{before=%v after=%v grace=%v}", w.Before, w.After, w.Grace)
}
