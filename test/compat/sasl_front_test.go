package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/gssapi"
	"github.com/vltava/vltava/internal/security/oauthbearer"
	"github.com/vltava/vltava/internal/testing/kdc"
	"github.com/vltava/vltava/internal/testing/oidc"
	"github.com/vltava/vltava/internal/testing/saslfront"
)

// The tests here run the OAUTHBEARER and GSSAPI mechanisms against the
// real clients through internal/testing/saslfront, a Kafka endpoint that
// only authenticates and lists metadata: they check each client's side of
// the SASL exchange (token formats, Kerberos tokens, the RFC 7628 error
// flow) independently of the broker's listeners.

func lookupMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// kcatMetadata runs kcat -L against the endpoint and reports whether it
// got metadata.
func kcatMetadata(t *testing.T, addr string, security map[string]string, env []string) (string, error) {
	t.Helper()
	bin := requireTool(t, "kcat")
	args := []string{"-L", "-b", addr, "-m", "10"}
	for k, v := range security {
		args = append(args, "-X", k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

func wantPrincipal(t *testing.T, f *saslfront.Front, want security.Principal) {
	t.Helper()
	if got := f.Principals(); !slices.Contains(got, want) {
		t.Fatalf("authenticated %v, want %v (failures: %v)", got, want, f.Failures())
	}
}

func TestSASLMechanismOAuthBearerUnsecuredKcat(t *testing.T) {
	t.Parallel()
	m, err := oauthbearer.New(lookupMap(map[string]string{"sasl.jaas.config": oauthLoginModule}))
	if err != nil {
		t.Fatal(err)
	}
	f := saslfront.Start(t, m)
	out, err := kcatMetadata(t, f.Addr, map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER",
		"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": "principal=alice",
	}, nil)
	if err != nil || !strings.Contains(out, "1 brokers") {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	wantPrincipal(t, f, security.User("alice"))
}

// TestSASLMechanismOAuthBearerKafkaPython: kafka-python 2.0's OAUTHBEARER
// (a token provider, SaslHandshake v0 and raw tokens).
func TestSASLMechanismOAuthBearerKafkaPython(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "kafka", "python3-kafka")
	m, err := oauthbearer.New(lookupMap(map[string]string{"sasl.jaas.config": oauthLoginModule}))
	if err != nil {
		t.Fatal(err)
	}
	f := saslfront.Start(t, m)
	var res struct {
		Topics []string `json:"topics"`
	}
	runPythonEnv(t, nil, &res, "sasl_kafka_python_oauth_auth.py", f.Addr, "bob")
	wantPrincipal(t, f, security.User("bob"))
}

func TestSASLMechanismOAuthBearerOIDC(t *testing.T) {
	t.Parallel()
	idp := oidc.Start(t, "vltava")
	idp.AddClient("orders-service", "orders-secret")
	m, err := oauthbearer.New(lookupMap(map[string]string{
		"sasl.jaas.config":                   oauthLoginModule,
		"sasl.server.callback.handler.class": oauthbearer.SecuredHandlerClass,
		"sasl.oauthbearer.jwks.endpoint.url": idp.JWKSURL(),
		"sasl.oauthbearer.expected.audience": idp.Audience,
		"sasl.oauthbearer.expected.issuer":   idp.Issuer(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.(interface{ Close() error }).Close() })
	f := saslfront.Start(t, m)
	conf := map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER",
		"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "orders-service",
		"sasl.oauthbearer.client.secret": "orders-secret", "sasl.oauthbearer.token.endpoint.url": idp.TokenURL(),
		"sasl.oauthbearer.scope": "kafka",
	}
	t.Run("kcat", func(t *testing.T) {
		skipUnlessKcatHasOIDC(t)
		out, err := kcatMetadata(t, f.Addr, conf, nil)
		if err != nil || !strings.Contains(out, "1 brokers") {
			t.Fatalf("kcat -L: %v\n%s", err, out)
		}
		wantPrincipal(t, f, security.User("orders-service"))
	})
	t.Run("librdkafka", func(t *testing.T) {
		requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
		js, _ := json.Marshal(conf)
		var res struct {
			Brokers     int    `json:"brokers"`
			TokenSource string `json:"token_source"`
		}
		runPythonEnv(t, nil, &res, "sasl_confluent_auth.py", f.Addr, string(js))
		if res.Brokers != 1 {
			t.Fatalf("librdkafka listed %d brokers, want 1", res.Brokers)
		}
		t.Logf("librdkafka's token from the token endpoint via %s", res.TokenSource)
		wantPrincipal(t, f, security.User("orders-service"))
	})
}

// skipUnlessKcatHasOIDC skips when the installed librdkafka is built
// without sasl.oauthbearer.method=oidc (Debian's 2.0.2 lacks libcurl): a
// property of the client build, not of the broker.
func skipUnlessKcatHasOIDC(t *testing.T) {
	t.Helper()
	out, _ := exec.Command(requireTool(t, "kcat"), "-X", "sasl.oauthbearer.method=oidc", "-L", "-b", "127.0.0.1:1", "-m", "1").CombinedOutput()
	if strings.Contains(string(out), "not supported in this build") {
		t.Skipf("kcat's librdkafka has no OIDC: %s", strings.TrimSpace(string(out)))
	}
}

// gssapiFront is a KDC, a broker keytab for kafka/127.0.0.1, a user alice
// with a keytab, and the GSSAPI mechanism behind a saslfront endpoint.
func gssapiFront(t *testing.T) (*kdc.KDC, *saslfront.Front, string) {
	t.Helper()
	k := kdc.Start(t)
	k.AddService(t, "kafka/127.0.0.1")
	k.AddService(t, "alice")
	brokerKeytab := k.Keytab(t, "broker.keytab", "kafka/127.0.0.1")
	aliceKeytab := k.Keytab(t, "alice.keytab", "alice")
	t.Setenv("KRB5_CONFIG", k.Krb5Conf) // the mechanism's default realm
	m, err := gssapi.New(lookupMap(map[string]string{
		"sasl.jaas.config":           fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="kafka/127.0.0.1@%s";`, brokerKeytab, k.Realm),
		"sasl.kerberos.service.name": "kafka",
	}))
	if err != nil {
		t.Fatal(err)
	}
	return k, saslfront.Start(t, m), aliceKeytab
}

// TestSASLMechanismGSSAPIKcat: librdkafka through Cyrus SASL's GSSAPI
// plugin, its ticket from kinit with a keytab, mutual authentication.
func TestSASLMechanismGSSAPIKcat(t *testing.T) {
	k, f, aliceKeytab := gssapiFront(t)
	out, err := kcatMetadata(t, f.Addr, map[string]string{
		"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "GSSAPI",
		"sasl.kerberos.service.name": "kafka", "sasl.kerberos.keytab": aliceKeytab,
		"sasl.kerberos.principal": k.Principal("alice"),
		"sasl.kerberos.kinit.cmd": "kinit -k -t %{sasl.kerberos.keytab} %{sasl.kerberos.principal}",
	}, k.Env())
	if err != nil || !strings.Contains(out, "1 brokers") {
		t.Fatalf("kcat -L: %v\n%s\nfailures: %v", err, out, f.Failures())
	}
	wantPrincipal(t, f, security.User("alice"))
}

// TestSASLMechanismGSSAPIKafkaPython: kafka-python 2.0 (python3-gssapi),
// SaslHandshake v0 and raw tokens, from a ticket cache.
func TestSASLMechanismGSSAPIKafkaPython(t *testing.T) {
	requirePythonModule(t, "kafka", "python3-kafka")
	requirePythonModule(t, "gssapi", "python3-gssapi")
	k, f, aliceKeytab := gssapiFront(t)
	k.Kinit(t, "alice", aliceKeytab)
	var res struct {
		Topics []string `json:"topics"`
	}
	runPythonEnv(t, k.Env(), &res, "sasl_kafka_python_auth.py", f.Addr, "kafka")
	wantPrincipal(t, f, security.User("alice"))
}
