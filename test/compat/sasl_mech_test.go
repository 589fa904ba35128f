package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// saslBroker is a broker with two listeners: PLAINTEXT (the inter-broker
// listener, which the tests' admin client uses too) and SASL_PLAINTEXT with
// one SASL mechanism, for the client under test. Metadata answers a client
// with the endpoints of the listener it came in on, so a client
// bootstrapped on the SASL listener stays on it.
type saslBroker struct {
	plain, sasl string
	output      *capturedOutput
}

// startSASLBroker starts a broker whose SASL_PLAINTEXT listener enables
// mechanism. listenerMech holds keys set for that listener and mechanism
// (listener.name.sasl_plaintext.<mechanism>.<key>), broker holds other
// overrides; env is added to the broker's environment (KRB5_CONFIG).
//
// Until the SASL framework is in, the broker refuses
// sasl.enabled.mechanisms (or, for the default GSSAPI, the mechanism's
// sasl.jaas.config) as not supported yet; the test then skips, and only
// then.
func startSASLBroker(t *testing.T, mechanism string, listenerMech, broker map[string]string, env ...string) *saslBroker {
	t.Helper()
	skipOnKfake(t, "SASL listeners")
	bin, err := brokerBinary()
	if err != nil {
		t.Fatalf("building the broker: %v", err)
	}
	b := &saslBroker{plain: freeLoopbackAddr(t), sasl: freeLoopbackAddr(t), output: &capturedOutput{}}
	args := []string{"server",
		"--override", "listeners=PLAINTEXT://" + b.plain + ",SASL_PLAINTEXT://" + b.sasl,
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "log.dirs=" + t.TempDir(),
		"--override", "admin.listeners=",
		"--override", "sasl.enabled.mechanisms=" + mechanism,
		"--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=",
	}
	prefix := "listener.name.sasl_plaintext." + strings.ToLower(mechanism) + "."
	for k, v := range listenerMech {
		args = append(args, "--override", prefix+k+"="+v)
	}
	for k, v := range broker {
		args = append(args, "--override", k+"="+v)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = b.output, b.output
	cmd.SysProcAttr = brokerProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("broker output:\n%s", b.output.String())
		}
	})
	if err := waitReady(b.plain, exited); err != nil {
		t.Fatalf("broker not ready: %v\n%s", err, b.output.String())
	}
	return b
}

// createTopic creates a one-partition topic through the PLAINTEXT listener.
func (b *saslBroker) createTopic(t *testing.T) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.plain), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := uniqueTopic(t)
	createTopic(t, kadm.NewClient(cl), topic, 1, nil)
	return topic
}

// franzRoundTrip produces n values over the SASL listener with mechanism
// m and reads them back, comparing.
func (b *saslBroker) franzRoundTrip(t *testing.T, m sasl.Mechanism, n int) {
	t.Helper()
	topic := b.createTopic(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.sasl), kgo.SASL(m), kgo.RetryTimeout(20*time.Second),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)})
	}
	produceSync(t, cl, rs...)
	got := consume(t, cl, n, 30*time.Second)
	for i, r := range got {
		if want := fmt.Sprintf("v%d", i); string(r.Value) != want {
			t.Fatalf("record %d = %q, want %q", i, r.Value, want)
		}
	}
}

// librdkafkaRoundTrip runs python/sasl_confluent.py with the librdkafka
// security properties and checks it read back what it produced.
func (b *saslBroker) librdkafkaRoundTrip(t *testing.T, security map[string]string, env ...string) {
	t.Helper()
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	topic := b.createTopic(t)
	conf, _ := json.Marshal(security)
	var res struct {
		Consumed []string `json:"consumed"`
		Errors   []string `json:"errors"`
	}
	runPythonEnv(t, env, &res, "sasl_confluent.py", b.sasl, topic, "20", string(conf))
	checkValues(t, "librdkafka", res.Consumed, 20)
}

// kcatRoundTrip produces and consumes with kcat and the librdkafka
// properties given as -X options.
func (b *saslBroker) kcatRoundTrip(t *testing.T, security map[string]string, env ...string) {
	t.Helper()
	bin := requireTool(t, "kcat")
	topic := b.createTopic(t)
	var x []string
	for k, v := range security {
		x = append(x, "-X", k+"="+v)
	}
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	run := func(stdin string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(append(args, "-b", b.sasl, "-t", topic), x...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	run(in.String(), "-P", "-p", "0")
	out := run("", "-C", "-p", "0", "-o", "beginning", "-e", "-q")
	if out != in.String() {
		t.Fatalf("kcat consumed %q, want %q", out, in.String())
	}
}

func checkValues(t *testing.T, who string, got []string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s consumed %d values, want %d: %q", who, len(got), n, got)
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%d", i); v != want {
			t.Fatalf("%s value %d = %q, want %q", who, i, v, want)
		}
	}
}

// runPythonEnv is runPythonScript with extra environment (Kerberos).
func runPythonEnv(t *testing.T, env []string, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, append([]string{filepath.Join("python", script)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s: decoding JSON output: %v\nstdout:\n%.2000s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
}
