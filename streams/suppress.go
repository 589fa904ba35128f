package streams

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/google/btree"
)

// Suppressed says when a suppressed table emits (Kafka Streams'
// Suppressed). Make one with UntilWindowCloses or UntilTimeLimit.
type Suppressed struct {
	untilWindowCloses bool
	limit             time.Duration
}

// UntilWindowCloses holds back a windowed table's updates and emits only
// each window's final result, once stream time passes window end + grace.
// The buffer is unbounded and changelogged.
func UntilWindowCloses() Suppressed { return Suppressed{untilWindowCloses: true} }

// UntilTimeLimit holds back a key's updates for limit of stream time after
// the first one, then emits the latest. The buffer is unbounded and
// changelogged.
func UntilTimeLimit(limit time.Duration) Suppressed { return Suppressed{limit: limit} }

// Suppress holds back updates as sup says (Kafka Streams' KTable.suppress).
// Its buffer is the store KTABLE-SUPPRESS-STATE-STORE-<index>, restored
// from its changelog. Options: Named.
func (t Table[K, V]) Suppress(sup Suppressed, options ...Option) Table[K, V] {
	o := t.b.collect("Suppress", options, "Named")
	var dur int64
	if sup.untilWindowCloses {
		if t.win == nil {
			t.b.fail("Suppress(UntilWindowCloses) needs a windowed table")
			return t
		}
		dur = t.win.grace
	} else {
		if sup.limit < 0 {
			t.b.fail("Suppress(UntilTimeLimit(%v)): negative limit", sup.limit)
		}
		dur = sup.limit.Milliseconds()
	}
	name := o.nameOr(t.b, "KTABLE-SUPPRESS-")
	store := t.b.newStoreName("KTABLE-SUPPRESS-")
	t.b.addStore(&storeSpec{name: store, kind: kindPlain, backend: InMemory, logged: true,
		keySerde: eraseSerde(Bytes()), valSerde: eraseSerde(Bytes())})
	ks, vs := t.ks, t.vs
	n := t.b.addNode(&node{name: name, stores: []string{store}, newProc: func() proc {
		return &suppressProc{store: store, windowClose: sup.untilWindowCloses, dur: dur,
			ks: eraseSerde(ks), vs: eraseSerde(vs), observed: noStreamTime}
	}}, t.n)
	return Table[K, V]{b: t.b, n: n, ks: t.ks, vs: t.vs, win: t.win}
}

// suppressProc buffers changes by key. The buffer lives in memory, ordered
// by buffer time, and in a changelogged store:
//
//	key: serialized key
//	value: buffer time (8) | record time (8) | 1 if a value follows, else 0 | value
type suppressProc struct {
	c           *pctx
	s           *storeInst
	store       string
	windowClose bool
	dur         int64
	ks, vs      anySerde
	observed    int64
	byKey       map[string]*suppressEntry
	byTime      *btree.BTreeG[*suppressEntry]
}

type suppressEntry struct {
	kb         []byte
	bufferTime int64
	ts         int64
	val        []byte // nil: a delete
}

func suppressLess(a, b *suppressEntry) bool {
	if a.bufferTime != b.bufferTime {
		return a.bufferTime < b.bufferTime
	}
	return bytes.Compare(a.kb, b.kb) < 0
}

func (p *suppressProc) init(c *pctx) {
	p.c = c
	p.s = c.store(p.store)
	p.byKey = map[string]*suppressEntry{}
	p.byTime = btree.NewG(16, suppressLess)
	// Rebuild the in-memory order from the (restored) store.
	p.s.bs.scan(nil, nil, func(k, v []byte) bool {
		e := decodeSuppressEntry(k, v)
		p.byKey[string(k)] = e
		p.byTime.ReplaceOrInsert(e)
		p.observed = max(p.observed, e.ts)
		return true
	})
}

func decodeSuppressEntry(k, v []byte) *suppressEntry {
	if len(v) < 17 {
		panic(storeError{errShortValue})
	}
	e := &suppressEntry{kb: bytes.Clone(k), bufferTime: int64(binary.BigEndian.Uint64(v)), ts: int64(binary.BigEndian.Uint64(v[8:]))}
	if v[16] == 1 {
		e.val = bytes.Clone(v[17:])
	}
	return e
}

func (e *suppressEntry) encode() []byte {
	out := binary.BigEndian.AppendUint64(nil, uint64(e.bufferTime))
	out = binary.BigEndian.AppendUint64(out, uint64(e.ts))
	if e.val == nil {
		return append(out, 0)
	}
	return append(append(out, 1), e.val...)
}

func (p *suppressProc) process(r record) {
	topic := p.s.changelog
	kb, err := p.ks.ser(topic, r.key)
	if err != nil {
		panic(processingError{err})
	}
	ch := r.value.(change)
	vb, err := p.vs.ser(topic, ch.newV)
	if err != nil {
		panic(processingError{err})
	}
	p.observed = max(p.observed, r.ts)
	e, ok := p.byKey[string(kb)]
	if ok {
		p.byTime.Delete(e)
		e = &suppressEntry{kb: e.kb, bufferTime: e.bufferTime, ts: r.ts, val: vb}
	} else {
		bt := r.ts // the first update starts the time limit
		if p.windowClose {
			bt = r.key.(interface{ windowEnd() int64 }).windowEnd()
		}
		e = &suppressEntry{kb: bytes.Clone(kb), bufferTime: bt, ts: r.ts, val: vb}
	}
	p.byKey[string(kb)] = e
	p.byTime.ReplaceOrInsert(e)
	p.s.put(kb, e.encode())
	p.evict()
}

// evict emits every entry whose buffer time is at or before stream time
// minus the suppression duration (the grace, or the time limit).
func (p *suppressProc) evict() {
	expiry := p.observed - p.dur
	for {
		e, ok := p.byTime.Min()
		if !ok || e.bufferTime > expiry {
			return
		}
		p.byTime.DeleteMin()
		delete(p.byKey, string(e.kb))
		p.s.put(e.kb, nil)
		topic := p.s.changelog
		k, err := p.ks.de(topic, e.kb)
		if err != nil {
			panic(storeError{err})
		}
		v, err := p.vs.de(topic, e.val)
		if err != nil {
			panic(storeError{err})
		}
		p.c.forward(record{key: k, value: change{newV: v}, ts: e.ts})
	}
}
