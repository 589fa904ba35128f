package http

import (
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vltava/vltava/connect"
)

type server struct {
	mu       sync.Mutex
	bodies   []string
	headers  []nethttp.Header
	failures int // answer 503 this many times first
}

func (s *server) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failures > 0 {
		s.failures--
		w.WriteHeader(503)
		return
	}
	s.bodies = append(s.bodies, r.Method+" "+string(b))
	s.headers = append(s.headers, r.Header.Clone())
}

func start(t *testing.T, props map[string]string) *Task {
	t.Helper()
	c := &Connector{}
	if err := c.Start(props); err != nil {
		t.Fatal(err)
	}
	task := c.NewTask().(*Task)
	task.Initialize(nil)
	if err := task.Start(props); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

func recs(vals ...any) []connect.SinkRecord {
	var out []connect.SinkRecord
	for i, v := range vals {
		out = append(out, connect.SinkRecord{Record: connect.Record{Topic: "t", Value: v}, KafkaOffset: int64(i)})
	}
	return out
}

func TestBatchesStringBodies(t *testing.T) {
	s := &server{}
	ts := httptest.NewServer(s)
	defer ts.Close()
	task := start(t, map[string]string{"http.api.url": ts.URL, "batch.max.size": "2", "batch.prefix": "<", "batch.suffix": ">",
		"batch.separator": ";", "headers": "X-A:1|X-B:two", "request.method": "PUT"})
	if err := task.Put(recs("a", "b", nil, "c")); err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.bodies, "|") != "PUT <a;b>|PUT <c>" {
		t.Fatalf("bodies %q", s.bodies)
	}
	if s.headers[0].Get("X-B") != "two" {
		t.Fatalf("headers %v", s.headers[0])
	}
}

func TestJSONArrayAndRetries(t *testing.T) {
	s := &server{failures: 2}
	ts := httptest.NewServer(s)
	defer ts.Close()
	st := &connect.Schema{Type: connect.StructT, Fields: []connect.Field{{Name: "id", Schema: &connect.Schema{Type: connect.Int32}}}}
	v := connect.NewStruct(st)
	_ = v.Put("id", int32(7))
	task := start(t, map[string]string{"http.api.url": ts.URL, "batch.max.size": "10", "request.body.format": "json",
		"batch.json.as.array": "true", "retry.backoff.ms": "1", "max.retries": "3", "auth.type": "BASIC", "connection.user": "u", "connection.password": "p"})
	r := recs(map[string]any{"a": int64(1)}, "x")
	r = append(r, connect.SinkRecord{Record: connect.Record{Topic: "t", ValueSchema: st, Value: v}})
	if err := task.Put(r); err != nil {
		t.Fatal(err)
	}
	if len(s.bodies) != 1 || s.bodies[0] != `POST [{"a":1},"x",{"id":7}]` {
		t.Fatalf("bodies %q", s.bodies)
	}
	if u, p, ok := (&nethttp.Request{Header: s.headers[0]}).BasicAuth(); !ok || u != "u" || p != "p" {
		t.Fatal("no basic auth")
	}
	if s.headers[0].Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", s.headers[0].Get("Content-Type"))
	}
}

func TestBehaviorOnError(t *testing.T) {
	s := &server{failures: 100}
	ts := httptest.NewServer(s)
	defer ts.Close()
	props := map[string]string{"http.api.url": ts.URL, "retry.backoff.ms": "1", "max.retries": "2"}
	if err := start(t, props).Put(recs("a")); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("fail: %v", err)
	}
	if s.failures != 97 {
		t.Fatalf("%d attempts, want 3", 100-s.failures)
	}
	props["behavior.on.error"] = "log"
	if err := start(t, props).Put(recs("a")); err != nil {
		t.Fatalf("log: %v", err)
	}
	// A status outside retry.on.status.codes is not retried.
	s.failures = 100
	props["retry.on.status.codes"] = "500-502"
	props["behavior.on.error"] = "fail"
	_ = start(t, props).Put(recs("a"))
	if s.failures != 99 {
		t.Fatalf("a 503 was retried %d times with retry.on.status.codes=500-502", 99-s.failures)
	}
	for _, bad := range []map[string]string{{"http.api.url": "ftp://x"}, {"http.api.url": ts.URL, "oauth2.token.url": "x"}, {"http.api.url": ts.URL, "headers": "novalue"}} {
		if err := (&Connector{}).Start(bad); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}
