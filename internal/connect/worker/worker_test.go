package worker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/connect"
)

func TestParseConfigRefusesUnknownAndUnsupportedKeys(t *testing.T) {
	base := map[string]string{"bootstrap.servers": "127.0.0.1:9092", "offset.storage.file.filename": "/tmp/x"}
	c, err := ParseConfig(base, Standalone)
	if err != nil {
		t.Fatal(err)
	}
	if c.WorkerID() != "127.0.0.1:8083" || c.OffsetFlushInterval.Milliseconds() != 60000 || c.KeyConverter != "org.apache.kafka.connect.json.JsonConverter" {
		t.Fatalf("defaults: %+v", c)
	}
	for k, v := range map[string]string{
		"no.such.key":                 "1",
		"producer.no.such":            "1",
		"consumer.enable.auto.commit": "true",
		"connect.protocol":            "weird",
		"listeners":                   "https://127.0.0.1:1",
		"rest.extension.classes":      "com.example.Ext",
	} {
		p := map[string]string{k: v}
		for bk, bv := range base {
			p[bk] = bv
		}
		if _, err := ParseConfig(p, Standalone); err == nil || !strings.Contains(err.Error(), strings.SplitN(k, ".", 2)[0]) {
			t.Errorf("%s=%s: err %v, want one naming it", k, v, err)
		}
	}
	if _, err := ParseConfig(map[string]string{"bootstrap.servers": "x:1"}, Standalone); err == nil {
		t.Error("standalone without offset.storage.file.filename accepted")
	}
	if _, err := ParseConfig(map[string]string{"bootstrap.servers": "x:1", "group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o"}, Distributed); err == nil || !strings.Contains(err.Error(), "status.storage.topic") {
		t.Errorf("distributed without status.storage.topic: %v", err)
	}
	for _, v := range []string{"disabled", "preparing", "enabled"} {
		c, err := ParseConfig(map[string]string{"bootstrap.servers": "x:1", "group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o", "status.storage.topic": "s", "exactly.once.source.support": v}, Distributed)
		if err != nil {
			t.Fatalf("exactly.once.source.support=%s: %v", v, err)
		}
		if c.ExactlyOnce() != (v == "enabled") || c.Fencing() != (v != "disabled") {
			t.Errorf("exactly.once.source.support=%s: ExactlyOnce %v Fencing %v", v, c.ExactlyOnce(), c.Fencing())
		}
		if id := c.TransactionalID("conn", 2); id != "g-conn-2" {
			t.Errorf("transactional id %q, want g-conn-2", id)
		}
	}
	if _, err := ParseConfig(map[string]string{"bootstrap.servers": "x:1", "offset.storage.file.filename": "/tmp/o", "exactly.once.source.support": "enabled"}, Standalone); err == nil {
		t.Error("exactly.once.source.support=enabled accepted in standalone mode")
	}
}

func TestOffsetKeyFormat(t *testing.T) {
	k, err := OffsetKey("conn", map[string]any{"filename": "/a"})
	if err != nil || string(k) != `["conn",{"filename":"/a"}]` {
		t.Fatalf("key %s %v", k, err)
	}
	name, part, err := ParseOffsetKey(k)
	if err != nil || name != "conn" || part["filename"] != "/a" {
		t.Fatalf("parsed %s %v %v", name, part, err)
	}
	off, err := ParseOffsetValue([]byte(`{"position":12,"ratio":0.5}`))
	if err != nil || off["position"] != int64(12) || off["ratio"] != 0.5 {
		t.Fatalf("value %v %v", off, err)
	}
}

func TestFileOffsetsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets")
	f, err := OpenFileOffsets(path)
	if err != nil {
		t.Fatal(err)
	}
	part := map[string]any{"filename": "/in"}
	if err := f.Put(context.Background(), "c", []OffsetEntry{{Partition: part, Offset: map[string]any{"position": int64(7)}}}); err != nil {
		t.Fatal(err)
	}
	g, err := OpenFileOffsets(path)
	if err != nil {
		t.Fatal(err)
	}
	off, err := g.Get("c", part)
	if err != nil || off["position"] != int64(7) {
		t.Fatalf("reopened: %v %v", off, err)
	}
	if err := g.Put(context.Background(), "c", []OffsetEntry{{Partition: part}}); err != nil {
		t.Fatal(err)
	}
	if all, _ := g.All("c"); len(all) != 0 {
		t.Fatalf("after tombstone: %v", all)
	}
}

// Only the offsets of an acknowledged prefix of each source partition's
// records are committable.
func TestSubmittedCommitsAcknowledgedPrefix(t *testing.T) {
	s := newSubmitted()
	pa, pb := map[string]any{"p": "a"}, map[string]any{"p": "b"}
	a1 := s.add(pa, map[string]any{"o": int64(1)})
	a2 := s.add(pa, map[string]any{"o": int64(2)})
	b1 := s.add(pb, map[string]any{"o": int64(1)})
	s.ack(a2, nil)
	if c := s.committable(); len(c) != 0 {
		t.Fatalf("committable before the first ack: %v", c)
	}
	s.ack(a1, nil)
	s.ack(b1, nil)
	c := s.committable()
	if len(c) != 2 {
		t.Fatalf("committable: %v", c)
	}
	for _, e := range c {
		if e.Partition["p"] == "a" && e.Offset["o"] != int64(2) {
			t.Fatalf("partition a at %v", e.Offset)
		}
	}
	if !s.waitDrained(0) {
		t.Fatal("not drained")
	}
}

type upper struct{}

func (upper) Config() *connect.ConfigDef        { return connect.NewConfigDef() }
func (upper) Configure(map[string]string) error { return nil }
func (upper) Close() error                      { return nil }
func (upper) Apply(r *connect.Record) (*connect.Record, error) {
	c := r.Clone()
	c.Value = strings.ToUpper(r.Value.(string))
	return c, nil
}

type topicIs struct{ topic string }

func (p *topicIs) Config() *connect.ConfigDef { return connect.NewConfigDef() }
func (p *topicIs) Configure(props map[string]string) error {
	p.topic = props["pattern"]
	return nil
}
func (p *topicIs) Close() error                         { return nil }
func (p *topicIs) Test(r *connect.Record) (bool, error) { return r.Topic == p.topic, nil }

func init() {
	connect.RegisterTransformation("test.Upper", "1", func() connect.Transformation { return upper{} })
	connect.RegisterPredicate("test.TopicIs", "1", func() connect.Predicate { return &topicIs{} })
}

func TestChainWithPredicateAndNegate(t *testing.T) {
	props := map[string]string{
		"transforms": "up", "transforms.up.type": "test.Upper", "transforms.up.predicate": "isA",
		"predicates": "isA", "predicates.isA.type": "test.TopicIs", "predicates.isA.pattern": "a",
	}
	c, err := NewChain(props)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]string{"a": "X", "b": "x"} {
		out, err := c.Apply(&connect.Record{Topic: topic, Value: "x"})
		if err != nil || out.Value != want {
			t.Fatalf("topic %s: %v %v", topic, out, err)
		}
	}
	props["transforms.up.negate"] = "true"
	c, err = NewChain(props)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := c.Apply(&connect.Record{Topic: "b", Value: "x"}); out.Value != "X" {
		t.Fatalf("negated: %v", out.Value)
	}
	if _, err := NewChain(map[string]string{"transforms": "t", "transforms.t.type": "test.Upper", "transforms.t.predicate": "none"}); err == nil {
		t.Fatal("undefined predicate accepted")
	}
}

type eoConnector struct {
	connect.SourceConnector
	support    connect.ExactlyOnceSupport
	boundaries bool
}

func (c eoConnector) ExactlyOnceSupport(map[string]string) connect.ExactlyOnceSupport {
	return c.support
}
func (c eoConnector) CanDefineTransactionBoundaries(map[string]string) bool { return c.boundaries }

