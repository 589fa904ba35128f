package streams

import (
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// collector receives what a task writes: sink output, repartition records
// and changelog records. The test driver keeps them in memory; the App
// produces them with franz-go.
type collector interface {
	// send writes one record; partition < 0 leaves the choice to the
	// producer's default partitioner (murmur2 of the key, Kafka's).
	send(topic string, key, value []byte, ts int64, headers []kgo.RecordHeader, partition int32)
	// partitions is the partition count of topic (0 if unknown).
	partitions(topic string) int32
}

// TaskID names a task as Kafka Streams does: "<sub-topology>_<partition>".
type TaskID struct {
	Subtopology int   // the sub-topology's index in the topology
	Partition   int32 // the input partition the task reads
}

// String renders the ID as "0_1".
func (id TaskID) String() string { return fmt.Sprintf("%d_%d", id.Subtopology, id.Partition) }

// taskMetrics are a task's counters; read from other goroutines.
type taskMetrics struct {
	processed atomic.Int64
	dropped   atomic.Int64 // late records dropped by windowed operators and joins
	skipped   atomic.Int64 // records skipped: undecodable (log-and-continue), negative timestamp
}

// recordMeta is the context of the record being processed.
type recordMeta struct {
	topic     string
	partition int32
	offset    int64
	ts        int64
	headers   []kgo.RecordHeader
}

// task runs one sub-topology for one partition: its processor instances,
// stores and stream time. It is owned by a single goroutine (a stream
// thread, or the test driver).
type task struct {
	id         TaskID
	topo       *Topology
	sub        *subtopology
	appID      string
	col        collector
	log        *slog.Logger
	onDeserErr DeserializationHandler
	tsx        TimestampExtractor // the default extractor
	partTime   map[string]int64   // source topic -> highest extracted timestamp

	instances  map[*node]*instance
	sources    map[string]*instance // resolved topic -> source
	stores     map[string]*storeInst
	globals    map[string]*storeInst
	streamTime int64
	cur        recordMeta
	puncts     []*punctuation
	metrics    *taskMetrics
	wallNow    func() int64
}

type instance struct {
	node *node
	proc proc
	ctx  *pctx
}

const noStreamTime = math.MinInt64

func resolveTopic(appID string, n *node, topic string) string {
	if n.internalSource {
		return appID + "-" + topic
	}
	return topic
}

// newTask instantiates the sub-topology's processors for one partition.
// Stores must already be opened (and restored) into stores.
func newTask(id TaskID, topo *Topology, sub *subtopology, appID string, col collector,
	stores, globals map[string]*storeInst, onDeserErr DeserializationHandler, tsx TimestampExtractor, log *slog.Logger, wallNow func() int64,
) (t *task, err error) {
	if tsx == nil {
		tsx = FailOnInvalidTimestamp
	}
	t = &task{
		id: id, topo: topo, sub: sub, appID: appID, col: col, log: log, onDeserErr: onDeserErr, tsx: tsx, partTime: map[string]int64{},
		instances: map[*node]*instance{}, sources: map[string]*instance{},
		stores: stores, globals: globals, streamTime: noStreamTime, metrics: &taskMetrics{},
		wallNow: wallNow,
	}
	for _, s := range stores {
		s.t = t
	}
	for _, n := range sub.nodes {
		t.instances[n] = &instance{node: n}
	}
	defer func() {
		if r := recover(); r != nil {
			err = asError(r)
		}
	}()
	for _, n := range sub.nodes {
		in := t.instances[n]
		in.ctx = &pctx{t: t, inst: in}
		for _, c := range n.children {
			in.ctx.children = append(in.ctx.children, t.instances[c])
		}
		switch {
		case n.topics != nil:
			in.proc = &sourceProc{}
			for _, tp := range n.topics {
				t.sources[resolveTopic(appID, n, tp)] = in
			}
		case n.sink != nil:
			in.proc = &sinkProc{spec: n.sink}
		default:
			in.proc = n.newProc()
		}
	}
	for _, n := range sub.nodes {
		in := t.instances[n]
		in.proc.init(in.ctx)
	}
	return t, nil
}

// processingError carries a user function's error out of a processor.
type processingError struct{ err error }

func (e processingError) Error() string { return e.err.Error() }

func asError(r any) error {
	switch e := r.(type) {
	case storeError:
		return fmt.Errorf("streams: state store: %w", e.err)
	case processingError:
		return e.err
	case error:
		panic(r)
	default:
		panic(r)
	}
}

// process runs one input record through the task. An error fails the
// thread (Kafka Streams' StreamsException).
func (t *task) process(topic string, partition int32, offset int64, key, value []byte, ts int64, headers []kgo.RecordHeader) (err error) {
	src, ok := t.sources[topic]
	if !ok {
		return fmt.Errorf("streams: task %s has no source for topic %q", t.id, topic)
	}
	defer func() {
		if r := recover(); r != nil {
			err = asError(r)
		}
	}()
	t.cur = recordMeta{topic: topic, partition: partition, offset: offset, ts: ts, headers: headers}
	n := src.node
	k, kerr := n.keySerde.de(topic, key)
	v, verr := n.valSerde.de(topic, value)
	if derr := firstErr(kerr, verr); derr != nil {
		if t.onDeserErr == DeserializationFail {
			return fmt.Errorf("streams: deserializing record %s-%d@%d: %w (default.deserialization.exception.handler=LogAndFail)", topic, partition, offset, derr)
		}
		t.metrics.skipped.Add(1)
		t.log.Warn("skipping record that failed to deserialize", "task", t.id, "topic", topic, "partition", partition, "offset", offset, "err", derr)
		return nil
	}
	// Event time: the source's extractor, else the configured default;
	// a repartition topic's records carry the time extracted upstream.
	x := n.tsx
	if x == nil {
		x = t.tsx
		if n.internalSource {
			x = LogAndSkipOnInvalidTimestamp
		}
	}
	pt, seen := t.partTime[topic]
	if !seen {
		pt = -1
	}
	ets, xerr := x(ConsumedRecord{Topic: topic, Partition: partition, Offset: offset, Timestamp: ts, Key: k, Value: v, Headers: headers}, pt)
	if xerr != nil {
		return xerr
	}
	if ets < 0 {
		// Kafka Streams skips records with an invalid (negative) timestamp.
		t.metrics.skipped.Add(1)
		t.log.Warn("skipping record with negative timestamp", "task", t.id, "topic", topic, "offset", offset, "timestamp", ets)
		return nil
	}
	ts = ets
	t.cur.ts = ts
	if ts > pt {
		t.partTime[topic] = ts
	}
	if ts > t.streamTime {
		t.streamTime = ts
	}
	t.metrics.processed.Add(1)
	src.ctx.forward(record{key: k, value: v, ts: ts, headers: headers})
	t.punctuate(PunctuateStreamTime, t.streamTime)
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// punctuateWall fires wall-clock punctuations due at now.
func (t *task) punctuateWall(now int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = asError(r)
		}
	}()
	t.punctuate(PunctuateWallClockTime, now)
	return nil
}

