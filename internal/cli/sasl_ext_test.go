package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/gssapi"
	"github.com/vltava/vltava/internal/security/oauthbearer"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/testing/kdc"
	"github.com/vltava/vltava/internal/testing/oidc"
)

// exchange runs a client mechanism from --command-config properties
// against a broker mechanism, token by token, and returns the principal
// the broker authenticated.
func exchange(t *testing.T, client kgosasl.Mechanism, server sasl.Mechanism, host string) (security.Principal, error) {
	t.Helper()
	ctx := context.Background()
	sess, msg, err := client.Authenticate(ctx, host+":9092")
	if err != nil {
		return security.Principal{}, fmt.Errorf("client: %w", err)
	}
	ex, err := server.Start(sasl.ConnInfo{RemoteHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		srv, done, err := ex.Next(ctx, msg)
		if err != nil {
			return security.Principal{}, err
		}
		if done {
			return ex.Principal(), nil
		}
		if _, msg, err = sess.Challenge(srv); err != nil {
			return security.Principal{}, fmt.Errorf("client: %w", err)
		}
	}
	t.Fatal("exchange did not end")
	return security.Principal{}, nil
}

func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestCommandConfigOAuthBearerUnsecured(t *testing.T) {
	client, ok, err := saslMechanismFromProps(map[string]string{
		"sasl.mechanism":   "OAUTHBEARER",
		"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice" unsecuredLoginExtension_traceId="t1";`,
	})
	if err != nil || !ok {
		t.Fatalf("saslMechanismFromProps = %v, %v", ok, err)
	}
	server, err := oauthbearer.New(lookupIn(map[string]string{
		"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := exchange(t, client, server, "127.0.0.1")
	if err != nil || p != security.User("alice") {
		t.Fatalf("authenticated as %v, %v; want User:alice", p, err)
	}
}

func TestCommandConfigOAuthBearerOIDC(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	idp.AddClient("cli-client", "cli-secret")
	props := map[string]string{
		"sasl.mechanism":                      "OAUTHBEARER",
		"sasl.login.callback.handler.class":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		"sasl.oauthbearer.token.endpoint.url": idp.TokenURL(),
		"sasl.jaas.config":                    `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="cli-client" clientSecret="cli-secret" scope="kafka";`,
	}
	client, _, err := saslMechanismFromProps(props)
	if err != nil {
		t.Fatal(err)
	}
	server, err := oauthbearer.New(lookupIn(map[string]string{
		"sasl.jaas.config":                   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"sasl.server.callback.handler.class": oauthbearer.SecuredHandlerClass,
		"sasl.oauthbearer.jwks.endpoint.url": idp.JWKSURL(),
		"sasl.oauthbearer.expected.audience": "vltava",
		"sasl.oauthbearer.expected.issuer":   idp.Issuer(),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.(interface{ Close() error }).Close() })
	p, err := exchange(t, client, server, "127.0.0.1")
	if err != nil || p != security.User("cli-client") {
		t.Fatalf("authenticated as %v, %v; want User:cli-client", p, err)
	}

	props["sasl.jaas.config"] = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="cli-client" clientSecret="wrong";`
	client, _, err = saslMechanismFromProps(props)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exchange(t, client, server, "127.0.0.1"); err == nil || !strings.Contains(err.Error(), "token endpoint") {
		t.Fatalf("wrong client secret: %v, want the token endpoint's refusal", err)
	}
}

func TestCommandConfigGSSAPI(t *testing.T) {
	k := kdc.Start(t)
	t.Setenv("KRB5_CONFIG", k.Krb5Conf)
	k.AddService(t, "kafka/127.0.0.1")
	k.AddService(t, "alice")
	brokerKeytab := k.Keytab(t, "broker.keytab", "kafka/127.0.0.1")
	userKeytab := k.Keytab(t, "alice.keytab", "alice")
	server, err := gssapi.New(lookupIn(map[string]string{
		"sasl.jaas.config":           fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="kafka/127.0.0.1@%s";`, brokerKeytab, k.Realm),
		"sasl.kerberos.service.name": "kafka",
	}))
	if err != nil {
		t.Fatal(err)
	}
	client, ok, err := saslMechanismFromProps(map[string]string{
		"sasl.mechanism":             "GSSAPI",
		"sasl.kerberos.service.name": "kafka",
		"sasl.jaas.config":           fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="alice@%s";`, userKeytab, k.Realm),
	})
	if err != nil || !ok {
		t.Fatalf("saslMechanismFromProps = %v, %v", ok, err)
	}
	p, err := exchange(t, client, server, "127.0.0.1")
	if err != nil || p != security.User("alice") {
		t.Fatalf("authenticated as %v, %v; want User:alice", p, err)
	}

	// The ticket cache kinit fills (useTicketCache=true).
	k.Kinit(t, "alice", userKeytab)
	for _, e := range k.Env() {
		if v, ok := strings.CutPrefix(e, "KRB5CCNAME="); ok {
			t.Setenv("KRB5CCNAME", v)
		}
	}
	client, _, err = saslMechanismFromProps(map[string]string{
		"sasl.mechanism":             "GSSAPI",
		"sasl.kerberos.service.name": "kafka",
		"sasl.jaas.config":           `com.sun.security.auth.module.Krb5LoginModule required useTicketCache=true;`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := exchange(t, client, server, "127.0.0.1"); err != nil || p != security.User("alice") {
		t.Fatalf("from the ticket cache: authenticated as %v, %v; want User:alice", p, err)
	}
}

func TestCommandConfigSASLRefusals(t *testing.T) {
	if _, ok, err := saslMechanismFromProps(map[string]string{"sasl.mechanism": "PLAIN"}); ok || err != nil {
		t.Fatalf("PLAIN: ok=%v err=%v, want it left to the other mechanisms", ok, err)
	}
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"sasl.mechanism": "OAUTHBEARER"}, "sasl.jaas.config"},
		{map[string]string{"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`}, "unsecuredLoginStringClaim_sub"},
		{map[string]string{"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
			"sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"}, "sasl.oauthbearer.token.endpoint.url"},
		{map[string]string{"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
			"sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/token"}, "clientId"},
		{map[string]string{"sasl.mechanism": "GSSAPI", "sasl.jaas.config": `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/k" principal="a@R";`}, "sasl.kerberos.service.name"},
		{map[string]string{"sasl.mechanism": "GSSAPI", "sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required;`}, "Krb5LoginModule"},
	} {
		_, _, err := saslMechanismFromProps(c.props)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.props, err, c.want)
		}
	}
}

// TestSASLExtKeysAreRead keeps saslExtKeys, which the client prologue
// consults to know which properties are taken care of, true to the code
// that reads them.
func TestSASLExtKeysAreRead(t *testing.T) {
	var src string
	for _, f := range []string{"../security/oauthbearer/client.go", "../security/gssapi/client.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src += string(b)
	}
	for k := range saslExtKeys {
		// Once in ClientKeys, once where it is read.
		if k != "sasl.mechanism" && strings.Count(src, `"`+k+`"`) < 2 {
			t.Errorf("saslExtKeys lists %s, which no client.go reads", k)
		}
	}
}

// saslMechanismFromProps builds the client mechanism for
// sasl.mechanism=OAUTHBEARER or GSSAPI from Kafka's client properties
// (oauthbearer.NewClient, gssapi.NewClient). ok is false for any other
// mechanism (PLAIN and SCRAM are built elsewhere).
func saslMechanismFromProps(props map[string]string) (kgosasl.Mechanism, bool, error) {
	lookup := func(k string) (string, bool) { v, ok := props[k]; return v, ok }
	var (
		m   kgosasl.Mechanism
		err error
	)
	switch strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"])) {
	case "OAUTHBEARER":
		m, err = oauthbearer.NewClient(lookup)
	case "GSSAPI":
		m, err = gssapi.NewClient(lookup)
	default:
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("sasl.mechanism=%s: %w", props["sasl.mechanism"], err)
	}
	return m, true, nil
}
