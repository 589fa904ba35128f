package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type consumed struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Timestamp int64   `json:"timestamp"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Headers   []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"headers"`
}

func decodeLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var all []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("decoding %q: %v", line, err)
		}
		all = append(all, v)
	}
	return all
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return v
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "rt", "--partitions", "1")
	ok(t, b, "k1|v1\nk2|v=2\n|empty-key\n", "produce", "rt", "--key-separator", "|",
		"--header", "src=cli", "--header", "n=1", "--compression", "zstd", "--linger", "5ms")

	recs := decodeLines[consumed](t, ok(t, b, "", "consume", "rt", "--from-beginning", "--max-messages", "3", "--timeout", "10s", "--format", "json"))
	want := [][2]string{{"k1", "v1"}, {"k2", "v=2"}, {"", "empty-key"}}
	if len(recs) != len(want) {
		t.Fatalf("consumed %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if r.Key == nil || *r.Key != want[i][0] || r.Value == nil || *r.Value != want[i][1] {
			t.Errorf("record %d: key %v value %v, want %q/%q", i, r.Key, r.Value, want[i][0], want[i][1])
		}
		if r.Topic != "rt" || r.Offset != int64(i) || r.Timestamp <= 0 {
			t.Errorf("record %d: topic %q offset %d timestamp %d", i, r.Topic, r.Offset, r.Timestamp)
		}
		if len(r.Headers) != 2 || r.Headers[0].Key != "src" || r.Headers[0].Value != "cli" || r.Headers[1].Key != "n" || r.Headers[1].Value != "1" {
			t.Errorf("record %d: headers %+v", i, r.Headers)
		}
	}

	kv := ok(t, b, "", "consume", "rt", "--partition", "0", "--offset", "1", "--max-messages", "1", "--timeout", "10s", "--format", "kv")
	if kv != "k2\tv=2\n" {
		t.Errorf("kv format from offset 1: %q", kv)
	}
	// Without key parsing the whole line is the value and keys are null.
	ok(t, b, "a|b\n", "produce", "rt", "--acks", "1")
	last := decodeLines[consumed](t, ok(t, b, "", "consume", "rt", "--partition", "0", "--offset", "3", "--timeout", "2s", "--format", "json"))
	if len(last) != 1 || last[0].Key != nil || *last[0].Value != "a|b" {
		t.Errorf("unkeyed record: %+v", last)
	}
	// --timeout ends an idle consume with success.
	r := run(t, b, "", "consume", "rt", "--timeout", "500ms")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "Processed a total of 0 messages") {
		t.Errorf("idle consume: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestProduceReportsFailedLines(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "pf", "--partitions", "1")
	f := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(f, []byte("k:v\nno separator\nk2:v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr := fails(t, b, "", "produce", "pf", "--file", f, "--key-separator", ":")
	if !strings.Contains(stderr, "line 2: ") || strings.Contains(stderr, "line 1:") || !strings.Contains(stderr, "1 of 3 records failed") {
		t.Errorf("stderr: %q", stderr)
	}
	// The good lines were still produced.
	out := ok(t, b, "", "consume", "pf", "--from-beginning", "--max-messages", "2", "--timeout", "10s", "--format", "kv", "--key-separator", "=")
	if out != "k=v\nk2=v2\n" {
		t.Errorf("consumed %q", out)
	}
}

type topicDesc struct {
	Topic             string            `json:"topic"`
	PartitionCount    int               `json:"partition_count"`
	ReplicationFactor int               `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
	Partitions        []struct {
		Partition int32   `json:"partition"`
		Leader    int32   `json:"leader"`
		Replicas  []int32 `json:"replicas"`
		ISR       []int32 `json:"isr"`
	} `json:"partitions"`
}

func TestTopicsLifecycle(t *testing.T) {
	b := startVltava(t)
	if out := ok(t, b, "", "topics", "create", "orders", "--partitions", "2", "--replication-factor", "1", "--config", "retention.ms=86400000"); !strings.Contains(out, "Created topic orders") {
		t.Errorf("create output %q", out)
	}
	if stderr := fails(t, b, "", "topics", "create", "orders"); !strings.Contains(stderr, "TOPIC_ALREADY_EXISTS") {
		t.Errorf("duplicate create: %q", stderr)
	}
	ok(t, b, "", "topics", "create", "orders", "--if-not-exists")

	list := ok(t, b, "", "topics", "list")
	if !strings.Contains(list, "TOPIC") || !strings.Contains(list, "orders") {
		t.Errorf("list table: %q", list)
	}

	descs := decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "orders", "--output", "json"))
	if len(descs) != 1 || descs[0].PartitionCount != 2 || descs[0].ReplicationFactor != 1 || len(descs[0].Partitions) != 2 {
		t.Fatalf("describe: %+v", descs)
	}
	if got := descs[0].Configs["retention.ms"]; got != "86400000" || len(descs[0].Configs) != 1 {
		t.Errorf("describe configs (only non-defaults expected): %v", descs[0].Configs)
	}
	for _, p := range descs[0].Partitions {
		if p.Leader < 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 {
			t.Errorf("partition %+v", p)
		}
	}
	table := ok(t, b, "", "topics", "describe", "orders")
	if !strings.Contains(table, "PartitionCount: 2") || !strings.Contains(table, "retention.ms=86400000") || !strings.Contains(table, "LEADER") {
		t.Errorf("describe table: %q", table)
	}

	ok(t, b, "", "topics", "alter", "orders", "--partitions", "4", "--config", "cleanup.policy=compact")
	descs = decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "orders", "--output", "json"))
	if descs[0].PartitionCount != 4 || descs[0].Configs["cleanup.policy"] != "compact" || descs[0].Configs["retention.ms"] != "86400000" {
		t.Errorf("after alter: %+v", descs[0])
	}
	if stderr := fails(t, b, "", "topics", "alter", "orders", "--partitions", "3"); !strings.Contains(stderr, "only be increased") {
		t.Errorf("shrinking: %q", stderr)
	}

	ok(t, b, "", "topics", "delete", "orders")
	stderr := fails(t, b, "", "topics", "describe", "orders")
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, `topic "orders" does not exist`) {
		t.Errorf("describe deleted topic: %q", stderr)
	}
	fails(t, b, "", "topics", "delete", "orders")
	ok(t, b, "", "topics", "delete", "orders", "--if-exists")
}

type configEntry struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

func TestConfigsAndCluster(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "cfg", "--partitions", "1")
	if got := decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--topic", "cfg", "--output", "json")); len(got) != 0 {
		t.Errorf("fresh topic has overrides: %+v", got)
	}
	ok(t, b, "", "configs", "alter", "--topic", "cfg", "--set", "retention.ms=60000", "--set", "segment.bytes=1048576")
	ok(t, b, "", "configs", "alter", "--topic", "cfg", "--delete", "segment.bytes")
	got := decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--topic", "cfg", "--output", "json"))
	if len(got) != 1 || got[0].Name != "retention.ms" || got[0].Value != "60000" || got[0].Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("after alter: %+v", got)
	}
	all := decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--topic", "cfg", "--all", "--output", "json"))
	var sawDefault bool
	for _, c := range all {
		if c.Name == "segment.bytes" && c.Source != "DYNAMIC_TOPIC_CONFIG" {
			sawDefault = true
		}
	}
	if !sawDefault {
		t.Errorf("--all lacks segment.bytes reverted to its default: %+v", all)
	}
	if stderr := fails(t, b, "", "configs", "describe", "--topic", "missing"); !strings.Contains(stderr, "does not exist") {
		t.Errorf("missing topic: %q", stderr)
	}
	if stderr := fails(t, b, "", "configs", "describe"); !strings.Contains(stderr, "exactly one of") {
		t.Errorf("no resource: %q", stderr)
	}

	type cluster struct {
		ClusterID  string `json:"cluster_id"`
		Controller int32  `json:"controller"`
		Brokers    []struct {
			ID   int32  `json:"id"`
			Host string `json:"host"`
			Port int32  `json:"port"`
		} `json:"brokers"`
	}
	c := decode[cluster](t, ok(t, b, "", "cluster", "describe", "--output", "json"))
	if c.ClusterID == "" || len(c.Brokers) != 1 || c.Brokers[0].Host != "127.0.0.1" {
		t.Errorf("cluster: %+v", c)
	}
	brokerCfg := ok(t, b, "", "configs", "describe", "--broker", "1", "--all")
	if !strings.Contains(brokerCfg, "log.retention.hours") && !strings.Contains(brokerCfg, "num.partitions") {
		t.Errorf("broker configs: %q", brokerCfg)
	}
}

func TestPerfProduceJSON(t *testing.T) {
	b := startVltava(t)
	out := ok(t, b, "", "perf", "produce", "bench", "--num-records", "5000", "--record-size", "200",
		"--producers", "2", "--partitions", "3", "--acks", "all", "--compression", "lz4", "--json")
	type report struct {
		Records   int64   `json:"records"`
		Failed    int64   `json:"failed"`
		Bytes     int64   `json:"bytes"`
		RecsPerS  float64 `json:"records_per_sec"`
		LatencyMs struct {
			P50, P99, Max float64
		} `json:"latency_ms"`
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("--json must print one line, got %q", out)
	}
	r := decode[report](t, out)
	if r.Records != 5000 || r.Failed != 0 || r.Bytes != 5000*200 || r.RecsPerS <= 0 {
		t.Errorf("report %+v", r)
	}
	if r.LatencyMs.P50 <= 0 || r.LatencyMs.P50 > r.LatencyMs.P99 || r.LatencyMs.P99 > r.LatencyMs.Max {
		t.Errorf("latencies not ordered: %+v", r.LatencyMs)
	}
	descs := decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "bench", "--output", "json"))
	if descs[0].PartitionCount != 3 {
		t.Errorf("perf created %d partitions, want 3", descs[0].PartitionCount)
	}
	cons := decode[report](t, ok(t, b, "", "perf", "consume", "bench", "--num-records", "5000", "--json"))
	if cons.Records < 5000 {
		t.Errorf("perf consume read %d records", cons.Records)
	}
	e2e := decode[report](t, ok(t, b, "", "perf", "e2e", "bench", "--num-records", "200", "--throughput", "1000", "--json"))
	if e2e.Records != 200 || e2e.LatencyMs.Max <= 0 {
		t.Errorf("e2e report %+v", e2e)
	}
}

func TestErrors(t *testing.T) {
	// A port nobody listens on: the command must fail fast and clearly.
	addr := freeAddr(t)
	for _, args := range [][]string{
		{"topics", "list"},
		{"produce", "x"},
		{"consume", "x"},
		{"groups", "list"},
	} {
		r := runRaw(t, "v\n", append(args, "--bootstrap-server", addr)...)
		if r.code == 0 || r.elapsed > 8*time.Second || !strings.Contains(r.stderr, "cannot reach the cluster") {
			t.Errorf("%v against %s: exit %d after %v, stderr %q", args, addr, r.code, r.elapsed, r.stderr)
		}
	}
	t.Setenv("VLTAVA_BOOTSTRAP", addr)
	if r := runRaw(t, "", "cluster", "describe"); r.code == 0 || !strings.Contains(r.stderr, addr) {
		t.Errorf("VLTAVA_BOOTSTRAP not used: %+v", r)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "x", "--acks", "2"}, "--acks"},
		{[]string{"produce", "x", "--compression", "brotli"}, "--compression"},
		{[]string{"consume", "x", "--format", "xml"}, "--format"},
		{[]string{"consume", "x", "--offset", "5"}, "needs --partition"},
		{[]string{"topics", "list", "--output", "yaml"}, "--output"},
		{[]string{"topics", "list", "--no-such-flag"}, "unknown flag"},
		{[]string{"topics", "create"}, "expected one TOPIC"},
	} {
		r := runRaw(t, "", append(tc.args, "--bootstrap-server", addr)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d stderr %q, want one line mentioning %q", tc.args, r.code, r.stderr, tc.want)
		}
	}

	props := filepath.Join(t.TempDir(), "client.properties")
	// Kafka's default sasl.mechanism is GSSAPI, which needs a JAAS login.
	if err := os.WriteFile(props, []byte("# comment\nclient.id=me\nsecurity.protocol=SASL_SSL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runRaw(t, "", "topics", "list", "--command-config", props, "--bootstrap-server", addr); r.code == 0 || !strings.Contains(r.stderr, "sasl.jaas.config is required for GSSAPI") {
		t.Errorf("security settings: %+v", r)
	}
}

func TestUnknownTopicAndHelp(t *testing.T) {
	b := startVltava(t)
	if stderr := fails(t, b, "", "consume", "nope", "--timeout", "1s"); !strings.Contains(stderr, `topic "nope" does not exist`) {
		t.Errorf("consume missing topic: %q", stderr)
	}
	for _, c := range [][]string{{"topics"}, {"produce"}, {"consume"}, {"groups", "reset-offsets"}, {"configs", "alter"}, {"perf", "e2e"}, {"cluster", "describe"}} {
		out := ok(t, nil, "", append(c, "--help")...)
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, "--bootstrap-server") {
			t.Errorf("%v --help lacks examples or global flags:\n%s", c, out)
		}
	}
}
