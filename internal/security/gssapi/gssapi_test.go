package gssapi

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/testing/kdc"
)

// realm is a KDC with a broker principal kafka/127.0.0.1 (the host franz-go
// names for a broker at 127.0.0.1) in a keytab, and users.
type realm struct {
	kdc    *kdc.KDC
	keytab string
}

func startRealm(t *testing.T) *realm {
	t.Helper()
	k := kdc.Start(t)
	t.Setenv("KRB5_CONFIG", k.Krb5Conf)
	k.AddService(t, "kafka/127.0.0.1")
	k.AddUser(t, "alice", "alice-secret")
	k.AddUser(t, "alice/admin", "admin-secret")
	return &realm{kdc: k, keytab: k.Keytab(t, "broker.keytab", "kafka/127.0.0.1")}
}

func (r *realm) jaas(principal string) string {
	return fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="%s" principal="%s";`, r.keytab, principal)
}

func (r *realm) mechanism(t *testing.T, extra map[string]string) sasl.Mechanism {
	t.Helper()
	props := map[string]string{
		"sasl.jaas.config":           r.jaas("kafka/127.0.0.1@" + r.kdc.Realm),
		"sasl.kerberos.service.name": "kafka",
	}
	for k, v := range extra {
		props[k] = v
	}
	m, err := New(func(k string) (string, bool) { v, ok := props[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// login is a gokrb5 client logged in with a password.
func (r *realm) login(t *testing.T, user, password string) *client.Client {
	t.Helper()
	cfg, err := config.Load(r.kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithPassword(user, r.kdc.Realm, password, cfg, client.DisablePAFXFAST(true))
	if err := cl.Login(); err != nil {
		t.Fatalf("login %s: %v", user, err)
	}
	t.Cleanup(cl.Destroy)
	return cl
}

// authenticate runs franz-go's GSSAPI client against the mechanism, token
// by token, as SaslAuthenticate carries them.
func authenticate(t *testing.T, m sasl.Mechanism, cl *client.Client, host string) (sasl.Exchange, error) {
	t.Helper()
	ctx := context.Background()
	sess, msg, err := kerberos.Auth{Client: cl, Service: "kafka"}.AsMechanism().Authenticate(ctx, host+":9092")
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	ex, err := m.Start(sasl.ConnInfo{Listener: "SASL_PLAINTEXT", RemoteHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	clientDone := false
	for range 5 {
		srv, done, err := ex.Next(ctx, msg)
		if err != nil {
			return ex, err
		}
		if done {
			if !clientDone {
				t.Fatal("server done before the client sent its last token")
			}
			return ex, nil
		}
		clientDone, msg, err = sess.Challenge(srv)
		if err != nil {
			t.Fatalf("client refused the server's token: %v", err)
		}
	}
	t.Fatal("exchange did not end")
	return nil, nil
}

func TestGSSAPIAuthenticates(t *testing.T) {
	r := startRealm(t)
	ex, err := authenticate(t, r.mechanism(t, nil), r.login(t, "alice", "alice-secret"), "127.0.0.1")
	if err != nil {
		t.Fatalf("authentication failed: %v (%s)", err, reason(err))
	}
	if ex.Principal() != security.User("alice") {
		t.Fatalf("principal = %v, want User:alice (DEFAULT strips the default realm)", ex.Principal())
	}
	if ex.Lifetime() != 0 {
		t.Fatalf("lifetime = %v, want 0 (bounded by connections.max.reauth.ms only)", ex.Lifetime())
	}
}

func TestGSSAPIPrincipalToLocalRules(t *testing.T) {
	r := startRealm(t)
	m := r.mechanism(t, map[string]string{"sasl.kerberos.principal.to.local.rules": "RULE:[2:$1-$2@$0](.*@VLTAVA.TEST)s/@.*//U,DEFAULT"})
	ex, err := authenticate(t, m, r.login(t, "alice/admin", "admin-secret"), "127.0.0.1")
	if err != nil {
		t.Fatalf("authentication failed: %v (%s)", err, reason(err))
	}
	if ex.Principal() != security.User("ALICE-ADMIN") {
		t.Fatalf("principal = %v, want User:ALICE-ADMIN", ex.Principal())
	}
}

// TestGSSAPIWrongKey: the KDC has a new key for the broker's principal
// that its keytab lacks, so the ticket cannot be decrypted.
func TestGSSAPIWrongKey(t *testing.T) {
	r := startRealm(t)
	m := r.mechanism(t, nil)
	cl := r.login(t, "alice", "alice-secret")
	r.kdc.Rekey(t, "kafka/127.0.0.1")
	_, err := authenticate(t, m, cl, "127.0.0.1")
	wantRefused(t, err)
}

// TestGSSAPIUnknownPrincipal: a ticket for a service principal the broker
// does not hold (another broker's) is refused.
func TestGSSAPIUnknownPrincipal(t *testing.T) {
	r := startRealm(t)
	r.kdc.AddService(t, "kafka/localhost")
	_, err := authenticate(t, r.mechanism(t, nil), r.login(t, "alice", "alice-secret"), "localhost")
	wantRefused(t, err)
}

func TestGSSAPIMalformedTokens(t *testing.T) {
	r := startRealm(t)
	m := r.mechanism(t, nil)
	for _, tok := range [][]byte{nil, {0x60}, {0x60, 0x03, 0x06, 0x01, 0x00}, []byte("not a token at all")} {
		ex, _ := m.Start(sasl.ConnInfo{})
		_, done, err := ex.Next(context.Background(), tok)
		if done {
			t.Fatalf("%x accepted", tok)
		}
		wantRefused(t, err)
	}
}

func wantRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, sasl.ErrAuthentication) {
		t.Fatalf("err = %v, want an authentication failure", err)
	}
	t.Logf("refused: %s", reason(err))
	if strings.Contains(err.Error(), "alice") || strings.Contains(err.Error(), "kafka/") {
		t.Fatalf("the client's message %q names a principal", err)
	}
}

func reason(err error) string {
	var a *authError
	if errors.As(err, &a) {
		return a.Reason()
	}
	return ""
}

func TestGSSAPIConfigRefusals(t *testing.T) {
	r := startRealm(t)
	good := r.jaas("kafka/127.0.0.1@" + r.kdc.Realm)
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"sasl.kerberos.service.name": "kafka"}, "sasl.jaas.config"},
		{map[string]string{"sasl.jaas.config": good}, "serviceName"},
		{map[string]string{"sasl.jaas.config": good, "sasl.kerberos.service.name": "zookeeper"}, "sasl.kerberos.service.name"},
		{map[string]string{"sasl.jaas.config": r.jaas("kafka/other@" + r.kdc.Realm), "sasl.kerberos.service.name": "kafka"}, "holds no key"},
		{map[string]string{"sasl.jaas.config": `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=false principal="kafka/127.0.0.1";`, "sasl.kerberos.service.name": "kafka"}, "useKeyTab"},
		{map[string]string{"sasl.jaas.config": `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/nonexistent" principal="kafka/127.0.0.1";`, "sasl.kerberos.service.name": "kafka"}, "/nonexistent"},
		{map[string]string{"sasl.jaas.config": good, "sasl.kerberos.service.name": "kafka", "sasl.kerberos.principal.to.local.rules": "RULE:bad"}, "sasl.kerberos.principal.to.local.rules"},
	} {
		_, err := New(func(k string) (string, bool) { v, ok := c.props[k]; return v, ok })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error naming %s", c.props, err, c.want)
		}
	}
}

