package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vltava/vltava/internal/testing/certs"
)

// WithSecureListeners makes every listener SASL_SSL, the controller
// listener (raft, the broker-to-controller channel, forwarding) and the
// inter-broker one included: the listener names stay (PLAINTEXT,
// CONTROLLER) and listener.security.protocol.map gives both SASL_SSL, as a
// Kafka operator may. Brokers authenticate to each other and to the
// controllers with PLAIN (the admin user of the JAAS config); the harness's
// clients use SCRAM-SHA-512 as user "harness", whose credential
// StartCluster's caller creates with the admin client the option returns.
func WithSecureListeners(t testing.TB) (Option, []kgo.Opt) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "cluster-ca")
	keystore := ca.Server(t).WritePKCS12(t, dir, "node", "node-secret", ca)
	truststore := ca.WriteTrustJKS(t, dir, "trust", "trust-secret")
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`
	overrides := [][2]string{
		{"listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:SASL_SSL"},
		{"ssl.keystore.type", "PKCS12"},
		{"ssl.keystore.location", keystore},
		{"ssl.keystore.password", "node-secret"},
		{"ssl.truststore.type", "JKS"},
		{"ssl.truststore.location", truststore},
		{"ssl.truststore.password", "trust-secret"},
		{"sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"},
		{"sasl.mechanism.inter.broker.protocol", "PLAIN"},
		{"sasl.mechanism.controller.protocol", "PLAIN"},
		{"listener.name.plaintext.plain.sasl.jaas.config", jaas},
		{"listener.name.controller.plain.sasl.jaas.config", jaas},
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	tlsCfg := &tls.Config{RootCAs: pool}
	harness := []kgo.Opt{kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: "harness", Pass: "harness-secret"}.AsSha512Mechanism())}
	admin := []kgo.Opt{kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(plainAuth("admin", "admin-secret"))}
	return func(o *clusterOptions) {
		o.overrides = append(o.overrides, overrides...)
		o.clientOpts = append(o.clientOpts, admin...)
	}, harness
}

// TestSASLSSLClusterFailover: a three-node cluster whose only listeners
// are SASL_SSL, inter-broker, controller and raft traffic included, forms,
// replicates acks=all records, keeps them through the SIGKILL of a
// partition leader, and serves them back to a SCRAM-SHA-512 consumer.
func TestSASLSSLClusterFailover(t *testing.T) {
	secure, scramOpts := WithSecureListeners(t)
	c := StartCluster(t, secure)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The harness connects as admin (PLAIN); the clients below use a
	// SCRAM user created through the cluster.
	res, err := c.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "harness", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "harness-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
	}
	const topic, n = "secure-failover", 200
	view := c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	scramClient := func(opts ...kgo.Opt) *kgo.Client {
		base := append([]kgo.Opt{kgo.SeedBrokers(c.addrs(nil)...), kgo.MetadataMinAge(200 * time.Millisecond)}, scramOpts...)
		cl, err := kgo.NewClient(append(base, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	prod := scramClient(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, n/2)
	victim := view.Partitions[0].Leader
	logf(t, "killing node %d, leader of %s[0]", victim, topic)
	c.Node(victim).Kill()
	produce(n/2, n)
	c.Node(victim).Restart()

	cons := scramClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if want := fmt.Sprintf("v%d", i); v != want {
			t.Fatalf("record %d = %q, want %q", i, v, want)
		}
	}
	// The restarted node rejoined over SASL_SSL: it is back in the ISR.
	c.waitFullyReplicated(topic, 1, 60*time.Second)
}

func plainAuth(user, pass string) sasl.Mechanism {
	return plain.Auth{User: user, Pass: pass}.AsMechanism()
}

// TestSASLSSLDynamicQuorum: a dynamic quorum (KIP-853) whose controller
// listener is SASL_SSL forms, a broker-only node joins it as an observer
// (the join RPC, and the leader's raft replication to it, over TLS), and a
// topic is replicated on every node.
func TestSASLSSLDynamicQuorum(t *testing.T) {
	secure, _ := WithSecureListeners(t)
	c := StartCluster(t, secure, WithNodes(4), WithBrokerOnly(4), WithDynamicQuorum())
	c.waitQuorum(30*time.Second, "node 4 an observer of three voters", func(q quorumView) bool {
		_, ok := q.observers[4]
		return ok && sameIDs(q.voters, 1, 2, 3)
	})
	c.createTopic("secure-dynamic", 1, 4, nil)
	// The CLI reaches the controllers' SASL_SSL quorum port directly,
	// with Kafka's client properties.
	props := filepath.Join(t.TempDir(), "admin.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";`+"\n"+
		"ssl.truststore.type=JKS\nssl.truststore.location="+secureTrustStore(c)+"\nssl.truststore.password=trust-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := c.runTool("cluster", "describe", "--status", "--bootstrap-controller", c.topo.controllerAddr(1), "--command-config", props)
	if !strings.Contains(out, "LeaderId") && !strings.Contains(out, "Leader") {
		t.Errorf("cluster describe --status over the SASL_SSL quorum port:\n%s", out)
	}
}

// secureTrustStore is the JKS trust store WithSecureListeners configured.
func secureTrustStore(c *Cluster) string {
	for _, kv := range c.opts.overrides {
		if kv[0] == "ssl.truststore.location" {
			return kv[1]
		}
	}
	c.t.Fatal("no trust store configured")
	return ""
}
