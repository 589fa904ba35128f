package connect

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Every endpoint of Kafka 4's Connect REST API on a standalone worker, with
// its JSON shape and status code, the error body {"error_code","message"},
// 404 for an unknown connector and 400 with the validation for a bad config.
func TestRESTContract(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	dir := t.TempDir()
	port := freeport.Port(t)
	w := startWorker(t, "standalone", port, workerProps(b, port, "offset.storage.file.filename="+filepath.Join(dir, "offsets")))
	u := w.url
	in := writeFile(t, dir, "in.txt", numbered("r", 0, 20))
	out := filepath.Join(dir, "out.txt")

	// GET /
	var root map[string]any
	mustCall(t, u, "GET", "/", nil, 200, &root)
	for _, k := range []string{"version", "commit", "kafka_cluster_id"} {
		if _, ok := root[k]; !ok {
			t.Fatalf("GET / lacks %s: %v", k, root)
		}
	}
	if root["kafka_cluster_id"] == "" {
		t.Fatalf("GET / kafka_cluster_id empty")
	}

	// Empty list, then create.
	var names []string
	mustCall(t, u, "GET", "/connectors", nil, 200, &names)
	if len(names) != 0 {
		t.Fatalf("connectors: %v", names)
	}
	srcCfg := map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "rest-topic", "tasks.max": "1"}
	var info struct {
		Name   string            `json:"name"`
		Config map[string]string `json:"config"`
		Tasks  []struct {
			Connector string `json:"connector"`
			Task      int    `json:"task"`
		} `json:"tasks"`
		Type string `json:"type"`
	}
	mustCall(t, u, "POST", "/connectors", map[string]any{"name": "src", "config": srcCfg}, 201, &info)
	if info.Name != "src" || info.Type != "source" || info.Config["name"] != "src" || len(info.Tasks) != 1 || info.Tasks[0].Connector != "src" {
		t.Fatalf("create answer: %+v", info)
	}
	expectError(t, u, "POST", "/connectors", map[string]any{"name": "src", "config": srcCfg}, 409, "already exists")
	waitRunning(t, u, "src", 1)

	// PUT config: create (201) and update (200).
	sinkCfg := map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "rest-topic"}
	mustCall(t, u, "PUT", "/connectors/sink/config", sinkCfg, 201, &info)
	sinkCfg["tasks.max"] = "2"
	mustCall(t, u, "PUT", "/connectors/sink/config", sinkCfg, 200, &info)
	if len(info.Tasks) != 2 || info.Type != "sink" {
		t.Fatalf("updated sink: %+v", info)
	}
	// PATCH config (KIP-477): change one key, remove another with null.
	mustCall(t, u, "PATCH", "/connectors/sink/config", map[string]any{"tasks.max": "1"}, 200, &info)
	if info.Config["tasks.max"] != "1" || len(info.Tasks) != 1 {
		t.Fatalf("patched sink: %+v", info)
	}
	waitRunning(t, u, "sink", 1)
	var cfg map[string]string
	mustCall(t, u, "GET", "/connectors/sink/config", nil, 200, &cfg)
	if cfg["topics"] != "rest-topic" || cfg["name"] != "sink" {
		t.Fatalf("config: %v", cfg)
	}
	mustCall(t, u, "GET", "/connectors/sink", nil, 200, &info)

	// List with expand.
	var expanded map[string]map[string]json.RawMessage
	mustCall(t, u, "GET", "/connectors?expand=status&expand=info", nil, 200, &expanded)
	if len(expanded) != 2 || expanded["src"]["status"] == nil || expanded["src"]["info"] == nil {
		t.Fatalf("expanded: %v", expanded)
	}
	mustCall(t, u, "GET", "/connectors?expand=status", nil, 200, &expanded)
	if expanded["sink"]["info"] != nil || expanded["sink"]["status"] == nil {
		t.Fatalf("expand=status: %v", expanded)
	}

	// Tasks and task status.
	var tasks []struct {
		ID struct {
			Connector string `json:"connector"`
			Task      int    `json:"task"`
		} `json:"id"`
		Config map[string]string `json:"config"`
	}
	mustCall(t, u, "GET", "/connectors/src/tasks", nil, 200, &tasks)
	if len(tasks) != 1 || tasks[0].ID.Connector != "src" || tasks[0].Config["topic"] != "rest-topic" {
		t.Fatalf("tasks: %+v", tasks)
	}
	var ts map[string]any
	mustCall(t, u, "GET", "/connectors/src/tasks/0/status", nil, 200, &ts)
	if ts["id"] != float64(0) || ts["state"] != "RUNNING" || ts["worker_id"] == nil {
		t.Fatalf("task status: %v", ts)
	}
	expectError(t, u, "GET", "/connectors/src/tasks/7/status", nil, 404, "")
	mustCall(t, u, "POST", "/connectors/src/tasks/0/restart", nil, 204, nil)
	expectError(t, u, "POST", "/connectors/src/tasks/9/restart", nil, 404, "")

	// Restart: the connector only (204), with tasks (202 and the status).
	mustCall(t, u, "POST", "/connectors/src/restart", nil, 204, nil)
	var rs connStatus
	mustCall(t, u, "POST", "/connectors/src/restart?includeTasks=true&onlyFailed=false", nil, 202, &rs)
	if rs.Connector.State != "RESTARTING" || len(rs.Tasks) != 1 || rs.Tasks[0].State != "RESTARTING" {
		t.Fatalf("restart answer: %+v", rs)
	}
	mustCall(t, u, "POST", "/connectors/src/restart?includeTasks=true&onlyFailed=true", nil, 202, &rs)
	waitRunning(t, u, "src", 1)

	// Pause, resume.
	mustCall(t, u, "PUT", "/connectors/sink/pause", nil, 202, nil)
	poll.Until(t, 30*time.Second, "sink PAUSED", func() error {
		s, err := status(u, "sink")
		if err != nil {
			return err
		}
		if s.Connector.State != "PAUSED" || len(s.Tasks) != 1 || s.Tasks[0].State != "PAUSED" {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
	mustCall(t, u, "PUT", "/connectors/sink/resume", nil, 202, nil)
	waitRunning(t, u, "sink", 1)
	poll.Until(t, 60*time.Second, "the sink to write every line", func() error { return sameSet(lines(out), lines(in)) })

	// Topics (KIP-558).
	var topics map[string]struct {
		Topics []string `json:"topics"`
	}
	poll.Until(t, 30*time.Second, "the sink's topics", func() error {
		mustCall(t, u, "GET", "/connectors/sink/topics", nil, 200, &topics)
		if fmt.Sprint(topics["sink"].Topics) != "[rest-topic]" {
			return fmt.Errorf("%v", topics)
		}
		return nil
	})
	mustCall(t, u, "PUT", "/connectors/sink/topics/reset", nil, 202, nil)
	mustCall(t, u, "GET", "/connectors/sink/topics", nil, 200, &topics)
	if len(topics["sink"].Topics) != 0 {
		t.Fatalf("topics after reset: %v", topics)
	}

	// Offsets (KIP-875): readable while running, changed only when STOPPED.
	var offs struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	poll.Until(t, 30*time.Second, "the source's offsets", func() error {
		mustCall(t, u, "GET", "/connectors/src/offsets", nil, 200, &offs)
		if len(offs.Offsets) != 1 || offs.Offsets[0].Partition["filename"] != in {
			return fmt.Errorf("%+v", offs)
		}
		return nil
	})
	patch := map[string]any{"offsets": []any{map[string]any{"partition": map[string]any{"filename": in}, "offset": map[string]any{"position": 0}}}}
	expectError(t, u, "PATCH", "/connectors/src/offsets", patch, 400, "Connectors must be in the STOPPED state before their offsets can be modified")
	expectError(t, u, "DELETE", "/connectors/src/offsets", nil, 400, "STOPPED")
	mustCall(t, u, "PUT", "/connectors/src/stop", nil, 202, nil)
	poll.Until(t, 30*time.Second, "src STOPPED without tasks", func() error {
		s, err := status(u, "src")
		if err != nil {
			return err
		}
		if s.Connector.State != "STOPPED" || len(s.Tasks) != 0 {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
	var msg map[string]string
	mustCall(t, u, "PATCH", "/connectors/src/offsets", patch, 200, &msg)
	if !strings.Contains(msg["message"], "altered successfully") {
		t.Fatalf("alter: %v", msg)
	}
	mustCall(t, u, "GET", "/connectors/src/offsets", nil, 200, &offs)
	if len(offs.Offsets) != 1 || offs.Offsets[0].Offset["position"] != float64(0) {
		t.Fatalf("offsets after alter: %+v", offs)
	}
	mustCall(t, u, "DELETE", "/connectors/src/offsets", nil, 200, &msg)
	if !strings.Contains(msg["message"], "reset successfully") {
		t.Fatalf("reset: %v", msg)
	}
	mustCall(t, u, "GET", "/connectors/src/offsets", nil, 200, &offs)
	if len(offs.Offsets) != 0 {
		t.Fatalf("offsets after reset: %+v", offs)
	}
	// A sink's offsets are its consumer group's.
	mustCall(t, u, "PUT", "/connectors/sink/stop", nil, 202, nil)
	poll.Until(t, 30*time.Second, "sink offsets alterable", func() error {
		code, body, err := call(u, "PATCH", "/connectors/sink/offsets", map[string]any{"offsets": []any{map[string]any{
			"partition": map[string]any{"kafka_topic": "rest-topic", "kafka_partition": 0}, "offset": map[string]any{"kafka_offset": 5}}}})
		if err != nil || code != 200 {
			return fmt.Errorf("%d %s %v", code, body, err)
		}
		return nil
	})
	mustCall(t, u, "GET", "/connectors/sink/offsets", nil, 200, &offs)
	if len(offs.Offsets) != 1 || offs.Offsets[0].Offset["kafka_offset"] != float64(5) || offs.Offsets[0].Partition["kafka_topic"] != "rest-topic" {
		t.Fatalf("sink offsets: %+v", offs)
	}

	// Plugins, their configs, validation.
	var plugins []map[string]string
	mustCall(t, u, "GET", "/connector-plugins", nil, 200, &plugins)
	if len(plugins) < 2 || !hasPlugin(plugins, "org.apache.kafka.connect.file.FileStreamSourceConnector", "source") || hasPlugin(plugins, "org.apache.kafka.connect.storage.StringConverter", "converter") {
		t.Fatalf("plugins: %v", plugins)
	}
	mustCall(t, u, "GET", "/connector-plugins?connectorsOnly=false", nil, 200, &plugins)
	if !hasPlugin(plugins, "org.apache.kafka.connect.storage.StringConverter", "converter") {
		t.Fatalf("all plugins: %v", plugins)
	}
	var keys []map[string]any
	mustCall(t, u, "GET", "/connector-plugins/FileStreamSourceConnector/config", nil, 200, &keys)
	if len(keys) != 3 || keys[0]["name"] != "file" || keys[1]["required"] != true {
		t.Fatalf("plugin config: %v", keys)
	}
	expectError(t, u, "GET", "/connector-plugins/NoSuchPlugin/config", nil, 404, "")
	var v validation
	mustCall(t, u, "PUT", "/connector-plugins/FileStreamSinkConnector/config/validate", map[string]string{"connector.class": "FileStreamSinkConnector", "name": "x", "topics": "a", "tasks.max": "0"}, 200, &v)
	if v.Name != "org.apache.kafka.connect.file.FileStreamSinkConnector" || v.ErrorCount != 1 || len(v.errorsOf("tasks.max")) != 1 || len(v.Groups) == 0 {
		t.Fatalf("validate: %+v", v)
	}
	expectError(t, u, "PUT", "/connector-plugins/FileStreamSinkConnector/config/validate", map[string]string{"connector.class": "FileStreamSource"}, 400, "does not match")

	// Loggers.
	var loggers map[string]map[string]any
	mustCall(t, u, "GET", "/admin/loggers", nil, 200, &loggers)
	if loggers["root"]["level"] == nil {
		t.Fatalf("loggers: %v", loggers)
	}
	var changed []string
	mustCall(t, u, "PUT", "/admin/loggers/root", map[string]string{"level": "DEBUG"}, 200, &changed)
	var lvl map[string]any
	mustCall(t, u, "GET", "/admin/loggers/root", nil, 200, &lvl)
	if lvl["level"] != "DEBUG" || lvl["last_modified"] == nil {
		t.Fatalf("root logger: %v", lvl)
	}
	mustCall(t, u, "PUT", "/admin/loggers/root", map[string]string{"level": "INFO"}, 200, &changed)
	expectError(t, u, "PUT", "/admin/loggers/root", map[string]string{"level": "LOUD"}, 400, "")

	// 404s and bad input.
	for _, p := range []string{"/connectors/none", "/connectors/none/config", "/connectors/none/status", "/connectors/none/tasks", "/connectors/none/offsets", "/connectors/none/topics"} {
		expectError(t, u, "GET", p, nil, 404, "")
	}
	expectError(t, u, "PUT", "/connectors/none/pause", nil, 404, "")
	expectError(t, u, "DELETE", "/connectors/none", nil, 404, "")
	expectError(t, u, "POST", "/connectors/none/restart", nil, 404, "")
	expectError(t, u, "PATCH", "/connectors/none/config", map[string]string{"a": "b"}, 404, "")
	expectError(t, u, "POST", "/connectors", `{"name":"x","config":`, 400, "")
	expectError(t, u, "POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "com.example.NoSuchConnector"}}, 400, "Failed to find any class that implements Connector")
	expectError(t, u, "POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "FileStreamSource"}}, 400, `Missing required configuration "topic"`)
	expectError(t, u, "POST", "/connectors", map[string]any{"name": "bad", "config": map[string]string{"connector.class": "FileStreamSink"}}, 400, "Must configure one of topics or topics.regex")

	// Delete.
	mustCall(t, u, "DELETE", "/connectors/src", nil, 204, nil)
	mustCall(t, u, "DELETE", "/connectors/sink", nil, 204, nil)
	mustCall(t, u, "GET", "/connectors", nil, 200, &names)
	if len(names) != 0 {
		t.Fatalf("connectors after delete: %v", names)
	}
}

type validation struct {
	Name       string   `json:"name"`
	ErrorCount int      `json:"error_count"`
	Groups     []string `json:"groups"`
	Configs    []struct {
		Definition map[string]any `json:"definition"`
		Value      struct {
			Name   string   `json:"name"`
			Errors []string `json:"errors"`
		} `json:"value"`
	} `json:"configs"`
}

func (v validation) errorsOf(name string) []string {
	for _, c := range v.Configs {
		if c.Value.Name == name {
			return c.Value.Errors
		}
	}
	return nil
}

func hasPlugin(ps []map[string]string, class, typ string) bool {
	for _, p := range ps {
		if p["class"] == class && p["type"] == typ {
			return true
		}
	}
	return false
}

// expectError requires an error answer with Kafka's body.
func expectError(t testing.TB, base, method, path string, body any, code int, contains string) {
	t.Helper()
	var e struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	mustCall(t, base, method, path, body, code, &e)
	if e.Code != code || e.Message == "" || !strings.Contains(e.Message, contains) {
		t.Fatalf("%s %s: error body %+v, want code %d containing %q", method, path, e, code, contains)
	}
}
