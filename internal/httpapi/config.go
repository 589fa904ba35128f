package httpapi

import (
	"crypto/tls"
	"fmt"
	"strings"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// Lookup resolves one of a service's keys to its value; ok is false when
// the key is unset (and has no default the caller applies).
type Lookup func(key string) (value string, ok bool)

// MapLookup looks keys up in a properties map.
func MapLookup(props map[string]string) Lookup {
	return func(k string) (string, bool) {
		v, ok := props[k]
		return v, ok
	}
}

// Keys name a service's settings. Every key is the service's prefix
// followed by the names Confluent's REST components use (rest-utils):
//
//	<Prefix>listeners                      http://host:port and https://host:port entries
//	<SSLPrefix>ssl.keystore.location, …    the key and trust stores of the https listeners (internal/security/tlsconf: PEM, PKCS12, JKS)
//	<SSLPrefix>ssl.client.authentication   NONE, REQUESTED or REQUIRED (a client certificate)
//	<SSLPrefix>ssl.client.auth             the older form: true/false (Confluent) or none/requested/required (Kafka)
//	<SSLPrefix>ssl.principal.mapping.rules the client certificate's subject → principal (Kafka's rules)
//	<Prefix>authentication.method          NONE or BASIC
//	<Prefix>authentication.realm           the Basic realm
//	<Prefix>authentication.roles           roles a user needs one of; * (the default): any user
//	<Prefix>authentication.users.file      the users: Jetty's password properties file, user: password[,role...]
//	<Prefix>authentication.skip.paths      paths served without authentication
type Keys struct {
	// Service names the service in logs and errors ("admin", "rest").
	Service string
	// Prefix is the prefix of the service's keys ("admin.", "rest.",
	// "schema.registry.", or "" for a service with a file of its own).
	Prefix string
	// SSLPrefix, if set, replaces Prefix for the ssl.* keys (Connect's
	// listeners.https.ssl.*).
	SSLPrefix string
	// DefaultListeners is the value of <Prefix>listeners when it is unset.
	DefaultListeners string
	// DefaultRealm is the Basic realm when <Prefix>authentication.realm is
	// unset.
	DefaultRealm string
}

// SSLKeys are the ssl.* keys a service reads (each after its prefix).
var SSLKeys = append([]string{"ssl.client.authentication"}, tlsconf.Keys...)

// AuthKeys are the authentication.* keys a service reads (each after its
// prefix).
var AuthKeys = []string{
	"authentication.method", "authentication.realm", "authentication.roles",
	"authentication.users.file", "authentication.skip.paths",
}

// ConfigFor reads the service with key prefix prefix ("rest.") from props:
// its listeners, TLS and authentication, as Options for New. Errors name
// the key at fault; a service refuses to start on one.
func ConfigFor(props map[string]string, prefix string) (Options, error) {
	return Keys{Service: strings.TrimSuffix(prefix, "."), Prefix: prefix}.Options(MapLookup(props))
}

// Options reads the service's keys through lookup. Keys Vltava does not
// implement (ssl.provider, authentication.method=BEARER, …) are refused by
// name, never ignored.
func (k Keys) Options(lookup Lookup) (Options, error) {
	get := func(key string) (string, bool) {
		v, ok := lookup(key)
		return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
	}
	o := Options{Service: k.Service}
	lkey := k.Prefix + "listeners"
	lv, ok := lookup(lkey)
	if !ok {
		lv = k.DefaultListeners
	}
	ls, err := config.ParseHTTPListeners(lv)
	if err != nil {
		return o, fmt.Errorf("%s: %w", lkey, err)
	}
	o.Listeners = ls
	sslPrefix := k.Prefix
	if k.SSLPrefix != "" {
		sslPrefix = k.SSLPrefix
	}
	var provider *tlsconf.Provider
	if anyHTTPS(ls) {
		provider, err = serverTLS(get, sslPrefix)
		if err != nil {
			return o, err
		}
		o.TLS = func() (*tls.Config, error) { return provider.Config(), nil }
	} else {
		// TLS settings with no https listener to use them would be
		// ignored: refused instead.
		for _, key := range SSLKeys {
			if _, set := get(sslPrefix + key); set {
				return o, fmt.Errorf("%s%s is set but %s has no https:// endpoint", sslPrefix, key, lkey)
			}
		}
	}
	auth, err := authenticator(get, k, provider)
	if err != nil {
		return o, err
	}
	if auth != nil {
		o.Authenticator = auth
	}
	return o, nil
}

func anyHTTPS(ls []config.HTTPListener) bool {
	for _, l := range ls {
		if l.Scheme == "https" {
			return true
		}
	}
	return false
}

// serverTLS builds the https listeners' TLS from <prefix>ssl.*.
func serverTLS(get func(string) (string, bool), prefix string) (*tlsconf.Provider, error) {
	clientAuth, err := clientAuthentication(get, prefix)
	if err != nil {
		return nil, err
	}
	p, err := tlsconf.NewServer(func(key string) (string, bool) {
		if key == "ssl.client.auth" {
			return clientAuth, true
		}
		return get(prefix + key)
	})
	if err != nil {
		return nil, fmt.Errorf("%sssl.*: %w", prefix, err)
	}
	return p, nil
}

// clientAuthentication resolves ssl.client.authentication (Confluent's
// NONE/REQUESTED/REQUIRED) and ssl.client.auth (Confluent's older boolean,
// or Kafka's none/requested/required) to tlsconf's ssl.client.auth.
func clientAuthentication(get func(string) (string, bool), prefix string) (string, error) {
	newKey, oldKey := prefix+"ssl.client.authentication", prefix+"ssl.client.auth"
	var fromNew, fromOld string
	if v, ok := get(newKey); ok {
		switch strings.ToUpper(v) {
		case "NONE", "REQUESTED", "REQUIRED":
			fromNew = strings.ToLower(v)
		default:
			return "", fmt.Errorf("%s: %q is not one of NONE, REQUESTED, REQUIRED", newKey, v)
		}
	}
	if v, ok := get(oldKey); ok {
		switch strings.ToLower(v) {
		case "true", "required":
			fromOld = "required"
		case "false", "none":
			fromOld = "none"
		case "requested":
			fromOld = "requested"
		default:
			return "", fmt.Errorf("%s: %q is not one of true, false, none, requested, required", oldKey, v)
		}
	}
	switch {
	case fromNew != "" && fromOld != "" && fromNew != fromOld:
		return "", fmt.Errorf("%s=%s contradicts %s=%s: set one", newKey, fromNew, oldKey, fromOld)
	case fromNew != "":
		return fromNew, nil
	case fromOld != "":
		return fromOld, nil
	}
	return "none", nil
}

// authenticator builds the service's Authenticator: BASIC from the users
// file, or, with authentication.method NONE on a listener taking client
// certificates, the certificate's principal. nil: every request is
// anonymous.
func authenticator(get func(string) (string, bool), k Keys, provider *tlsconf.Provider) (Authenticator, error) {
	methodKey := k.Prefix + "authentication.method"
	method, _ := get(methodKey)
	skip, _ := get(k.Prefix + "authentication.skip.paths")
	skipPaths := splitList(skip)
	var certs *CertAuthenticator
	if provider != nil && provider.ClientAuth() != "none" {
		certs = &CertAuthenticator{Mapper: provider.Mapper}
	}
	switch strings.ToUpper(method) {
	case "", "NONE":
		// What only BASIC reads would be ignored: refused instead.
		for _, key := range AuthKeys[1:] {
			if v, set := get(k.Prefix + key); set && !(key == "authentication.roles" && v == "*") {
				return nil, fmt.Errorf("%s%s is set but %s is NONE: set %s=BASIC, or remove it", k.Prefix, key, methodKey, methodKey)
			}
		}
		if certs == nil {
			return nil, nil
		}
		return certs, nil
	case "BASIC":
		realm, ok := get(k.Prefix + "authentication.realm")
		if !ok {
			realm = k.DefaultRealm
		}
		if realm == "" {
			realm = k.Service
		}
		roles, ok := get(k.Prefix + "authentication.roles")
		if !ok {
			roles = "*"
		}
		fileKey := k.Prefix + "authentication.users.file"
		file, ok := get(fileKey)
		if !ok {
			return nil, fmt.Errorf("%s=BASIC needs %s (a password properties file: user: password[,role...])", methodKey, fileKey)
		}
		users, err := OpenUsersFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileKey, err)
		}
		return &BasicAuthenticator{Realm: realm, Roles: splitList(roles), Users: users, SkipPaths: skipPaths}, nil
	}
	return nil, fmt.Errorf("%s: %q is not supported (NONE, BASIC)", methodKey, method)
}

func splitList(v string) []string {
	var out []string
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
