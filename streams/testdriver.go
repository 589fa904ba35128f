package streams

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDriver runs a topology in-process with no broker, as Kafka Streams'
// TopologyTestDriver: pipe records into input topics with timestamps,
// advance the wall clock, read what the topology wrote to output topics
// (and to its changelog and repartition topics) and query its stores.
//
// Every topic has one partition, so the driver runs one task per
// sub-topology. Records written to a repartition topic are processed by
// the reading task before the pipe call returns. A TestDriver is not safe
// for concurrent use.
type TestDriver struct {
	topo    *Topology
	appID   string
	dir     string
	ownDir  bool
	tasks   []*task
	global  *task
	globals map[string]*storeInst
	outputs map[string][]rawRecord
	offsets map[string]int64
	queue   []rawRecord
	wall    int64
	log     *slog.Logger
}

type rawRecord struct {
	topic    string
	key, val []byte
	ts       int64
	headers  []kgo.RecordHeader
}

// TestDriverConfig configures a TestDriver.
type TestDriverConfig struct {
	// ApplicationID prefixes internal topics (default "test-app").
	ApplicationID string
	// StateDir holds Pebble stores (default: a temporary directory the
	// driver removes on Close).
	StateDir string
	// WallClock is the initial wall-clock time (default: time.Now()).
	WallClock time.Time
	// DeserializationHandler for undecodable input (default fail).
	DeserializationHandler DeserializationHandler
	// TimestampExtractor is the default extractor (default
	// FailOnInvalidTimestamp).
	TimestampExtractor TimestampExtractor
	// Logger receives warnings (default: discarded).
	Logger *slog.Logger
}

// NewTestDriver starts t in a TestDriver.
func NewTestDriver(t *Topology, cfg TestDriverConfig) (*TestDriver, error) {
	d := &TestDriver{topo: t, appID: cfg.ApplicationID, dir: cfg.StateDir, globals: map[string]*storeInst{},
		outputs: map[string][]rawRecord{}, offsets: map[string]int64{}, log: cfg.Logger}
	if d.appID == "" {
		d.appID = "test-app"
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.wall = time.Now().UnixMilli()
	if !cfg.WallClock.IsZero() {
		d.wall = cfg.WallClock.UnixMilli()
	}
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "streams-test-driver-")
		if err != nil {
			return nil, err
		}
		d.dir, d.ownDir = dir, true
	}
	wall := func() int64 { return d.wall }
	if t.global != nil {
		for _, name := range t.global.stores {
			s, err := openStore(d.appID, t.stores[name], filepath.Join(d.dir, "global"), "", nil)
			if err != nil {
				d.Close()
				return nil, err
			}
			d.globals[name] = s
		}
		g, err := newTask(TaskID{Subtopology: -1}, t, t.global, d.appID, d, d.globals, nil, cfg.DeserializationHandler, cfg.TimestampExtractor, d.log, wall)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.global = g
	}
	for _, sub := range t.subs {
		id := TaskID{Subtopology: sub.id}
		stores := map[string]*storeInst{}
		for _, name := range sub.stores {
			spec := t.stores[name]
			if spec.global {
				continue
			}
			s, err := openStore(d.appID, spec, filepath.Join(d.dir, id.String()), changelogFor(d.appID, spec), nil)
			if err != nil {
				d.Close()
				return nil, err
			}
			stores[name] = s
		}
		tk, err := newTask(id, t, sub, d.appID, d, stores, d.globals, cfg.DeserializationHandler, cfg.TimestampExtractor, d.log, wall)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.tasks = append(d.tasks, tk)
	}
	return d, nil
}

func changelogFor(appID string, spec *storeSpec) string {
	if !spec.logged {
		return ""
	}
	return changelogTopic(appID, spec.name)
}

// openStore opens spec's backend under dir.
func openStore(appID string, spec *storeSpec, dir, changelog string, t *task) (*storeInst, error) {
	var bs byteStore
	switch spec.backend {
	case InMemory:
		bs = newMemStore()
	case Pebble:
		ps, err := openPebbleStore(filepath.Join(dir, spec.name))
		if err != nil {
			return nil, err
		}
		bs = ps
	default:
		return nil, fmt.Errorf("streams: store %s: unknown backend %v", spec.name, spec.backend)
	}
	_ = appID
	return &storeInst{spec: spec, bs: bs, changelog: changelog, t: t}, nil
}