// Kafka's preflight checks of a source connector under exactly-once support.
func TestValidateExactlyOnce(t *testing.T) {
	type plain struct{ connect.SourceConnector }
	for _, c := range []struct {
		name  string
		conn  connect.Connector
		props map[string]string
		eos   bool
		want  string // the error's start on its key, "" for none
	}{
		{"required without worker support", eoConnector{support: connect.ExactlyOnceSupported}, map[string]string{KeyExactlyOnce: "required"}, false, "This worker does not have exactly-once source support enabled."},
		{"requested without worker support", plain{}, map[string]string{KeyExactlyOnce: "requested"}, false, ""},
		{"required, supported", eoConnector{support: connect.ExactlyOnceSupported}, map[string]string{KeyExactlyOnce: "required"}, true, ""},
		{"required, unsupported", eoConnector{support: connect.ExactlyOnceUnsupported}, map[string]string{KeyExactlyOnce: "required"}, true, "The connector does not support exactly-once semantics"},
		{"required, no preflight", plain{}, map[string]string{KeyExactlyOnce: "required"}, true, "The connector does not implement the API required for preflight validation"},
		{"requested, no preflight", plain{}, map[string]string{KeyExactlyOnce: "requested"}, true, ""},
		{"connector boundaries, able", eoConnector{boundaries: true}, map[string]string{KeyTxnBoundary: "connector"}, true, ""},
		{"connector boundaries, unable", eoConnector{}, map[string]string{KeyTxnBoundary: "connector"}, true, "The connector does not support connector-defined transaction boundaries"},
		{"connector boundaries, no API", plain{}, map[string]string{KeyTxnBoundary: "connector"}, true, "The connector does not support connector-defined transaction boundaries"},
		{"poll boundaries", plain{}, map[string]string{KeyTxnBoundary: "poll"}, true, ""},
	} {
		v := &Validation{}
		validateExactlyOnce(v, c.conn, c.props, c.eos)
		errs := v.Errors()
		switch {
		case c.want == "" && len(errs) != 0:
			t.Errorf("%s: %v, want no error", c.name, errs)
		case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0], c.want)):
			t.Errorf("%s: %v, want %q", c.name, errs, c.want)
		}
	}
}

// The task's transaction requests: abort wins over commit at one point, and
// a batch's requests do not leak into the next.
func TestTxnContext(t *testing.T) {
	c := newTxnContext()
	a, b := &connect.SourceRecord{}, &connect.SourceRecord{}
	c.CommitTransactionAfter(a)
	c.CommitTransactionAfter(b)
	c.AbortTransactionAfter(b)
	if commit, abort := c.afterRecord(a); !commit || abort {
		t.Errorf("after a: commit %v abort %v", commit, abort)
	}
	if commit, abort := c.afterRecord(b); commit || !abort {
		t.Errorf("after b: commit %v abort %v", commit, abort)
	}
	c.CommitTransaction()
	if commit, abort := c.afterBatch(); !commit || abort {
		t.Errorf("batch: commit %v abort %v", commit, abort)
	}
	c.CommitTransactionAfter(a)
	c.afterBatch()
	if commit, abort := c.afterRecord(a); commit || abort || len(c.commitAfter) != 0 {
		t.Error("a request for a record of an earlier batch survived it")
	}
}

func TestTransactionalProducerProps(t *testing.T) {
	if _, d, err := transactionalProducerProps(map[string]string{"acks": "all", "transaction.timeout.ms": "30000", "linger.ms": "5"}); err != nil || d != 30*time.Second {
		t.Errorf("%v %v", d, err)
	}
	for _, bad := range []map[string]string{{"acks": "1"}, {"enable.idempotence": "false"}, {"transactional.id": "x"}, {"transaction.timeout.ms": "-1"}} {
		if _, _, err := transactionalProducerProps(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
