package gssapi

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"

	"github.com/vltava/vltava/internal/security/jaas"
)

// ClientKeys are the client configs NewClient reads, Kafka's names.
var ClientKeys = []string{"sasl.jaas.config", "sasl.kerberos.service.name"}

// NewClient builds the client side of GSSAPI (franz-go's pkg/sasl/kerberos
// on gokrb5), for the CLI's --command-config and the broker's own
// connections, from Kafka's client configs (lookup as for New): the
// Krb5LoginModule entry with useKeyTab=true, keyTab and principal, or
// useTicketCache=true (ticketCache, else KRB5CCNAME), and
// sasl.kerberos.service.name (or the JAAS serviceName). The Kerberos
// configuration is KRB5_CONFIG, else /etc/krb5.conf.
func NewClient(lookup func(key string) (string, bool)) (kgosasl.Mechanism, error) {
	raw, _ := lookup("sasl.jaas.config")
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("sasl.jaas.config is required for GSSAPI (" + loginModuleClass + ")")
	}
	mod, err := jaas.ParseOne(raw)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if mod.Class != loginModuleClass {
		return nil, fmt.Errorf("sasl.jaas.config names %s; GSSAPI needs %s", mod.Class, loginModuleClass)
	}
	service := strings.TrimSpace(mod.Options["serviceName"])
	if service == "" {
		v, _ := lookup("sasl.kerberos.service.name")
		service = strings.TrimSpace(v)
	}
	if service == "" {
		return nil, errors.New("no serviceName defined in either JAAS or Kafka config (sasl.kerberos.service.name)")
	}
	cfgPath := os.Getenv("KRB5_CONFIG")
	if cfgPath == "" {
		cfgPath = "/etc/krb5.conf"
	}
	cfgPath, _, _ = strings.Cut(cfgPath, ":")
	cfg, err := krbconfig.Load(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("GSSAPI: Kerberos configuration %s: %v", cfgPath, err)
	}
	var cl *client.Client
	switch {
	case strings.EqualFold(mod.Options["useKeyTab"], "true"):
		user, realm, err := kerberosUser(mod.Options["principal"], cfg)
		if err != nil {
			return nil, err
		}
		kt, err := keytab.Load(mod.Options["keyTab"])
		if err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: keyTab %q: %v", mod.Options["keyTab"], err)
		}
		cl = client.NewWithKeytab(user, realm, kt, cfg, client.DisablePAFXFAST(true))
	case strings.EqualFold(mod.Options["useTicketCache"], "true"):
		path := mod.Options["ticketCache"]
		if path == "" {
			path = strings.TrimPrefix(os.Getenv("KRB5CCNAME"), "FILE:")
		}
		if path == "" {
			path = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
		}
		cc, err := credentials.LoadCCache(path)
		if err != nil {
			return nil, fmt.Errorf("GSSAPI: ticket cache %s: %v", path, err)
		}
		if cl, err = client.NewFromCCache(cc, cfg, client.DisablePAFXFAST(true)); err != nil {
			return nil, fmt.Errorf("GSSAPI: ticket cache %s: %v", path, err)
		}
	default:
		return nil, errors.New("sasl.jaas.config: Krb5LoginModule needs useKeyTab=true (with keyTab and principal) or useTicketCache=true")
	}
	return kerberos.Auth{Client: cl, Service: service}.AsMechanism(), nil
}

// kerberosUser splits a JAAS principal into name and realm, the realm
// defaulting to the configuration's default_realm.
func kerberosUser(principal string, cfg *krbconfig.Config) (string, string, error) {
	if principal == "" {
		return "", "", errors.New("sasl.jaas.config: principal is required with useKeyTab=true")
	}
	name, realm, _ := strings.Cut(principal, "@")
	if realm == "" {
		realm = cfg.LibDefaults.DefaultRealm
	}
	if realm == "" {
		return "", "", fmt.Errorf("sasl.jaas.config: principal %s has no realm and the Kerberos configuration names no default_realm", principal)
	}
	return name, realm, nil
}