func (d *TestDriver) send(topic string, key, value []byte, ts int64, headers []kgo.RecordHeader, _ int32) {
	r := rawRecord{topic: topic, key: key, val: value, ts: ts, headers: headers}
	d.outputs[topic] = append(d.outputs[topic], r)
	if d.taskFor(topic) != nil {
		d.queue = append(d.queue, r)
	}
}

func (d *TestDriver) partitions(string) int32 { return 1 }

func (d *TestDriver) taskFor(topic string) *task {
	for _, t := range d.tasks {
		if _, ok := t.sources[topic]; ok {
			return t
		}
	}
	return nil
}

// pipe processes one input record and whatever it writes to repartition
// topics.
func (d *TestDriver) pipe(topic string, key, value []byte, ts int64, headers []kgo.RecordHeader) error {
	if d.global != nil {
		if _, ok := d.global.sources[topic]; ok {
			return d.processOn(d.global, rawRecord{topic: topic, key: key, val: value, ts: ts, headers: headers})
		}
	}
	t := d.taskFor(topic)
	if t == nil {
		return fmt.Errorf("streams: topic %q is not a source of the topology (sources: %v)", topic, d.topo.SourceTopics())
	}
	if err := d.processOn(t, rawRecord{topic: topic, key: key, val: value, ts: ts, headers: headers}); err != nil {
		return err
	}
	for len(d.queue) > 0 {
		r := d.queue[0]
		d.queue = d.queue[1:]
		if err := d.processOn(d.taskFor(r.topic), r); err != nil {
			return err
		}
	}
	return nil
}

func (d *TestDriver) processOn(t *task, r rawRecord) error {
	off := d.offsets[r.topic]
	d.offsets[r.topic] = off + 1
	return t.process(r.topic, 0, off, r.key, r.val, r.ts, r.headers)
}

// AdvanceWallClockTime moves the driver's clock forward by by and fires the
// wall-clock punctuations that became due.
func (d *TestDriver) AdvanceWallClockTime(by time.Duration) error {
	d.wall += by.Milliseconds()
	for _, t := range d.tasks {
		if err := t.punctuateWall(d.wall); err != nil {
			return err
		}
	}
	for len(d.queue) > 0 {
		r := d.queue[0]
		d.queue = d.queue[1:]
		if err := d.processOn(d.taskFor(r.topic), r); err != nil {
			return err
		}
	}
	return nil
}

