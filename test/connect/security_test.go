package connect

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

const saslJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_connect="connect-secret";`

// A distributed worker with a secured Kafka Connect worker file: the
// worker's security.protocol, sasl.mechanism and sasl.jaas.config, repeated
// as producer.*, consumer.* and admin.* as Kafka's worker needs them,
// against a broker whose only listener the worker is given is
// SASL_PLAINTEXT with PLAIN. The internal topics, a FileStream source and
// a FileStream sink all work through it; a wrong password keeps the worker
// from starting.
func TestWorkerOverSASL(t *testing.T) {
	t.Parallel()
	addr, saslAddr := freeport.Addr(t), freeport.Addr(t)
	b := &broker{addr: addr, proc: startProc(t, "sasl broker "+addr, "server",
		"--override", "listeners=PLAINTEXT://"+addr+",SASL_PLAINTEXT://"+saslAddr, "--override", "log.dirs="+t.TempDir(),
		"--override", "inter.broker.listener.name=PLAINTEXT", "--override", "sasl.enabled.mechanisms=PLAIN",
		"--override", "listener.name.sasl_plaintext.plain.sasl.jaas.config="+saslJAAS,
		"--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=")}
	cl := b.client(t)
	poll.Until(t, startTimeout, "the broker to answer", func() error {
		if !b.running() {
			t.Fatalf("broker exited:\n%s", b.out.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	})
	props := func(port int, password string) string {
		jaas := fmt.Sprintf(`org.apache.kafka.common.security.plain.PlainLoginModule required username="connect" password="%s";`, password)
		lines := []string{"group.id=sasl-cluster", "config.storage.topic=sasl-configs", "offset.storage.topic=sasl-offsets",
			"status.storage.topic=sasl-status", "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
			"status.storage.replication.factor=1"}
		for _, prefix := range []string{"", "producer.", "consumer.", "admin."} {
			lines = append(lines, prefix+"security.protocol=SASL_PLAINTEXT", prefix+"sasl.mechanism=PLAIN", prefix+"sasl.jaas.config="+jaas)
		}
		return workerProps(&broker{addr: saslAddr}, port, lines...)
	}
	dir := t.TempDir()
	in := writeFile(t, dir, "in.txt", numbered("s", 0, 100))
	out := filepath.Join(dir, "out.txt")
	port := freeport.Port(t)
	w := startWorker(t, "distributed", port, props(port, "connect-secret"))
	for _, c := range []map[string]any{
		{"name": "sasl-src", "config": map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "sasl-lines"}},
		{"name": "sasl-sink", "config": map[string]string{"connector.class": "FileStreamSink", "file": out, "topics": "sasl-lines"}},
	} {
		poll.Until(t, 60*time.Second, "the connector to be created", func() error {
			code, body, err := call(w.url, "POST", "/connectors", c)
			if err != nil || code != 201 {
				return fmt.Errorf("%d %s %v", code, body, err)
			}
			return nil
		})
	}
	poll.Until(t, 60*time.Second, "every line through the SASL listener", func() error { return sameSet(lines(out), lines(in)) })

	bad := freeport.Port(t)
	p := startProc(t, "worker with a wrong password", "connect", "distributed", writeFile(t, dir, "bad.properties", props(bad, "wrong")))
	select {
	case <-p.exited:
	case <-time.After(90 * time.Second):
		t.Fatalf("a worker with a wrong password still runs:\n%s", p.out.String())
	}
	if !strings.Contains(p.out.String(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("the worker stopped without naming the failed authentication:\n%s", p.out.String())
	}
}
