package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/vltava/vltava/internal/testing/certs"
	"github.com/vltava/vltava/internal/testing/kdc"
)

// withSASLSSLMechanism makes every listener SASL_SSL with one mechanism,
// which the brokers also speak to each other and to the controllers
// (sasl.mechanism.inter.broker.protocol, sasl.mechanism.controller.protocol):
// the client side of the broker's own connections reads the listener's
// <mechanism>.sasl.jaas.config, as Kafka's. client is how the harness's
// clients authenticate.
func withSASLSSLMechanism(t *testing.T, mech, jaas string, client sasl.Mechanism, extra ...[2]string) Option {
	dir := t.TempDir()
	ca := certs.NewCA(t, "cluster-ca")
	keystore := ca.Server(t).WritePKCS12(t, dir, "node", "node-secret", ca)
	truststore := ca.WriteTrustJKS(t, dir, "trust", "trust-secret")
	prefix := map[string]string{"OAUTHBEARER": "oauthbearer", "GSSAPI": "gssapi"}[mech]
	overrides := append([][2]string{
		{"listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:SASL_SSL"},
		{"ssl.keystore.type", "PKCS12"},
		{"ssl.keystore.location", keystore},
		{"ssl.keystore.password", "node-secret"},
		{"ssl.truststore.type", "JKS"},
		{"ssl.truststore.location", truststore},
		{"ssl.truststore.password", "trust-secret"},
		{"sasl.enabled.mechanisms", mech},
		{"sasl.mechanism.inter.broker.protocol", mech},
		{"sasl.mechanism.controller.protocol", mech},
		{"listener.name.plaintext." + prefix + ".sasl.jaas.config", jaas},
		{"listener.name.controller." + prefix + ".sasl.jaas.config", jaas},
	}, extra...)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	opts := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool}), kgo.SASL(client)}
	return func(o *clusterOptions) {
		o.overrides = append(o.overrides, overrides...)
		o.clientOpts = append(o.clientOpts, opts...)
	}
}

// replicateAcksAll creates a topic on all three nodes with
// min.insync.replicas=2, produces acks=all, waits until every replica has
// caught up (the followers fetched over SASL_SSL with the cluster's
// mechanism) and reads the records back.
func replicateAcksAll(t *testing.T, c *Cluster, topic string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	c.waitFullyReplicated(topic, 1, 60*time.Second)
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
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
}

// TestInterBrokerOAuthBearer: three nodes whose only mechanism is
// OAUTHBEARER with Kafka's unsecured tokens: the brokers log in with the
// listener's OAuthBearerLoginModule unsecuredLoginStringClaim_sub, for
// raft-adjacent controller RPCs, forwarding and replica fetches.
func TestInterBrokerOAuthBearer(t *testing.T) {
	jaas := `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";`
	token := func() string {
		enc := func(v any) string {
			b, _ := json.Marshal(v)
			return base64.RawURLEncoding.EncodeToString(b)
		}
		return enc(map[string]string{"alg": "none"}) + "." +
			enc(map[string]any{"sub": "harness", "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}) + "."
	}()
	c := StartCluster(t, withSASLSSLMechanism(t, "OAUTHBEARER", jaas, oauth.Auth{Token: token}.AsMechanism()))
	replicateAcksAll(t, c, "interbroker-oauthbearer", 100)
}

// TestInterBrokerGSSAPI: three nodes whose only mechanism is GSSAPI,
// against a real MIT KDC: every broker logs in from its keytab as
// kafka/127.0.0.1 (the host all nodes share) to authenticate to the
// others.
func TestInterBrokerGSSAPI(t *testing.T) {
	k := kdc.Start(t)
	k.AddService(t, "kafka/127.0.0.1")
	k.AddService(t, "harness")
	brokerKeytab := k.Keytab(t, "broker.keytab", "kafka/127.0.0.1")
	harnessKeytab := k.Keytab(t, "harness.keytab", "harness")
	jaas := fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="kafka/127.0.0.1@%s";`, brokerKeytab, k.Realm)
	cfg, err := krbconfig.Load(k.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(harnessKeytab)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithKeytab("harness", k.Realm, kt, cfg, client.DisablePAFXFAST(true))
	t.Cleanup(cl.Destroy)
	c := StartCluster(t,
		withSASLSSLMechanism(t, "GSSAPI", jaas, kerberos.Auth{Client: cl, Service: "kafka"}.AsMechanism(),
			[2]string{"sasl.kerberos.service.name", "kafka"}),
		WithEnv("KRB5_CONFIG", k.Krb5Conf))
	replicateAcksAll(t, c, "interbroker-gssapi", 100)
}
