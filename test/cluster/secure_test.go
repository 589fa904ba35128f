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
	"github.com/twmb/franz-go/pkg/kmsg"
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
// StartCluster's caller creates with the admin client the option returns
// (createHarnessSCRAMUser).
func WithSecureListeners(t testing.TB) (Option, []kgo.Opt) {
	opt, harness, _ := secureListeners(t)
	return opt, harness
}

// The SCRAM-SHA-512 user of WithSecureListeners' harness options.
const (
	harnessSCRAMUser     = "harness"
	harnessSCRAMPassword = "harness-secret"
)

// secureListeners is WithSecureListeners, also returning what a client
// that is not franz-go needs to trust the brokers: the cluster CA's
// certificate as a PEM file (librdkafka's ssl.ca.location).
func secureListeners(t testing.TB) (opt Option, harness []kgo.Opt, caPEM string) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "cluster-ca")
	keystore := ca.Server(t).WritePKCS12(t, dir, "node", "node-secret", ca)
	truststore := ca.WriteTrustJKS(t, dir, "trust", "trust-secret")
	caPEM = ca.WritePEM(t, dir, "cluster-ca")
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
	harness = []kgo.Opt{kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(scram.Auth{User: harnessSCRAMUser, Pass: harnessSCRAMPassword}.AsSha512Mechanism())}
	admin := []kgo.Opt{kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(plainAuth("admin", "admin-secret"))}
	return func(o *clusterOptions) {
		o.overrides = append(o.overrides, overrides...)
		o.clientOpts = append(o.clientOpts, admin...)
	}, harness, caPEM
}

// createHarnessSCRAMUser creates the SCRAM-SHA-512 credential of
// WithSecureListeners' harness user through the cluster (the harness
// itself connects as admin, with PLAIN), then waits until the user, with
// harness (its franz-go options), authenticates on every running node: the
// credential reaches the brokers with the metadata log, not at once.
func createHarnessSCRAMUser(t testing.TB, c *Cluster, harness []kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: harnessSCRAMUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: harnessSCRAMPassword}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
	}
	for _, n := range c.Nodes() {
		if !n.Running() {
			continue
		}
		waitFor(t, 30*time.Second, fmt.Sprintf("user %s authenticating on node %d", harnessSCRAMUser, n.ID), func() (bool, string) {
			cl, err := c.newClientAs(harness, []string{n.Addr()}, kgo.RequestRetries(0))
			if err != nil {
				return false, err.Error()
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{}
			if _, err := req.RequestWith(ctx, cl); err != nil {
				return false, err.Error()
			}
			return true, ""
		})
	}
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