// TestGSSAPIWithMITInitiator drives the mechanism with MIT Kerberos's own
// GSS initiator (python3-gssapi), which asks for mutual authentication as
// kafka-python and librdkafka do, so the broker's AP-REP and wrap tokens
// are checked by MIT's code.
func TestGSSAPIWithMITInitiator(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import gssapi").Run(); err != nil {
		t.Fatal("python3-gssapi is not installed (scripts/install-test-deps.sh installs it)")
	}
	r := startRealm(t)
	r.kdc.Kinit(t, "alice", r.kdc.Keytab(t, "alice.keytab", "alice"))
	m := r.mechanism(t, nil)
	cmd := exec.Command("/usr/bin/python3", "testdata/gss_initiator.py", "kafka@127.0.0.1")
	cmd.Env = r.kdc.Env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	ex, _ := m.Start(sasl.ConnInfo{RemoteHost: "127.0.0.1"})
	done, steps := false, 0
	for ; !done && steps < 5; steps++ {
		step := steps
		line, err := out.ReadString('\n')
		if err != nil {
			_ = cmd.Wait()
			t.Fatalf("initiator: %v\n%s", err, stderr.String())
		}
		tok, err := hex.DecodeString(strings.TrimSpace(line))
		if err != nil {
			t.Fatal(err)
		}
		var srv []byte
		srv, done, err = ex.Next(context.Background(), tok)
		if err != nil {
			_ = in.Close()
			_ = cmd.Wait()
			t.Fatalf("step %d: %v (%s)\n%s", step, err, reason(err), stderr.String())
		}
		fmt.Fprintf(in, "%x\n", srv)
	}
	_ = in.Close()
	if err := cmd.Wait(); err != nil || !done {
		t.Fatalf("initiator: %v, done=%v\n%s", err, done, stderr.String())
	}
	if ex.Principal() != security.User("alice") {
		t.Fatalf("principal = %v", ex.Principal())
	}
	// AP-REQ, the empty answer to the AP-REP, the layer choice.
	if steps != 3 {
		t.Fatalf("%d client tokens, want 3 (mutual authentication)", steps)
	}
}

