package cli_test

// Kafka's tools' flag names and mode flags, run against the built binary.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKafkaTopicsForm drives topics with kafka-topics.sh's flags.
func TestKafkaTopicsForm(t *testing.T) {
	b := startVltava(t)
	if out := ok(t, b, "", "topics", "--create", "--topic", "kt", "--partitions", "2", "--replication-factor", "1",
		"--config", "min.insync.replicas=2"); !strings.Contains(out, "Created topic kt") {
		t.Errorf("--create: %q", out)
	}
	ok(t, b, "", "topics", "--create", "--topic", "kt", "--if-not-exists")
	ok(t, b, "", "topics", "--create", "--topic", "plain", "--partitions", "1")
	if out := ok(t, b, "", "topics", "--list"); !strings.Contains(out, "kt") || !strings.Contains(out, "plain") {
		t.Errorf("--list: %q", out)
	}
	if out := ok(t, b, "", "topics", "--describe", "--topic", "kt"); !strings.Contains(out, "PartitionCount: 2") || !strings.Contains(out, "min.insync.replicas=2") {
		t.Errorf("--describe: %q", out)
	}
	// The subcommands take --topic too.
	if d := decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "--topic", "kt,plain", "--output", "json")); len(d) != 2 {
		t.Errorf("describe --topic kt,plain: %+v", d)
	}
	ok(t, b, "", "topics", "--alter", "--topic", "kt", "--partitions", "3")
	if d := decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "kt", "--output", "json")); d[0].PartitionCount != 3 {
		t.Errorf("after --alter: %+v", d)
	}

	// Partition selectors: one broker, so every ISR is whole; kt asks for
	// two in-sync replicas and has one, plain asks for one and has one.
	if out := ok(t, b, "", "topics", "--describe", "--under-replicated-partitions"); out != "" {
		t.Errorf("--under-replicated-partitions on a healthy broker: %q", out)
	}
	if out := ok(t, b, "", "topics", "--describe", "--unavailable-partitions"); out != "" {
		t.Errorf("--unavailable-partitions on a healthy broker: %q", out)
	}
	under := decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "--under-min-isr-partitions", "--output", "json"))
	if len(under) != 1 || under[0].Topic != "kt" || len(under[0].Partitions) != 3 {
		t.Errorf("--under-min-isr-partitions: %+v", under)
	}
	at := ok(t, b, "", "topics", "describe", "--at-min-isr-partitions")
	if !strings.Contains(at, "plain") || strings.Contains(at, "kt") {
		t.Errorf("--at-min-isr-partitions: %q", at)
	}
	if out := ok(t, b, "", "topics", "describe", "--topics-with-overrides"); !strings.Contains(out, "Topic: kt") || strings.Contains(out, "plain") {
		t.Errorf("--topics-with-overrides: %q", out)
	}

	ok(t, b, "", "topics", "--create", "--topic", "placed", "--replica-assignment", "1,1,1", "--config", "retention.ms=1000")
	if d := decode[[]topicDesc](t, ok(t, b, "", "topics", "describe", "placed", "--output", "json")); len(d) != 1 || d[0].PartitionCount != 3 ||
		d[0].Partitions[2].Replicas[0] != 1 || d[0].Configs["retention.ms"] != "1000" {
		t.Errorf("--replica-assignment: %+v", d)
	}
	if stderr := fails(t, b, "", "topics", "create", "twice", "--replica-assignment", "1:1"); !strings.Contains(stderr, "lists broker 1 twice") {
		t.Errorf("duplicate replica: %q", stderr)
	}
	if stderr := fails(t, b, "", "topics", "create", "far", "--replica-assignment", "7"); !strings.Contains(stderr, "creating topic") {
		t.Errorf("unknown broker: %q", stderr)
	}
	if stderr := fails(t, b, "", "topics", "--create", "--list", "--topic", "x"); !strings.Contains(stderr, "only one of") {
		t.Errorf("two modes: %q", stderr)
	}
	if stderr := fails(t, b, "", "topics", "--list", "--partitions", "3"); !strings.Contains(stderr, "--partitions does not apply to --list") {
		t.Errorf("stray flag: %q", stderr)
	}
	ok(t, b, "", "topics", "--delete", "--topic", "kt")
	ok(t, b, "", "topics", "--delete", "--topic", "kt", "--if-exists")
	if out := ok(t, b, "", "topics", "--list"); strings.Contains(out, "kt") {
		t.Errorf("kt still listed: %q", out)
	}
}

