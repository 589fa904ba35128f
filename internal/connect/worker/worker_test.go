package worker

import (
	"context"
	"errors"
	"log/slog"
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

// A secured Kafka Connect worker file repeats the worker's security
// settings as producer.*, consumer.* and admin.* (Kafka's worker does not
// pass them on): the same values are accepted, a different one is refused
// naming the key. plugin.path is accepted, rest.advertised.* make the
// worker id.
func TestRepeatedClientSecuritySettings(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="connect" password="secret";`
	p := map[string]string{"bootstrap.servers": "127.0.0.1:9092", "offset.storage.file.filename": "/tmp/x",
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}
	for _, prefix := range []string{"producer.", "consumer.", "admin."} {
		for _, k := range []string{"security.protocol", "sasl.mechanism", "sasl.jaas.config"} {
			p[prefix+k] = p[k]
		}
	}
	p["plugin.path"] = "/usr/share/java,/opt/connectors" // accepted: every plugin is built in
	p["rest.advertised.host.name"], p["rest.advertised.port"] = "connect-1.example", "18083"
	c, err := ParseConfig(p, Standalone)
	if err != nil {
		t.Fatalf("repeated security settings: %v", err)
	}
	if c.WorkerID() != "connect-1.example:18083" {
		t.Fatalf("worker id %q, want the advertised host and port", c.WorkerID())
	}
	for _, k := range []string{"producer.sasl.mechanism", "consumer.security.protocol", "admin.sasl.mechanism", "producer.ssl.truststore.location"} {
		q := map[string]string{}
		for pk, pv := range p {
			q[pk] = pv
		}
		q[k] = "SCRAM-SHA-512"
		if _, err := ParseConfig(q, Standalone); err == nil || !strings.Contains(err.Error(), k+" differs") {
			t.Errorf("%s different from the worker's: %v", k, err)
		}
	}
}

// errors.retry.timeout: a retriable error is retried with backoff until it
// passes or the timeout is spent; 0 (the default) does not retry, and a
// non-retriable error is not retried; what remains fails the step unless
// errors.tolerance=all skips it.
func TestErrorsRetryTimeout(t *testing.T) {
	handler := func(props map[string]string) *errorHandler {
		props["name"], props["connector.class"] = "c", "FileStreamSource"
		p, err := parseErrorPolicy(props, false)
		if err != nil {
			t.Fatal(err)
		}
		return &errorHandler{policy: p, log: slog.New(slog.DiscardHandler), conn: "c"}
	}
	calls := 0
	flaky := func(failures int, retriable bool) func() error {
		calls = 0
		return func() error {
			calls++
			if calls > failures {
				return nil
			}
			if retriable {
				return connect.Retriable(errors.New("busy"))
			}
			return errors.New("broken")
		}
	}
	ctx := context.Background()
	retrying := handler(map[string]string{"errors.retry.timeout": "5000", "errors.retry.delay.max.ms": "50"})
	if err := retrying.run(ctx, StageTaskPut, "", nil, flaky(3, true)); err != nil || calls != 4 {
		t.Fatalf("retriable within the timeout: %v after %d calls", err, calls)
	}
	if err := retrying.run(ctx, StageTaskPut, "", nil, flaky(3, false)); err == nil || calls != 1 {
		t.Fatalf("non-retriable: %v after %d calls", err, calls)
	}
	start := time.Now()
	short := handler(map[string]string{"errors.retry.timeout": "400", "errors.retry.delay.max.ms": "100"})
	if err := short.run(ctx, StageTaskPut, "", nil, flaky(1000, true)); err == nil || calls < 2 || time.Since(start) > 2*time.Second {
		t.Fatalf("retriable past the timeout: %v after %d calls in %v", err, calls, time.Since(start))
	}
	if err := handler(map[string]string{}).run(ctx, StageTaskPut, "", nil, flaky(1, true)); err == nil || calls != 1 {
		t.Fatalf("errors.retry.timeout=0: %v after %d calls", err, calls)
	}
	tolerant := handler(map[string]string{"errors.tolerance": "all"})
	if err := tolerant.run(ctx, StageTaskPut, "", nil, flaky(1, false)); !errors.Is(err, errSkip) {
		t.Fatalf("errors.tolerance=all: %v", err)
	}
}
