package compat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/vltava/vltava/internal/testing/certs"
	"github.com/vltava/vltava/internal/testing/freeport"
)

// secureBroker is a broker with a PLAINTEXT listener (the harness's, and
// the inter-broker one) and SSL (client certificates required),
// SASL_PLAINTEXT and SASL_SSL listeners, PLAIN and both SCRAM mechanisms
// enabled, and SCRAM users created through AlterUserScramCredentials.
type secureBroker struct {
	*Broker
	dir                     string
	ca                      *certs.CA
	ssl, saslSSL, saslPlain string // addresses
	caFile                  string
	clientCert, clientKey   string // alice's certificate (CN=alice,OU=ServiceUsers,O=Acme) and key
	clientKeystore          string // the same as a PEM key store
	clientP12               string
	plainUser, plainPass    string
	scramUser, scramPass    string
}

const (
	plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_carol="carol-secret";`
)

func startSecureBroker(t *testing.T, opts ...Option) *secureBroker {
	t.Helper()
	skipOnKfake(t, "TLS and SASL listeners")
	dir := t.TempDir()
	ca := certs.NewCA(t, "vltava-test-ca")
	server := ca.Server(t)
	p12 := server.WritePKCS12(t, dir, "broker", "broker-p12", ca)
	trust := ca.WriteTrustJKS(t, dir, "truststore", "trust-secret")
	alice := ca.Client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}})
	aliceKS, aliceCert, aliceKey := alice.WritePEM(t, dir, "alice", ca)
	sb := &secureBroker{
		dir: dir, ca: ca,
		ssl: freeport.Addr(t), saslSSL: freeport.Addr(t), saslPlain: freeport.Addr(t),
		caFile:     ca.WritePEM(t, dir, "ca"),
		clientCert: aliceCert, clientKey: aliceKey, clientKeystore: aliceKS,
		clientP12: alice.WritePKCS12(t, dir, "alice", "alice-p12", ca),
		plainUser: "carol", plainPass: "carol-secret",
		scramUser: "alice", scramPass: "alice-secret",
	}
	all := []Option{
		WithExtraListeners("SSL://"+sb.ssl, "SASL_SSL://"+sb.saslSSL, "SASL_PLAINTEXT://"+sb.saslPlain),
		WithOverride("inter.broker.listener.name", "PLAINTEXT"),
		// The key store is PKCS12 (openssl), the trust store JKS.
		WithOverride("ssl.keystore.type", "PKCS12"),
		WithOverride("ssl.keystore.location", p12),
		WithOverride("ssl.keystore.password", "broker-p12"),
		WithOverride("ssl.truststore.type", "JKS"),
		WithOverride("ssl.truststore.location", trust),
		WithOverride("ssl.truststore.password", "trust-secret"),
		WithOverride("listener.name.ssl.ssl.client.auth", "required"),
		WithOverride("listener.name.ssl.ssl.principal.mapping.rules", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT"),
		WithOverride("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
		WithOverride("listener.name.sasl_ssl.plain.sasl.jaas.config", plainJAAS),
		WithOverride("listener.name.sasl_plaintext.plain.sasl.jaas.config", plainJAAS),
		WithOverride("connection.failed.authentication.delay.ms", "200"),
	}
	sb.Broker = StartBroker(t, append(all, opts...)...)
	adm := newAdmin(t, sb.Broker)
	ctx := testContext(t, 30*time.Second)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: sb.scramUser, Mechanism: kadm.ScramSha256, Iterations: 8192, Password: sb.scramPass},
		{User: sb.scramUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: sb.scramPass},
	})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
	}
	return sb
}

func (sb *secureBroker) clientTLS(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(sb.ca.PEM)
	cfg := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	if withCert {
		c, err := tls.LoadX509KeyPair(sb.clientCert, sb.clientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

// franzRoundTrip produces n records to a new topic through cl and reads
// them back with a second client of the same settings, comparing values.
func franzRoundTrip(t *testing.T, sb *secureBroker, opts ...kgo.Opt) {
	t.Helper()
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, sb.Broker), topic, 1, nil)
	ctx := testContext(t, 30*time.Second)
	prod, err := kgo.NewClient(append([]kgo.Opt{kgo.DefaultProduceTopic(topic)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 20
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("secure-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons, err := kgo.NewClient(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := consume(t, cons, n, 20*time.Second)
	for i, r := range got {
		if want := fmt.Sprintf("secure-%d", i); string(r.Value) != want {
			t.Fatalf("record %d = %q, want %q", i, r.Value, want)
		}
	}
}

// TestFranzSecureListeners: franz-go over SSL with a client certificate,
// SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (pkg/sasl), and
// SASL_PLAINTEXT with PLAIN; each produces and reads back its records.
func TestFranzSecureListeners(t *testing.T) {
	sb := startSecureBroker(t)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"SSL with a client certificate", []kgo.Opt{kgo.SeedBrokers(sb.ssl), kgo.DialTLSConfig(sb.clientTLS(t, true))}},
		{"SASL_SSL PLAIN", []kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
			kgo.SASL(plain.Auth{User: sb.plainUser, Pass: sb.plainPass}.AsMechanism())}},
		{"SASL_SSL SCRAM-SHA-256", []kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
			kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha256Mechanism())}},
		{"SASL_SSL SCRAM-SHA-512", []kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
			kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha512Mechanism())}},
		{"SASL_PLAINTEXT PLAIN", []kgo.Opt{kgo.SeedBrokers(sb.saslPlain),
			kgo.SASL(plain.Auth{User: sb.plainUser, Pass: sb.plainPass}.AsMechanism())}},
	} {
		t.Run(tc.name, func(t *testing.T) { franzRoundTrip(t, sb, tc.opts...) })
	}
}

// TestFranzAuthenticationFailures: wrong passwords, an unknown user and a
// mechanism the listener does not enable are refused with Kafka's errors,
// an SSL client without a certificate is refused, and the broker keeps
// serving the clients that do authenticate.
func TestFranzAuthenticationFailures(t *testing.T) {
	sb := startSecureBroker(t, WithOverride("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN"))
	ping := func(opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	saslSSL := func(m sasl.Mechanism) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)), kgo.SASL(m)}
	}
	for _, tc := range []struct {
		name    string
		opts    []kgo.Opt
		wantErr string
	}{
		{"PLAIN wrong password", saslSSL(plain.Auth{User: sb.plainUser, Pass: "nope"}.AsMechanism()), "SASL_AUTHENTICATION_FAILED"},
		{"PLAIN unknown user", saslSSL(plain.Auth{User: "mallory", Pass: "nope"}.AsMechanism()), "SASL_AUTHENTICATION_FAILED"},
		{"SCRAM wrong password", saslSSL(scram.Auth{User: sb.scramUser, Pass: "nope"}.AsSha256Mechanism()), "SASL_AUTHENTICATION_FAILED"},
		{"SCRAM unknown user", saslSSL(scram.Auth{User: "mallory", Pass: "nope"}.AsSha512Mechanism()), "SASL_AUTHENTICATION_FAILED"},
		{"SSL without a client certificate", []kgo.Opt{kgo.SeedBrokers(sb.ssl), kgo.DialTLSConfig(sb.clientTLS(t, false))}, ""},
		{"a mechanism the listener does not enable", []kgo.Opt{kgo.SeedBrokers(sb.saslPlain),
			kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha256Mechanism())}, "UNSUPPORTED_SASL_MECHANISM"},
		{"a plaintext client on the SSL port", []kgo.Opt{kgo.SeedBrokers(sb.ssl)}, ""},
		{"a TLS client on the plaintext port", []kgo.Opt{kgo.SeedBrokers(sb.Addr()), kgo.DialTLSConfig(sb.clientTLS(t, false))}, ""},
		{"a SASL_SSL client without SASL", []kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ping(tc.opts...)
			if err == nil {
				t.Fatal("authenticated")
			}
			t.Logf("refused: %v", err)
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %s", err, tc.wantErr)
			}
		})
	}
	// The wrong-password answers give the same message, whether or not the
	// user exists, after connection.failed.authentication.delay.ms (200).
	msg := func(user string) string {
		start := time.Now()
		err := ping(saslSSL(scram.Auth{User: user, Pass: "nope"}.AsSha256Mechanism())...)
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("failure for %s answered after %v, before connection.failed.authentication.delay.ms", user, d)
		}
		if err == nil {
			t.Fatal("authenticated")
		}
		return strings.ReplaceAll(err.Error(), user, "USER")
	}
	if a, b := msg(sb.scramUser), msg("nobody"); a != b {
		t.Errorf("the failure for an existing user differs from an unknown one:\n%s\n%s", a, b)
	}
	franzRoundTrip(t, sb, kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
		kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha256Mechanism()))
}

// pythonRoundTrip runs secure_roundtrip.py with lib and cfg and checks the
// values it read back.
func pythonRoundTrip(t *testing.T, sb *secureBroker, lib string, cfg map[string]any) {
	t.Helper()
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, sb.Broker), topic, 1, nil)
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	var res struct {
		Received []string `json:"received"`
	}
	runPythonScript(t, 120*time.Second, &res, "secure_roundtrip.py", lib, string(raw), topic, strconv.Itoa(n))
	if len(res.Received) != n {
		t.Fatalf("%s read %d values, want %d: %v", lib, len(res.Received), n, res.Received)
	}
	for i, v := range res.Received {
		if want := fmt.Sprintf("secure-%d", i); v != want {
			t.Fatalf("%s value %d = %q, want %q", lib, i, v, want)
		}
	}
}

// TestKafkaPythonSecure: kafka-python (Debian python3-kafka 2.0, which
// sends SaslHandshake v0 and raw tokens) over SASL_SSL with SCRAM-SHA-512
// and with PLAIN, and over SSL with a client certificate.
func TestKafkaPythonSecure(t *testing.T) {
	requirePythonModule(t, "kafka", "python3-kafka")
	sb := startSecureBroker(t)
	tlsOpts := map[string]any{"ssl_cafile": sb.caFile, "ssl_check_hostname": true}
	with := func(m map[string]any) map[string]any {
		for k, v := range tlsOpts {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name string
		cfg  map[string]any
	}{
		{"SASL_SSL SCRAM-SHA-512", with(map[string]any{"bootstrap_servers": sb.saslSSL, "security_protocol": "SASL_SSL",
			"sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": sb.scramUser, "sasl_plain_password": sb.scramPass})},
		{"SASL_SSL PLAIN", with(map[string]any{"bootstrap_servers": sb.saslSSL, "security_protocol": "SASL_SSL",
			"sasl_mechanism": "PLAIN", "sasl_plain_username": sb.plainUser, "sasl_plain_password": sb.plainPass})},
		{"SSL with a client certificate", with(map[string]any{"bootstrap_servers": sb.ssl, "security_protocol": "SSL",
			"ssl_certfile": sb.clientCert, "ssl_keyfile": sb.clientKey})},
	} {
		t.Run(tc.name, func(t *testing.T) { pythonRoundTrip(t, sb, "kafka-python", tc.cfg) })
	}
}

// TestLibrdkafkaSecure: librdkafka through confluent-kafka over SASL_SSL
// with SCRAM-SHA-256 and over SSL with a client certificate (mTLS), with
// librdkafka's own property names.
func TestLibrdkafkaSecure(t *testing.T) {
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	sb := startSecureBroker(t)
	for _, tc := range []struct {
		name string
		cfg  map[string]any
	}{
		{"SASL_SSL SCRAM-SHA-256", map[string]any{"bootstrap.servers": sb.saslSSL, "security.protocol": "SASL_SSL",
			"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": sb.scramUser, "sasl.password": sb.scramPass,
			"ssl.ca.location": sb.caFile}},
		{"SSL with a client certificate", map[string]any{"bootstrap.servers": sb.ssl, "security.protocol": "SSL",
			"ssl.ca.location": sb.caFile, "ssl.certificate.location": sb.clientCert, "ssl.key.location": sb.clientKey}},
	} {
		t.Run(tc.name, func(t *testing.T) { pythonRoundTrip(t, sb, "confluent", tc.cfg) })
	}
}

// TestKcatSecure: kcat (librdkafka) produces and consumes over SASL_SSL
// with SCRAM-SHA-256 and over SSL with a client certificate.
func TestKcatSecure(t *testing.T) {
	kcat := requireTool(t, "kcat")
	sb := startSecureBroker(t)
	for _, tc := range []struct {
		name  string
		props []string
	}{
		{"SASL_SSL SCRAM-SHA-256", []string{"-b", sb.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=SCRAM-SHA-256",
			"-X", "sasl.username=" + sb.scramUser, "-X", "sasl.password=" + sb.scramPass, "-X", "ssl.ca.location=" + sb.caFile}},
		{"SSL with a client certificate", []string{"-b", sb.ssl, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + sb.caFile,
			"-X", "ssl.certificate.location=" + sb.clientCert, "-X", "ssl.key.location=" + sb.clientKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := uniqueTopic(t)
			createTopic(t, newAdmin(t, sb.Broker), topic, 1, nil)
			in := "one\ntwo\nthree\n"
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			prod := exec.CommandContext(ctx, kcat, append(tc.props, "-P", "-t", topic)...)
			prod.Stdin = strings.NewReader(in)
			if out, err := prod.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			cons := exec.CommandContext(ctx, kcat, append(tc.props, "-C", "-t", topic, "-o", "beginning", "-c", "3", "-e")...)
			out, err := cons.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, out)
			}
			if string(out) != in {
				t.Errorf("kcat read %q, want %q", out, in)
			}
		})
	}
}

// TestDynamicKeystoreUpdate: a per-listener key store changed with
// IncrementalAlterConfigs (listener.name.sasl_ssl.ssl.keystore.*, Kafka's
// reconfigurable SSL configs) is served to new connections without a
// restart; one that does not load, or whose certificate names other hosts
// (KIP-978), is refused with INVALID_CONFIG and the one in force stays.
func TestDynamicKeystoreUpdate(t *testing.T) {
	sb := startSecureBroker(t)
	ca2 := certs.NewCA(t, "second-ca")
	ks2, _, _ := ca2.Server(t).WritePEM(t, sb.dir, "broker2", ca2)
	adm := newAdmin(t, sb.Broker)
	ctx := testContext(t, 30*time.Second)
	set := func(k, v string) kadm.AlterConfig { return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v} }

	// A key store that does not load is refused with INVALID_CONFIG, by
	// both forms of AlterConfigs, and the one in force keeps serving.
	bad := filepath.Join(sb.dir, "not-a-keystore.pem")
	if err := os.WriteFile(bad, []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badConfigs := []kadm.AlterConfig{
		set("listener.name.sasl_ssl.ssl.keystore.type", "PEM"),
		set("listener.name.sasl_ssl.ssl.keystore.location", bad),
	}
	res, err := adm.AlterBrokerConfigs(ctx, badConfigs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("IncrementalAlterConfigs of a bad key store: %v %s, want INVALID_CONFIG", r.Err, r.ErrMessage)
		}
	}
	res, err = adm.AlterBrokerConfigsState(ctx, badConfigs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !errors.Is(r.Err, kerr.InvalidConfig) {
			t.Fatalf("AlterConfigs of a bad key store: %v %s, want INVALID_CONFIG", r.Err, r.ErrMessage)
		}
	}
	// KIP-978: a certificate for other names is refused too, unless
	// ssl.allow.san.changes.
	otherNames, _, _ := ca2.Server(t, "elsewhere.example").WritePEM(t, sb.dir, "broker-elsewhere", ca2)
	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		set("listener.name.sasl_ssl.ssl.keystore.type", "PEM"),
		set("listener.name.sasl_ssl.ssl.keystore.location", otherNames),
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !errors.Is(r.Err, kerr.InvalidConfig) || !strings.Contains(r.ErrMessage, "subject alternative names") {
			t.Fatalf("a key store for other names: %v %s, want INVALID_CONFIG", r.Err, r.ErrMessage)
		}
	}
	dc, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range dc {
		for _, c := range rc.Configs {
			if c.Key == "listener.name.sasl_ssl.ssl.keystore.location" && c.Source == kmsg.ConfigSourceDynamicBrokerConfig {
				t.Fatalf("the refused key store was stored: %s = %v", c.Key, c.MaybeValue())
			}
		}
	}
	if c, err := tls.Dial("tcp", sb.saslSSL, sb.clientTLS(t, false)); err != nil {
		t.Fatalf("the key store in force stopped serving after a refused update: %v", err)
	} else {
		c.Close()
	}

	res, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		set("listener.name.sasl_ssl.ssl.keystore.type", "PEM"),
		set("listener.name.sasl_ssl.ssl.keystore.location", ks2),
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterConfigs: %v %s", r.Err, r.ErrMessage)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca2.PEM)
	eventually(t, 20*time.Second, func() error {
		c, err := tls.Dial("tcp", sb.saslSSL, &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil {
			return err
		}
		return c.Close()
	})
	// The SSL listener keeps its own key store.
	if c, err := tls.Dial("tcp", sb.ssl, &tls.Config{RootCAs: pool, ServerName: "localhost"}); err == nil {
		c.Close()
		t.Error("the SSL listener serves the SASL_SSL listener's new certificate")
	}
}

// reauthWatch counts what franz-go reports of its connections: the
// re-authentications it starts on a connection whose session lifetime
// (SaslAuthenticate's session_lifetime_ms) is reached, and the
// connections that close.
type reauthWatch struct{ reauths, disconnects atomic.Int64 }

func (w *reauthWatch) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (w *reauthWatch) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.Contains(msg, "reauthenticating") {
		w.reauths.Add(1)
	}
}
func (w *reauthWatch) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { w.disconnects.Add(1) }

// TestFranzReauthentication (KIP-368): with connections.max.reauth.ms on
// the SASL_SSL listener, franz-go re-authenticates its connections before
// their sessions end and keeps producing and consuming across several
// session lifetimes without an error. The producer re-authenticates in
// place: it is told a session lifetime and re-authenticates, and none of
// its connections closes (a broker that refused the re-authentication,
// or closed the expired session, would close one).
func TestFranzReauthentication(t *testing.T) {
	sb := startSecureBroker(t, WithOverride("listener.name.sasl_ssl.connections.max.reauth.ms", "1500"))
	opts := []kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
		kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha512Mechanism())}
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, sb.Broker), topic, 1, nil)
	watch := &reauthWatch{}
	prod, err := kgo.NewClient(append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.WithLogger(watch), kgo.WithHooks(watch)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx := testContext(t, 60*time.Second)
	// Produce for three session lifetimes, one record every 100 ms.
	deadline := time.Now().Add(4500 * time.Millisecond)
	n := 0
	for time.Now().Before(deadline) {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("secure-%d", n))}).FirstErr(); err != nil {
			t.Fatalf("produce %d after %d records: %v", n, n, err)
		}
		n++
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	t.Logf("%d records, %d re-authentications, %d connections closed", n, watch.reauths.Load(), watch.disconnects.Load())
	if watch.reauths.Load() < 2 {
		t.Errorf("the producer re-authenticated %d times in three session lifetimes, want at least 2", watch.reauths.Load())
	}
	if d := watch.disconnects.Load(); d != 0 {
		t.Errorf("%d of the producer's connections closed: re-authentication did not keep them", d)
	}
	cons, err := kgo.NewClient(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := consume(t, cons, n, 20*time.Second)
	for i, r := range got {
		if want := fmt.Sprintf("secure-%d", i); string(r.Value) != want {
			t.Fatalf("record %d = %q, want %q", i, r.Value, want)
		}
	}
}