// TestKafkaProduceConsumeForm uses the console tools' flags and property
// files.
func TestKafkaProduceConsumeForm(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "pc", "--partitions", "1")
	producerCfg := writeFile(t, "producer.properties", "acks=1\nlinger.ms=5\ncompression.type=gzip\nclient.id=console\n")
	r := run(t, b, "k1:v1\nk2:v2\n", "produce", "--topic", "pc", "--property", "parse.key=true", "--property", "key.separator=:",
		"--producer.config", producerCfg, "--producer-property", "batch.size=16384", "--producer-property", "no.such.key=1")
	if r.code != 0 || !strings.Contains(r.stderr, "no.such.key was supplied but is not a known client config") {
		t.Fatalf("produce: exit %d stderr %q", r.code, r.stderr)
	}
	if stderr := fails(t, b, "x\n", "produce", "--topic", "pc", "--producer-property", "acks=2"); !strings.Contains(stderr, "--acks") {
		t.Errorf("bad acks property: %q", stderr)
	}
	if stderr := fails(t, b, "x\n", "produce", "--topic", "pc", "--property", "parse.headers=true"); !strings.Contains(stderr, "parse.headers") {
		t.Errorf("unsupported reader property: %q", stderr)
	}
	// The Kafka spellings of --acks and --compression.
	ok(t, b, "k3:v3\n", "produce", "pc", "--key-separator", ":", "--request-required-acks", "1", "--compression-codec", "lz4")

	out := ok(t, b, "", "consume", "--topic", "pc", "--from-beginning", "--max-messages", "3", "--timeout-ms", "10000",
		"--property", "print.key=true", "--property", "print.offset=true", "--property", "print.partition=true",
		"--property", "key.separator=|")
	want := "Partition:0|Offset:0|k1|v1\nPartition:0|Offset:1|k2|v2\nPartition:0|Offset:2|k3|v3\n"
	if out != want {
		t.Errorf("consume with formatter properties:\n%q\nwant\n%q", out, want)
	}
	ts := ok(t, b, "", "consume", "pc", "--partition", "0", "--offset", "0", "--max-messages", "1", "--timeout", "10s",
		"--property", "print.timestamp=true", "--property", "print.headers=true", "--property", "print.value=false")
	if !strings.HasPrefix(ts, "CreateTime:") || !strings.HasSuffix(ts, "\tNO_HEADERS\n") {
		t.Errorf("print.timestamp/print.headers: %q", ts)
	}
	const stringDeser = "org.apache.kafka.common.serialization.StringDeserializer"
	if out := ok(t, b, "", "consume", "pc", "--from-beginning", "--max-messages", "1", "--timeout", "10s", "--property", "print.key=true",
		"--property", "key.deserializer="+stringDeser, "--value-deserializer", stringDeser); out != "k1\tv1\n" {
		t.Errorf("with String deserializers: %q", out)
	}
	if stderr := fails(t, b, "", "consume", "pc", "--key-deserializer", "org.apache.kafka.common.serialization.LongDeserializer"); !strings.Contains(stderr, "only StringDeserializer") {
		t.Errorf("LongDeserializer: %q", stderr)
	}
	if stderr := fails(t, b, "", "consume", "pc", "--property", "print.nothing=true", "--timeout", "1s"); !strings.Contains(stderr, "print.nothing") {
		t.Errorf("unknown formatter property: %q", stderr)
	}

	// --consumer.config supplies the group and where to start.
	consumerCfg := writeFile(t, "consumer.properties", "group.id=cfg-group\nauto.offset.reset=earliest\nclient.id=cc\n")
	if out := ok(t, b, "", "consume", "--topic", "pc", "--consumer.config", consumerCfg, "--max-messages", "2", "--timeout", "10s"); out != "v1\nv2\n" {
		t.Errorf("consume --consumer.config: %q", out)
	}
	if out := ok(t, b, "", "consume", "pc", "--consumer-property", "group.id=cfg-group", "--max-messages", "1", "--timeout", "10s"); out != "v3\n" {
		t.Errorf("group from --consumer-property resumes after the commit: %q", out)
	}

	// bootstrap.servers from a properties file names the cluster when no
	// --bootstrap-server is given.
	if os.Getenv("VLTAVA_BOOTSTRAP") == "" {
		cfg := writeFile(t, "client.properties", "bootstrap.servers="+b.addr+"\n")
		if r := runRaw(t, "", "topics", "list", "--command-config", cfg); r.code != 0 || !strings.Contains(r.stdout, "pc") {
			t.Errorf("bootstrap.servers from --command-config: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
	}
	if stderr := fails(t, b, "", "perf", "produce", "pc", "acks=1", "--num-records", "1"); !strings.Contains(stderr, "expected one TOPIC") {
		t.Errorf("k=v words without --producer-props: %q", stderr)
	}

	// Perf tools: --topic, Kafka's space-separated --producer-props, --messages.
	rep := decode[struct {
		Records int64 `json:"records"`
	}](t, ok(t, b, "", "perf", "produce", "--topic", "pc", "--num-records", "50", "--record-size", "10", "--throughput", "-1",
		"--producer-props", "acks=1", "linger.ms=1", "--json"))
	if rep.Records != 50 {
		t.Errorf("perf produce --producer-props: %+v", rep)
	}
	if stderr := fails(t, b, "", "perf", "produce", "--topic", "pc", "--num-records", "1", "--producer-props", "acks=7"); !strings.Contains(stderr, "--acks") {
		t.Errorf("perf produce bad acks: %q", stderr)
	}
	cons := decode[struct {
		Records int64 `json:"records"`
	}](t, ok(t, b, "", "perf", "consume", "--topic", "pc", "--messages", "53", "--json"))
	if cons.Records < 53 {
		t.Errorf("perf consume --messages: %+v", cons)
	}
}

// TestKafkaConfigsForm uses kafka-configs.sh's entity flags.
func TestKafkaConfigsForm(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "cf", "--partitions", "1")
	ok(t, b, "", "configs", "--alter", "--entity-type", "topics", "--entity-name", "cf",
		"--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]")
	got := decode[[]configEntry](t, ok(t, b, "", "configs", "--describe", "--entity-type", "topics", "--entity-name", "cf", "--output", "json"))
	vals := map[string]string{}
	for _, c := range got {
		vals[c.Name] = c.Value
	}
	if vals["retention.ms"] != "60000" || vals["cleanup.policy"] != "compact,delete" {
		t.Errorf("after --add-config: %+v", got)
	}
	ok(t, b, "", "configs", "alter", "--entity-type", "topics", "--entity-name", "cf", "--delete-config", "retention.ms,cleanup.policy")
	if got := decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--topic", "cf", "--output", "json")); len(got) != 0 {
		t.Errorf("after --delete-config: %+v", got)
	}
	file := writeFile(t, "add.properties", "segment.ms=3600000\n")
	ok(t, b, "", "configs", "--alter", "--topic", "cf", "--add-config-file", file)
	if got := decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--topic", "cf", "--output", "json")); len(got) != 1 || got[0].Name != "segment.ms" || got[0].Value != "3600000" {
		t.Errorf("after --add-config-file: %+v", got)
	}
	if out := ok(t, b, "", "configs", "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all"); !strings.Contains(out, "num.partitions") {
		t.Errorf("broker entity: %q", out)
	}
	ok(t, b, "", "configs", "describe", "--entity-type", "brokers", "--entity-default")
	if stderr := fails(t, b, "", "configs", "describe", "--entity-type", "clients", "--entity-name", "u"); !strings.Contains(stderr, `--entity-type "clients" is not supported`) {
		t.Errorf("unsupported entity type: %q", stderr)
	}
}