// TestGSSAPIAnyPrincipalOfTheKeytab: principal="*" accepts a ticket for
// any principal of the service held in the keytab.
func TestGSSAPIAnyPrincipalOfTheKeytab(t *testing.T) {
	r := startRealm(t)
	r.kdc.AddService(t, "kafka/localhost")
	r.keytab = r.kdc.Keytab(t, "both.keytab", "kafka/127.0.0.1", "kafka/localhost")
	m, err := New(func(k string) (string, bool) {
		v, ok := map[string]string{"sasl.jaas.config": r.jaas("*"), "sasl.kerberos.service.name": "kafka"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := r.login(t, "alice", "alice-secret")
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := authenticate(t, m, cl, host); err != nil {
			t.Fatalf("ticket for kafka/%s refused: %v (%s)", host, err, reason(err))
		}
	}
}

// TestGSSAPIReplayedAPReq: the same AP-REQ presented on a second
// connection is refused (gokrb5's replay cache, as the JDK's acceptor).
func TestGSSAPIReplayedAPReq(t *testing.T) {
	r := startRealm(t)
	m := r.mechanism(t, nil)
	_, first, err := kerberos.Auth{Client: r.login(t, "alice", "alice-secret"), Service: "kafka"}.AsMechanism().Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := m.Start(sasl.ConnInfo{RemoteHost: "127.0.0.1"})
	if _, _, err := ex.Next(context.Background(), first); err != nil {
		t.Fatalf("first use refused: %v (%s)", err, reason(err))
	}
	ex, _ = m.Start(sasl.ConnInfo{RemoteHost: "127.0.0.1"})
	_, _, err = ex.Next(context.Background(), first)
	wantRefused(t, err)
}

// TestGSSAPIConcurrentAuthentications: one mechanism serves many
// connections at once (run with -race).
func TestGSSAPIConcurrentAuthentications(t *testing.T) {
	r := startRealm(t)
	m := r.mechanism(t, nil)
	cl := r.login(t, "alice", "alice-secret")
	// Tickets first, one at a time: gokrb5's client cache is its own.
	var firsts [][]byte
	var sessions []interface {
		Challenge([]byte) (bool, []byte, error)
	}
	for range 10 {
		sess, first, err := kerberos.Auth{Client: cl, Service: "kafka"}.AsMechanism().Authenticate(context.Background(), "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		firsts, sessions = append(firsts, first), append(sessions, sess)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(firsts))
	for i := range firsts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex, _ := m.Start(sasl.ConnInfo{RemoteHost: "127.0.0.1"})
			srv, _, err := ex.Next(context.Background(), firsts[i])
			if err != nil {
				errs <- fmt.Errorf("%d: %v (%s)", i, err, reason(err))
				return
			}
			_, msg, err := sessions[i].Challenge(srv)
			if err != nil {
				errs <- err
				return
			}
			if _, done, err := ex.Next(context.Background(), msg); !done || err != nil || ex.Principal() != security.User("alice") {
				errs <- fmt.Errorf("%d: done=%v err=%v principal=%v", i, done, err, ex.Principal())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
