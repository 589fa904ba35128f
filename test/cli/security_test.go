package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/certs"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestSecureCLI: a node formatted with `storage format --add-scram` serves
// a SASL_SSL listener on which the bootstrap user authenticates through
// --command-config (Kafka's client property names); `configs --entity-type
// users` adds a SCRAM-SHA-512 user who then produces and consumes over
// SASL_SSL, describes it, and deletes it again, after which it cannot
// authenticate.
func TestSecureCLI(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "cli-ca")
	keystore, _, _ := ca.Server(t).WritePEM(t, dir, "broker", ca)
	caFile := ca.WritePEM(t, dir, "ca")

	b := &broker{kind: "vltava", addr: freeAddr(t), dataDir: t.TempDir()}
	secure := freeAddr(t)
	common := []string{
		"--override", "listeners=PLAINTEXT://" + b.addr + ",SASL_SSL://" + secure,
		"--override", "log.dirs=" + b.dataDir,
		"--override", "admin.listeners=",
		"--override", "inter.broker.listener.name=PLAINTEXT",
	}
	clusterID := strings.TrimSpace(ok(t, nil, "", "storage", "random-uuid"))
	format := append([]string{"storage", "format", "--cluster-id", clusterID,
		"--add-scram", "SCRAM-SHA-256=[name=admin,password=admin-secret]"}, common...)
	ok(t, nil, "", format...)
	b.start(t, mustBinary(t, vltavaBinary), append(append([]string{"server"}, common...),
		"--override", "ssl.keystore.type=PEM",
		"--override", "ssl.keystore.location="+keystore,
		"--override", "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
		"--override", "delegation.token.secret.key=cli-token-secret",
		"--log-level", "warn")...)

	// The first controller commits the bootstrap credential with the
	// cluster id, a moment after the listener answers ApiVersions.
	poll.True(t, 30*time.Second, "the bootstrap SCRAM credential", func() bool {
		return strings.Contains(run(t, b, "", "configs", "--describe", "--entity-type", "users", "--entity-name", "admin").stdout, "SCRAM-SHA-256=iterations=4096")
	})

	props := func(name, mech, user, pass string) string {
		return writeFile(t, name, "security.protocol=SASL_SSL\n"+
			"sasl.mechanism="+mech+"\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="`+user+`" password="`+pass+`";`+"\n"+
			"ssl.truststore.type=PEM\nssl.truststore.location="+caFile+"\n")
	}
	admin := props("admin.properties", "SCRAM-SHA-256", "admin", "admin-secret")
	alice := props("alice.properties", "SCRAM-SHA-512", "alice", "alice-secret")
	as := func(cfg string, args ...string) []string {
		return append(args, "--bootstrap-server", secure, "--command-config", cfg)
	}

	ok(t, nil, "", as(admin, "configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-512=[iterations=8192,password=alice-secret]")...)
	out := ok(t, nil, "", as(admin, "configs", "--describe", "--entity-type", "users", "--entity-name", "alice")...)
	if !strings.Contains(out, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192") {
		t.Errorf("describe: %q", out)
	}
	ok(t, nil, "", as(alice, "topics", "create", "secure", "--partitions", "1")...)
	ok(t, nil, "one\ntwo\n", as(alice, "produce", "secure")...)
	got := ok(t, nil, "", as(alice, "consume", "secure", "--from-beginning", "--max-messages", "2", "--timeout", "10s")...)
	if got != "one\ntwo\n" {
		t.Errorf("consumed %q", got)
	}
	ok(t, nil, "", as(admin, "configs", "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-512")...)
	if stderr := fails(t, nil, "", as(alice, "topics", "list")...); !strings.Contains(stderr, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("a deleted user: %q", stderr)
	}
	// Delegation tokens (kafka-delegation-tokens.sh): the admin creates
	// one, a client authenticates with it (ScramLoginModule
	// tokenauth="true") as the admin, may not create tokens with it, and
	// cannot authenticate once it is expired.
	var created []struct {
		TokenID string `json:"token_id"`
		HMAC    string `json:"hmac"`
		Owner   string `json:"owner"`
	}
	if err := json.Unmarshal([]byte(ok(t, nil, "", as(admin, "delegation-tokens", "--create", "--renewer-principal", "User:alice", "--output", "json")...)), &created); err != nil || len(created) != 1 || created[0].Owner != "User:admin" {
		t.Fatalf("delegation-tokens --create: %+v %v", created, err)
	}
	token := writeFile(t, "token.properties", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="`+created[0].TokenID+`" password="`+created[0].HMAC+`" tokenauth="true";`+"\n"+
		"ssl.truststore.type=PEM\nssl.truststore.location="+caFile+"\n")
	if out := ok(t, nil, "", as(token, "topics", "list")...); !strings.Contains(out, "secure") {
		t.Errorf("topics list with the token: %q", out)
	}
	if out := ok(t, nil, "", as(admin, "delegation-tokens", "--describe")...); !strings.Contains(out, created[0].TokenID) || !strings.Contains(out, "[User:alice]") {
		t.Errorf("delegation-tokens --describe: %q", out)
	}
	if stderr := fails(t, nil, "", as(token, "delegation-tokens", "--create")...); !strings.Contains(stderr, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED") {
		t.Errorf("a token-authenticated --create: %q", stderr)
	}
	ok(t, nil, "", as(admin, "delegation-tokens", "--expire", "--expiry-time-period", "-1", "--hmac", created[0].HMAC)...)
	poll.True(t, 30*time.Second, "the expired token refused", func() bool {
		return strings.Contains(run(t, nil, "", as(token, "topics", "list")...).stderr, "SASL_AUTHENTICATION_FAILED")
	})

	// A bad security property is refused naming it.
	bad := writeFile(t, "bad.properties", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
	if stderr := fails(t, nil, "", as(bad, "topics", "list")...); !strings.Contains(stderr, "sasl.jaas.config") {
		t.Errorf("missing JAAS config: %q", stderr)
	}
}

// TestOAuthBearerCLI: the CLI speaks OAUTHBEARER through --command-config
// with Kafka's client properties (sasl.mechanism=OAUTHBEARER, an
// OAuthBearerLoginModule with unsecuredLoginStringClaim_sub), against a
// broker that validates unsecured tokens, and a login module of another
// mechanism is refused naming it.
func TestOAuthBearerCLI(t *testing.T) {
	b := &broker{kind: "vltava", addr: freeAddr(t), dataDir: t.TempDir()}
	sasl := freeAddr(t)
	b.start(t, mustBinary(t, vltavaBinary), "server",
		"--override", "listeners=PLAINTEXT://"+b.addr+",SASL_PLAINTEXT://"+sasl,
		"--override", "log.dirs="+b.dataDir,
		"--override", "inter.broker.listener.name=PLAINTEXT",
		"--override", "sasl.enabled.mechanisms=OAUTHBEARER",
		"--override", "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
		"--log-level", "warn")
	cfg := writeFile(t, "oauth.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";`+"\n")
	as := func(args ...string) []string {
		return append(args, "--bootstrap-server", sasl, "--command-config", cfg)
	}
	poll.True(t, 30*time.Second, "the OAUTHBEARER listener", func() bool {
		return run(t, nil, "", as("topics", "list")...).code == 0
	})
	ok(t, nil, "", as("topics", "create", "tokens", "--partitions", "1")...)
	ok(t, nil, "one\ntwo\n", as("produce", "tokens")...)
	if got := ok(t, nil, "", as("consume", "tokens", "--from-beginning", "--max-messages", "2", "--timeout", "10s")...); got != "one\ntwo\n" {
		t.Errorf("consumed %q", got)
	}
	bad := writeFile(t, "bad-oauth.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`+"\n")
	if stderr := fails(t, nil, "", "topics", "list", "--bootstrap-server", sasl, "--command-config", bad); !strings.Contains(stderr, "OAuthBearerLoginModule") {
		t.Errorf("a PLAIN login module for OAUTHBEARER: %q", stderr)
	}
}