// TestGetOffsetsAndDeleteRecords covers kafka-get-offsets.sh and
// kafka-delete-records.sh.
func TestGetOffsetsAndDeleteRecords(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "go", "--partitions", "2")
	var in strings.Builder
	for range 10 {
		in.WriteString("v\n")
	}
	ok(t, b, in.String(), "produce", "go", "--partition", "0")
	ok(t, b, "a\nb\n", "produce", "go", "--partition", "1")

	if out := ok(t, b, "", "get-offsets", "--topic", "go"); out != "go:0:10\ngo:1:2\n" {
		t.Errorf("latest: %q", out)
	}
	if out := ok(t, b, "", "get-offsets", "go", "--time", "-2", "--partitions", "0"); out != "go:0:0\n" {
		t.Errorf("earliest of p0: %q", out)
	}
	if out := ok(t, b, "", "get-offsets", "go", "--time", "-3", "--partitions", "1"); out != "go:1:1\n" && out != "go:1:0\n" {
		t.Errorf("max-timestamp of p1: %q", out)
	}
	if out := ok(t, b, "", "get-offsets", "go", "--time", "0", "--partitions", "0-1"); out != "go:0:0\ngo:1:0\n" {
		t.Errorf("by time 0: %q", out)
	}
	if out := ok(t, b, "", "get-offsets", "--topic-partitions", "go:1-"); out != "go:1:2\n" {
		t.Errorf("--topic-partitions go:1-: %q", out)
	}
	if out := ok(t, b, "", "get-offsets", "--topic-partitions", "go"); out != "go:0:10\ngo:1:2\n" {
		t.Errorf("--topic-partitions go: %q", out)
	}
	if stderr := fails(t, b, "", "get-offsets", "--topic", "missing"); !strings.Contains(stderr, `topic "missing" does not exist`) {
		t.Errorf("missing topic: %q", stderr)
	}
	if stderr := fails(t, b, "", "get-offsets", "go", "--time", "yesterday"); !strings.Contains(stderr, "--time") {
		t.Errorf("bad --time: %q", stderr)
	}

	// Simple form, then Kafka's JSON file with -1 (the high watermark).
	if out := ok(t, b, "", "delete-records", "--topic", "go", "--partition", "0", "--offset", "4"); !strings.Contains(out, "partition: go-0\tlow_watermark: 4") {
		t.Errorf("delete-records --topic: %q", out)
	}
	plan := writeFile(t, "delete.json", `{"partitions":[{"topic":"go","partition":1,"offset":-1}],"version":1}`)
	if out := ok(t, b, "", "delete-records", "--offset-json-file", plan); !strings.Contains(out, "partition: go-1\tlow_watermark: 2") {
		t.Errorf("delete-records --offset-json-file: %q", out)
	}
	if out := ok(t, b, "", "get-offsets", "go", "--time", "earliest"); out != "go:0:4\ngo:1:2\n" {
		t.Errorf("earliest after delete-records: %q", out)
	}
	if out := ok(t, b, "", "consume", "go", "--partition", "0", "--offset", "earliest", "--max-messages", "1", "--timeout", "10s", "--format", "json"); !strings.Contains(out, `"offset":4`) {
		t.Errorf("first readable record: %q", out)
	}
	r := run(t, b, "", "delete-records", "--topic", "go", "--partition", "0", "--offset", "99")
	if r.code == 0 || !strings.Contains(r.stdout, "OFFSET_OUT_OF_RANGE") {
		t.Errorf("past the high watermark: exit %d stdout %q", r.code, r.stdout)
	}
	bad := writeFile(t, "bad.json", `{"partitions":[{"topic":"go","offset":1}],"version":1}`)
	if stderr := fails(t, b, "", "delete-records", "--offset-json-file", bad); !strings.Contains(stderr, "needs topic, partition and offset") {
		t.Errorf("bad file: %q", stderr)
	}
}
