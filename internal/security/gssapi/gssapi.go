// Package gssapi is the broker side of SASL/GSSAPI (Kerberos V5, RFC 4752)
// on github.com/jcmturner/gokrb5: the broker accepts service tickets with
// the key of its keytab, named by the Krb5LoginModule entry of
// sasl.jaas.config, as Kafka's broker does with the JDK's GSS acceptor.
//
// As in Kafka, no security layer is negotiated (only "no security layer"
// is offered, so the connection carries no integrity or confidentiality
// wrapping: use SASL_SSL for that), and the authenticated principal is the
// client's Kerberos name mapped to a short name by
// sasl.kerberos.principal.to.local.rules (Kafka's DefaultKafkaPrincipalBuilder).
//
// NewClient (client.go) is the client side, for the CLI and the broker's
// own connections.
package gssapi

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/vltava/vltava/internal/security/jaas"
	"github.com/vltava/vltava/internal/security/sasl"
)

// MechanismName is the SASL name, as in sasl.enabled.mechanisms.
const MechanismName = "GSSAPI"

const loginModuleClass = "com.sun.security.auth.module.Krb5LoginModule"

// Krb5LoginModule options that do not change what the broker accepts (they
// steer the JDK's own login, or its debug output) and are taken as given.
var passiveOptions = map[string]bool{
	"storeKey": true, "doNotPrompt": true, "debug": true, "refreshKrb5Config": true, "renewTGT": true,
	"isInitiator": true, "useTicketCache": true, "ticketCache": true, "tryFirstPass": true,
	"useFirstPass": true, "storePass": true, "clearPass": true,
}

// Mechanism is GSSAPI as configured on one listener.
type Mechanism struct {
	keytab *keytab.Keytab
	// service is the broker's own principal: service/host@REALM, or
	// only the service name when the JAAS principal is "*" (any
	// principal of the keytab whose first component is the service).
	service     KerberosName
	anyHost     bool
	serviceName string // sasl.kerberos.service.name
	namer       *ShortNamer
}

var (
	_ sasl.Mechanism = (*Mechanism)(nil)
	// New has the constructor shape the SASL mechanism registry calls.
	_ func(func(string) (string, bool)) (sasl.Mechanism, error) = New
)

// New builds the mechanism from the listener's configuration; lookup
// resolves a key in Kafka's order (listener.name.<l>.gssapi.<key>,
// listener.name.<l>.<key>, <key>).
func New(lookup func(key string) (string, bool)) (sasl.Mechanism, error) {
	return newMechanism(lookup)
}

func newMechanism(lookup func(key string) (string, bool)) (*Mechanism, error) {
	raw, ok := lookup("sasl.jaas.config")
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, errors.New("GSSAPI: sasl.jaas.config must name " + loginModuleClass + " with useKeyTab=true, keyTab and principal")
	}
	mod, err := jaas.ParseOne(raw)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: sasl.jaas.config: %w", err)
	}
	if mod.Class != loginModuleClass {
		return nil, fmt.Errorf("GSSAPI: sasl.jaas.config names login module %s, not %s", mod.Class, loginModuleClass)
	}
	for name, v := range mod.Options {
		switch {
		case name == "useKeyTab":
			if !strings.EqualFold(v, "true") {
				return nil, errors.New("GSSAPI: sasl.jaas.config: the broker authenticates with a keytab; useKeyTab must be true")
			}
		case name == "keyTab" || name == "principal" || name == "serviceName" || passiveOptions[name]:
		default:
			return nil, fmt.Errorf("GSSAPI: sasl.jaas.config: Krb5LoginModule option %s is not supported", name)
		}
	}
	path := mod.Options["keyTab"]
	if path == "" || !strings.EqualFold(mod.Options["useKeyTab"], "true") {
		return nil, errors.New("GSSAPI: sasl.jaas.config: useKeyTab=true and keyTab are required")
	}
	kt, err := keytab.Load(path)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: sasl.jaas.config: keyTab %s: %v", path, err)
	}
	m := &Mechanism{keytab: kt}

	// Kafka: "No serviceName defined in either JAAS or Kafka config".
	m.serviceName = strings.TrimSpace(mod.Options["serviceName"])
	if v, ok := lookup("sasl.kerberos.service.name"); ok && strings.TrimSpace(v) != "" && m.serviceName == "" {
		m.serviceName = strings.TrimSpace(v)
	}
	if m.serviceName == "" {
		return nil, errors.New("GSSAPI: no serviceName defined in either JAAS or Kafka config (sasl.kerberos.service.name)")
	}

	defaultRealm := krb5DefaultRealm()
	princ := strings.TrimSpace(mod.Options["principal"])
	switch princ {
	case "":
		return nil, errors.New("GSSAPI: sasl.jaas.config: principal is required")
	case "*":
		m.anyHost = true
		m.service = KerberosName{Service: m.serviceName}
	default:
		n, err := ParseKerberosName(princ)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: sasl.jaas.config: principal: %v", err)
		}
		if n.Realm == "" {
			n.Realm = defaultRealm
		}
		if n.Realm == "" {
			return nil, fmt.Errorf("GSSAPI: principal %s has no realm and the Kerberos configuration names no default_realm", princ)
		}
		if n.Service != m.serviceName {
			return nil, fmt.Errorf("GSSAPI: principal %s is not of service %s (sasl.kerberos.service.name): clients could not name it", princ, m.serviceName)
		}
		if !keytabHolds(kt, n) {
			return nil, fmt.Errorf("GSSAPI: keyTab %s holds no key for %s", path, n)
		}
		m.service = n
		if defaultRealm == "" {
			defaultRealm = n.Realm
		}
	}

	var rules []string
	if v, ok := lookup("sasl.kerberos.principal.to.local.rules"); ok {
		for _, r := range strings.Split(v, ",") {
			if r = strings.TrimSpace(r); r != "" {
				rules = append(rules, r)
			}
		}
	}
	if m.namer, err = NewShortNamer(defaultRealm, rules); err != nil {
		return nil, fmt.Errorf("GSSAPI: sasl.kerberos.principal.to.local.rules: %v", err)
	}
	return m, nil
}

// krb5DefaultRealm is the default_realm of the Kerberos configuration
// (KRB5_CONFIG, else /etc/krb5.conf), which the DEFAULT short-name rule and
// realm-less principals use, as the JDK's; "" when there is none.
func krb5DefaultRealm() string {
	path := os.Getenv("KRB5_CONFIG")
	if path == "" {
		path = "/etc/krb5.conf"
	}
	// KRB5_CONFIG may list several files; the first holds the defaults.
	path, _, _ = strings.Cut(path, ":")
	c, err := config.Load(path)
	if err != nil {
		return ""
	}
	return c.LibDefaults.DefaultRealm
}

func keytabHolds(kt *keytab.Keytab, n KerberosName) bool {
	want := []string{n.Service}
	if n.Host != "" {
		want = append(want, n.Host)
	}
	for _, e := range kt.Entries {
		if e.Principal.Realm == n.Realm && strings.Join(e.Principal.Components, "/") == strings.Join(want, "/") {
			return true
		}
	}
	return false
}

// Name is "GSSAPI".
func (m *Mechanism) Name() string { return MechanismName }

// Start begins one exchange.
func (m *Mechanism) Start(info sasl.ConnInfo) (sasl.Exchange, error) {
	return &exchange{m: m, remoteHost: info.RemoteHost}, nil
}