func (t *task) punctuate(typ PunctuationType, now int64) {
	for _, p := range t.puncts {
		if p.typ != typ || p.cancelled {
			continue
		}
		if p.next == noStreamTime {
			// The first punctuation is one interval after the first time
			// seen (Kafka Streams' PunctuationSchedule).
			p.next = now + p.interval
			continue
		}
		if now < p.next {
			continue
		}
		t.cur = recordMeta{ts: now, partition: t.id.Partition, offset: -1}
		p.fn(now)
		for p.next <= now {
			p.next += p.interval
		}
	}
}

func (t *task) close() {
	for _, s := range t.stores {
		if err := s.bs.close(); err != nil {
			t.log.Warn("closing store", "task", t.id, "store", s.spec.name, "err", err)
		}
	}
}

// pctx is one processor instance's view of its task.
type pctx struct {
	t        *task
	inst     *instance
	children []*instance
}

func (c *pctx) forward(r record) {
	for _, ch := range c.children {
		ch.proc.process(r)
	}
}

func (c *pctx) forwardTo(i int, r record) {
	c.children[i].proc.process(r)
}

func (c *pctx) store(name string) *storeInst {
	if s, ok := c.t.stores[name]; ok {
		return s
	}
	if s, ok := c.t.globals[name]; ok {
		return s
	}
	panic(storeError{fmt.Errorf("processor %s: store %q not connected to it", c.inst.node.name, name)})
}

type sourceProc struct{ c *pctx }

func (p *sourceProc) init(c *pctx)     { p.c = c }
func (p *sourceProc) process(r record) { p.c.forward(r) }

type sinkProc struct {
	c    *pctx
	spec *sinkSpec
}

func (p *sinkProc) init(c *pctx) { p.c = c }

func (p *sinkProc) process(r record) {
	t := p.c.t
	topic := p.spec.topic
	if p.spec.extract != nil {
		topic = p.spec.extract(r, t.recordContext())
	}
	if p.spec.internal {
		topic = t.appID + "-" + topic
	}
	k, err := p.spec.keySerde.ser(topic, r.key)
	if err != nil {
		panic(processingError{fmt.Errorf("streams: sink %s: serializing key: %w", p.c.inst.node.name, err)})
	}
	v, err := p.spec.valSerde.ser(topic, r.value)
	if err != nil {
		panic(processingError{fmt.Errorf("streams: sink %s: serializing value: %w", p.c.inst.node.name, err)})
	}
	part := int32(-1)
	if p.spec.partition != nil {
		if n := t.col.partitions(topic); n > 0 {
			if pp, ok := p.spec.partition(topic, r.key, r.value, n); ok {
				part = pp
			}
		}
	}
	t.col.send(topic, k, v, r.ts, r.headers, part)
}
