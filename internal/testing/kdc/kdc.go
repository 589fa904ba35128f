// Package kdc starts a real MIT Kerberos KDC (Debian's krb5-kdc) for a test:
// a throwaway realm in a temporary directory, listening on a loopback port
// from internal/testing/freeport, its own krb5.conf and kdc.conf (KRB5_CONFIG,
// KRB5_KDC_PROFILE), principals and keytabs made with kadmin.local, and the
// krb5kdc process stopped when the test ends.
package kdc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Realm is the realm every test KDC serves.
const Realm = "VLTAVA.TEST"

// KDC is a running KDC.
type KDC struct {
	Realm string
	Dir   string
	// Port is the KDC's TCP and UDP port on 127.0.0.1.
	Port int
	// Krb5Conf is the client configuration file (for KRB5_CONFIG, and
	// for gokrb5's config.Load).
	Krb5Conf string
	kdcConf  string
}

// Tools are the programs a KDC needs (packages krb5-kdc, krb5-admin-server,
// krb5-user), so a test can skip when they are missing.
var Tools = []string{"krb5kdc", "kdb5_util", "kadmin.local", "kinit"}

// Available reports whether the MIT Kerberos programs are installed.
func Available() error {
	for _, tool := range Tools {
		if _, err := lookPath(tool); err != nil {
			return fmt.Errorf("%s not found (scripts/install-test-deps.sh installs it)", tool)
		}
	}
	return nil
}

func lookPath(tool string) (string, error) {
	if p, err := exec.LookPath(tool); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin"} {
		p := filepath.Join(dir, tool)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// Start creates the realm's database and starts krb5kdc, skipping the test
// when MIT Kerberos is not installed.
func Start(t testing.TB) *KDC {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	k := &KDC{Realm: Realm, Dir: dir, Port: freeport.Port(t),
		Krb5Conf: filepath.Join(dir, "krb5.conf"), kdcConf: filepath.Join(dir, "kdc.conf")}
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// AES only: the enctypes every client here (MIT, gokrb5) shares.
	const enctypes = "aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96"
	write(k.Krb5Conf, fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 1h
	default_tkt_enctypes = %[3]s
	default_tgs_enctypes = %[3]s
	permitted_enctypes = %[3]s
	default_ccache_name = FILE:%[4]s/ccache
[realms]
	%[1]s = {
		kdc = 127.0.0.1:%[2]d
	}
`, k.Realm, k.Port, enctypes, dir))
	write(k.kdcConf, fmt.Sprintf(`[kdcdefaults]
	kdc_ports = %[2]d
	kdc_tcp_ports = %[2]d
[realms]
	%[1]s = {
		database_name = %[3]s/principal
		key_stash_file = %[3]s/stash
		acl_file = %[3]s/kadm5.acl
		kdc_ports = %[2]d
		kdc_tcp_ports = %[2]d
		max_life = 1h
		master_key_type = aes256-cts-hmac-sha1-96
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}
[logging]
	kdc = FILE:%[3]s/kdc.log
`, k.Realm, k.Port, dir))
	write(filepath.Join(dir, "kadm5.acl"), "")
	k.run(t, "kdb5_util", "create", "-s", "-r", k.Realm, "-P", "master-"+strconv.Itoa(k.Port))
	bin, _ := lookPath("krb5kdc")
	cmd := exec.Command(bin, "-n", "-r", k.Realm)
	cmd.Env = k.Env()
	logf, err := os.Create(filepath.Join(dir, "krb5kdc.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("krb5kdc: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
	})
	poll.Until(t, 20*time.Second, "the KDC to listen", func() error {
		select {
		case <-exited:
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("krb5kdc exited: %s", out)
		default:
		}
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(k.Port)))
		if err != nil {
			return err
		}
		return c.Close()
	})
	return k
}

// Env is the environment pointing MIT tools and clients (kinit,
// librdkafka, python-gssapi) at this KDC.
func (k *KDC) Env() []string {
	return append(os.Environ(), "KRB5_CONFIG="+k.Krb5Conf, "KRB5_KDC_PROFILE="+k.kdcConf,
		"KRB5CCNAME=FILE:"+filepath.Join(k.Dir, "ccache"))
}

// AddUser adds a principal with a password.
func (k *KDC) AddUser(t testing.TB, principal, password string) {
	t.Helper()
	k.kadmin(t, fmt.Sprintf("addprinc -pw %s %s", password, principal))
}

// AddService adds a principal with a random key (a service, or a user
// that authenticates with a keytab).
func (k *KDC) AddService(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "addprinc -randkey "+principal)
}

// Keytab writes the principals' current keys to a new keytab file and
// returns its path.
func (k *KDC) Keytab(t testing.TB, name string, principals ...string) string {
	t.Helper()
	path := filepath.Join(k.Dir, name)
	for _, p := range principals {
		k.kadmin(t, fmt.Sprintf("ktadd -k %s -norandkey %s", path, p))
	}
	return path
}

// Principal is name@REALM.
func (k *KDC) Principal(name string) string { return name + "@" + k.Realm }

func (k *KDC) kadmin(t testing.TB, query string) {
	t.Helper()
	k.run(t, "kadmin.local", "-r", k.Realm, "-q", query)
}

func (k *KDC) run(t testing.TB, tool string, args ...string) {
	t.Helper()
	bin, err := lookPath(tool)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = k.Env()
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "error") {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
}

// Rekey gives a principal a new random key (a new kvno): keytabs written
// before no longer hold its current key.
func (k *KDC) Rekey(t testing.TB, principal string) {
	t.Helper()
	k.kadmin(t, "cpw -randkey "+principal)
}

// Kinit gets principal a ticket with its keytab into the KDC's credential
// cache (KRB5CCNAME of Env), for MIT clients that read it.
func (k *KDC) Kinit(t testing.TB, principal, keytab string) {
	t.Helper()
	k.run(t, "kinit", "-k", "-t", keytab, principal)
}