// OutputTopics lists the topics written so far (including changelog and
// repartition topics), sorted.
func (d *TestDriver) OutputTopics() []string {
	var out []string
	for t := range d.outputs {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Metrics returns the counters summed over the driver's tasks.
func (d *TestDriver) Metrics() TaskMetrics {
	var m TaskMetrics
	for _, t := range d.tasks {
		m.add(t.metrics)
	}
	return m
}

// TaskMetrics are a task's (or an application's) record counters.
type TaskMetrics struct {
	// Processed counts input records processed.
	Processed int64
	// DroppedRecords counts late records windowed operators and joins
	// dropped (Kafka Streams' dropped-records).
	DroppedRecords int64
	// Skipped counts records skipped: undecodable under
	// log-and-continue, negative timestamps, null keys or values an
	// aggregation or join ignores.
	Skipped int64
}

func (m *TaskMetrics) add(t *taskMetrics) {
	m.Processed += t.processed.Load()
	m.DroppedRecords += t.dropped.Load()
	m.Skipped += t.skipped.Load()
}

// Close closes the stores and removes the driver's own state directory.
func (d *TestDriver) Close() error {
	for _, t := range d.tasks {
		t.close()
	}
	for _, s := range d.globals {
		_ = s.bs.close()
	}
	if d.ownDir {
		return os.RemoveAll(d.dir)
	}
	return nil
}

// localStores serves interactive queries.
func (d *TestDriver) localStores(name string) (*storeSpec, []*storeInst, error) {
	spec, ok := d.topo.stores[name]
	if !ok {
		return nil, nil, fmt.Errorf("streams: no store %q", name)
	}
	if spec.global {
		return spec, []*storeInst{d.globals[name]}, nil
	}
	var out []*storeInst
	for _, t := range d.tasks {
		if s, ok := t.stores[name]; ok {
			out = append(out, s)
		}
	}
	return spec, out, nil
}

// TestInputTopic pipes typed records into a TestDriver (Kafka Streams'
// TestInputTopic).
type TestInputTopic[K, V any] struct {
	d     *TestDriver
	topic string
	ks    Serde[K]
	vs    Serde[V]
}

// CreateInputTopic returns an input topic of d.
func CreateInputTopic[K, V any](d *TestDriver, topic string, keySerde Serde[K], valueSerde Serde[V]) *TestInputTopic[K, V] {
	return &TestInputTopic[K, V]{d: d, topic: topic, ks: keySerde, vs: valueSerde}
}

// PipeInput processes a record with timestamp ts (ms since the epoch).
func (in *TestInputTopic[K, V]) PipeInput(key K, value V, ts int64) error {
	kb, err := in.ks.Serialize(in.topic, key)
	if err != nil {
		return err
	}
	vb, err := in.vs.Serialize(in.topic, value)
	if err != nil {
		return err
	}
	return in.d.pipe(in.topic, kb, vb, ts, nil)
}

// PipeTombstone processes a record with a null value.
func (in *TestInputTopic[K, V]) PipeTombstone(key K, ts int64) error {
	kb, err := in.ks.Serialize(in.topic, key)
	if err != nil {
		return err
	}
	return in.d.pipe(in.topic, kb, nil, ts, nil)
}

// PipeRaw processes a record given as bytes (nil = null), for testing
// what the topology does with input its serdes cannot decode.
func (in *TestInputTopic[K, V]) PipeRaw(key, value []byte, ts int64) error {
	return in.d.pipe(in.topic, key, value, ts, nil)
}

// TestRecord is a record read from a TestOutputTopic.
type TestRecord[K, V any] struct {
	Key       K     // the record key
	Value     V     // the record value
	Timestamp int64 // ms since the epoch
	// IsNullValue marks a tombstone (Value is then the zero V).
	IsNullValue bool
}

// TestOutputTopic reads what a topology wrote to a topic (Kafka Streams'
// TestOutputTopic). Reading consumes.
type TestOutputTopic[K, V any] struct {
	d     *TestDriver
	topic string
	ks    Serde[K]
	vs    Serde[V]
	next  int
}

// CreateOutputTopic returns an output topic of d. Internal topics are
// named in full (<application.id>-<name>-changelog).
func CreateOutputTopic[K, V any](d *TestDriver, topic string, keySerde Serde[K], valueSerde Serde[V]) *TestOutputTopic[K, V] {
	return &TestOutputTopic[K, V]{d: d, topic: topic, ks: keySerde, vs: valueSerde}
}

// QueueSize is the number of records not read yet.
func (o *TestOutputTopic[K, V]) QueueSize() int { return len(o.d.outputs[o.topic]) - o.next }

// IsEmpty says every record has been read.
func (o *TestOutputTopic[K, V]) IsEmpty() bool { return o.QueueSize() == 0 }

// ReadRecord reads the next record.
func (o *TestOutputTopic[K, V]) ReadRecord() (TestRecord[K, V], error) {
	var out TestRecord[K, V]
	rs := o.d.outputs[o.topic]
	if o.next >= len(rs) {
		return out, fmt.Errorf("streams: output topic %q is empty", o.topic)
	}
	r := rs[o.next]
	o.next++
	out.Timestamp = r.ts
	if r.key != nil {
		k, err := o.ks.Deserialize(o.topic, r.key)
		if err != nil {
			return out, err
		}
		out.Key = k
	}
	if r.val == nil {
		out.IsNullValue = true
		return out, nil
	}
	v, err := o.vs.Deserialize(o.topic, r.val)
	out.Value = v
	return out, err
}

// ReadRecordsToList reads every record not read yet.
func (o *TestOutputTopic[K, V]) ReadRecordsToList() ([]TestRecord[K, V], error) {
	var out []TestRecord[K, V]
	for !o.IsEmpty() {
		r, err := o.ReadRecord()
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadKeyValuesToMap reads every record not read yet into the latest
// value per key; a tombstone removes the key.
func (o *TestOutputTopic[K, V]) ReadKeyValuesToMap() (map[string]V, error) {
	out := map[string]V{}
	rs, err := o.ReadRecordsToList()
	for _, r := range rs {
		k := fmt.Sprint(r.Key)
		if r.IsNullValue {
			delete(out, k)
		} else {
			out[k] = r.Value
		}
	}
	return out, err
}
