package streams

import (
	"fmt"
	"time"
)

// Record is a record in the processor API (Kafka Streams'
// api.Record<K, V>): key, value, timestamp in ms since the epoch, headers.
// IsNullValue is set for a null value (a tombstone): Value is then the
// zero V.
type Record[K, V any] struct {
	Key         K        // the record key
	Value       V        // the record value (the zero V when IsNullValue)
	Timestamp   int64    // ms since the epoch
	Headers     []Header // the record headers
	IsNullValue bool     // a null value (a tombstone)
}

// Header is a record header.
type Header struct {
	Key   string // the header's name
	Value []byte // the header's value
}

// Processor is a processor of the processor API (Kafka Streams'
// api.Processor<KIn, VIn, KOut, VOut>), for what the DSL cannot say. One
// instance runs per task; its methods are called from one goroutine.
type Processor[KIn, VIn, KOut, VOut any] interface {
	// Init is called once before the first record with the processor's
	// context, which it may keep.
	Init(ctx ProcessorContext[KOut, VOut]) error
	// Process handles one record.
	Process(r Record[KIn, VIn]) error
}

// PunctuationType is the clock a punctuation follows.
type PunctuationType int

const (
	// PunctuateStreamTime fires as stream time (the largest record
	// timestamp the task has seen) advances.
	PunctuateStreamTime PunctuationType = iota
	// PunctuateWallClockTime fires as the system clock advances (the test
	// driver's clock in tests).
	PunctuateWallClockTime
)

// Cancellable cancels a scheduled punctuation.
type Cancellable interface {
	// Cancel stops the punctuation; it does not fire again.
	Cancel()
}

type punctuation struct {
	typ       PunctuationType
	interval  int64
	next      int64
	fn        func(ts int64)
	cancelled bool
}

func (p *punctuation) Cancel() { p.cancelled = true }

// ProcessorContext is what a Processor can do beyond returning: forward
// records downstream, read and write its connected stores, schedule
// punctuations, and read the current record's context.
type ProcessorContext[KOut, VOut any] interface {
	// Forward sends r to every downstream processor.
	Forward(r Record[KOut, VOut])
	// Schedule calls fn every interval of the given clock, with the
	// punctuation's time; records forwarded from fn carry their own
	// timestamps.
	Schedule(interval time.Duration, typ PunctuationType, fn func(ts int64)) Cancellable
	// RecordContext describes the record being processed.
	RecordContext() RecordContext
	// StreamTime is the task's stream time (ms).
	StreamTime() int64
	// TaskID is the task running the processor.
	TaskID() TaskID
	// ApplicationID is the application.id.
	ApplicationID() string
	stateStore(name string) *storeInst
}

type procContext[KOut, VOut any] struct{ c *pctx }

func (p procContext[KOut, VOut]) Forward(r Record[KOut, VOut]) {
	var v any = r.Value
	if r.IsNullValue {
		v = nil
	}
	p.c.forward(record{key: r.Key, value: v, ts: r.Timestamp, headers: toKgoHeaders(r.Headers)})
}

func (p procContext[KOut, VOut]) Schedule(interval time.Duration, typ PunctuationType, fn func(int64)) Cancellable {
	if interval < time.Millisecond {
		panic(processingError{fmt.Errorf("streams: punctuation interval %v below 1ms", interval)})
	}
	pu := &punctuation{typ: typ, interval: interval.Milliseconds(), fn: fn, next: noStreamTime}
	if typ == PunctuateWallClockTime {
		pu.next = p.c.t.wallNow() + pu.interval
	} else if p.c.t.streamTime != noStreamTime {
		pu.next = p.c.t.streamTime + pu.interval
	}
	p.c.t.puncts = append(p.c.t.puncts, pu)
	return pu
}

func (p procContext[KOut, VOut]) RecordContext() RecordContext { return p.c.t.recordContext() }
func (p procContext[KOut, VOut]) StreamTime() int64            { return p.c.t.streamTime }
func (p procContext[KOut, VOut]) TaskID() TaskID               { return p.c.t.id }
func (p procContext[KOut, VOut]) ApplicationID() string        { return p.c.t.appID }
func (p procContext[KOut, VOut]) stateStore(name string) *storeInst {
	return p.c.store(name)
}

