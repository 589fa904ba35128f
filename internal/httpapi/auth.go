package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// ErrForbidden, wrapped in an Authenticator's error, answers 403: the
// credentials are good but do not grant the service (a user without any of
// authentication.roles), where other errors answer 401.
var ErrForbidden = errors.New("forbidden")

// Challenger is an Authenticator that names the challenge of its 401
// answers (the WWW-Authenticate header; "" for none).
type Challenger interface {
	Challenge() string
}

// BasicAuthenticator is authentication.method=BASIC: HTTP Basic
// credentials (RFC 7617) checked against a users file; the principal is
// User:<name>. A user needs one of Roles, unless Roles is empty or holds
// "*". SkipPaths are served without credentials, as anonymous.
type BasicAuthenticator struct {
	Realm     string
	Roles     []string
	Users     *UsersFile
	SkipPaths []string
}

// Authenticate implements Authenticator.
func (a *BasicAuthenticator) Authenticate(r *http.Request) (security.Principal, error) {
	if slices.Contains(a.SkipPaths, r.URL.Path) {
		return security.Anonymous, nil
	}
	name, password, ok := r.BasicAuth()
	if !ok {
		return security.Principal{}, errors.New("no basic credentials")
	}
	roles, ok := a.Users.Check(name, password)
	if !ok {
		return security.Principal{}, fmt.Errorf("bad credentials for user %q", name)
	}
	if len(a.Roles) > 0 && !slices.Contains(a.Roles, "*") && !slices.ContainsFunc(roles, func(r string) bool { return slices.Contains(a.Roles, r) }) {
		return security.Principal{}, fmt.Errorf("user %q has none of the roles %s: %w", name, strings.Join(a.Roles, ","), ErrForbidden)
	}
	return security.User(name), nil
}

// Challenge implements Challenger.
func (a *BasicAuthenticator) Challenge() string {
	return `Basic realm="` + strings.ReplaceAll(a.Realm, `"`, `'`) + `"`
}

// CertAuthenticator is mutual TLS: the principal is the verified client
// certificate's subject, in RFC 2253 form, mapped by
// ssl.principal.mapping.rules (tlsconf's, as a Kafka SSL listener's). A
// request without a certificate (ssl.client.authentication=REQUESTED) is
// anonymous; with REQUIRED the TLS handshake has refused it already.
type CertAuthenticator struct {
	// Mapper returns the mapping rules in force (they reload with the
	// stores).
	Mapper func() *tlsconf.PrincipalMapper
}

// Authenticate implements Authenticator.
func (a *CertAuthenticator) Authenticate(r *http.Request) (security.Principal, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return security.Anonymous, nil
	}
	name, err := a.Mapper().Map(tlsconf.SubjectDN(r.TLS.VerifiedChains[0][0]))
	if err != nil {
		return security.Principal{}, err
	}
	return security.User(name), nil
}

// Challenge implements Challenger: a certificate is asked for in the TLS
// handshake, not by HTTP.
func (a *CertAuthenticator) Challenge() string { return "" }