// Process runs a Processor on each record (Kafka Streams'
// KStream.process(ProcessorSupplier, stores...)); newProcessor is called
// once per task. A later grouping or join repartitions. Options: Named,
// WithStores, WithKeySerde, WithValueSerde.
func Process[K, V, KR, VR any](s Stream[K, V], newProcessor func() Processor[K, V, KR, VR], options ...Option) Stream[KR, VR] {
	b := s.b
	o := b.collect("Process", options, "Named", "WithStores", "WithKeySerde", "WithValueSerde")
	for _, st := range o.stores {
		if _, ok := b.stores[st]; !ok {
			b.fail("Process: store %q not declared (AddKeyValueStore)", st)
		}
	}
	n := b.addNode(&node{name: o.nameOr(b, "KSTREAM-PROCESSOR-"), stores: o.stores, newProc: func() proc {
		return &userProc[K, V, KR, VR]{p: newProcessor()}
	}}, s.n)
	return Stream[KR, VR]{b: b, n: n, keyChanged: true,
		ks: serdeOr(b, "Process", o.keySerde, defaultSerde[KR]()),
		vs: serdeOr(b, "Process", o.valSerde, defaultSerde[VR]())}
}

type userProc[K, V, KR, VR any] struct {
	p Processor[K, V, KR, VR]
}

func (u *userProc[K, V, KR, VR]) init(c *pctx) {
	if err := u.p.Init(procContext[KR, VR]{c}); err != nil {
		panic(processingError{fmt.Errorf("streams: processor %s Init: %w", c.inst.node.name, err)})
	}
}

func (u *userProc[K, V, KR, VR]) process(r record) {
	in := Record[K, V]{Key: as[K](r.key), Value: as[V](r.value), Timestamp: r.ts, IsNullValue: r.value == nil, Headers: fromKgoHeaders(r.headers)}
	if err := u.p.Process(in); err != nil {
		panic(processingError{fmt.Errorf("streams: processor: %w", err)})
	}
}

// AddKeyValueStore declares a key-value store for Process (Kafka Streams'
// addStateStore(Stores.keyValueStoreBuilder(...))). It is changelogged
// unless logging is false.
func AddKeyValueStore[K, V any](b *Builder, name string, keySerde Serde[K], valueSerde Serde[V], backend StoreBackend, logging bool) {
	b.addStore(&storeSpec{name: name, kind: kindPlain, backend: backend, logged: logging,
		keySerde: eraseSerde(keySerde), valSerde: eraseSerde(valueSerde), queryable: true})
}

// KeyValueStore is a read-write key-value store as a processor sees it.
type KeyValueStore[K, V any] struct {
	s  *storeInst
	ks Serde[K]
	vs Serde[V]
}

// GetKeyValueStore returns the store name connected to the processor
// (Kafka Streams' context.getStateStore); K and V must be the store's.
func GetKeyValueStore[K, V, KOut, VOut any](ctx ProcessorContext[KOut, VOut], name string, keySerde Serde[K], valueSerde Serde[V]) *KeyValueStore[K, V] {
	return &KeyValueStore[K, V]{s: ctx.stateStore(name), ks: keySerde, vs: valueSerde}
}

func (s *KeyValueStore[K, V]) topic() string { return s.s.spec.name }

// Get returns the value for k.
func (s *KeyValueStore[K, V]) Get(k K) (V, bool, error) {
	var zero V
	kb, err := s.ks.Serialize(s.topic(), k)
	if err != nil {
		return zero, false, err
	}
	b, ok := s.s.get(kb)
	if !ok {
		return zero, false, nil
	}
	v, err := s.vs.Deserialize(s.topic(), b)
	return v, err == nil, err
}

// Put writes v under k (and to the changelog).
func (s *KeyValueStore[K, V]) Put(k K, v V) error {
	kb, err := s.ks.Serialize(s.topic(), k)
	if err != nil {
		return err
	}
	vb, err := s.vs.Serialize(s.topic(), v)
	if err != nil {
		return err
	}
	s.s.put(kb, vb)
	return nil
}

// Delete removes k.
func (s *KeyValueStore[K, V]) Delete(k K) error {
	kb, err := s.ks.Serialize(s.topic(), k)
	if err != nil {
		return err
	}
	s.s.put(kb, nil)
	return nil
}

// All calls fn for every entry in serialized-key order until fn returns
// false.
func (s *KeyValueStore[K, V]) All(fn func(K, V) bool) error {
	var ferr error
	s.s.bs.scan(nil, nil, func(kb, vb []byte) bool {
		k, err := s.ks.Deserialize(s.topic(), kb)
		if err != nil {
			ferr = err
			return false
		}
		v, err := s.vs.Deserialize(s.topic(), vb)
		if err != nil {
			ferr = err
			return false
		}
		return fn(k, v)
	})
	return ferr
}
