package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/vltava/vltava/internal/security/jaas"
)

// saslExtKeys are the client properties saslMechanismFromProps reads for
// OAUTHBEARER and GSSAPI (with sasl.mechanism itself).
var saslExtKeys = map[string]bool{
	"sasl.mechanism": true, "sasl.jaas.config": true,
	"sasl.login.callback.handler.class":   true,
	"sasl.oauthbearer.token.endpoint.url": true,
	"sasl.login.connect.timeout.ms":       true, "sasl.login.read.timeout.ms": true,
	"sasl.kerberos.service.name": true,
}

// The login modules and callback handler Kafka's clients name.
const (
	oauthLoginModule      = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthLoginHandler     = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
	oauthLoginHandlerOld  = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
	kerberosLoginModule   = "com.sun.security.auth.module.Krb5LoginModule"
	defaultUnsecuredLife  = time.Hour // unsecuredLoginLifetimeSeconds' default, 3600
	tokenRefreshFraction  = 0.8       // sasl.login.refresh.window.factor's default
	defaultLoginTimeoutMs = 10000
)

// saslMechanismFromProps builds the client mechanism for
// sasl.mechanism=OAUTHBEARER or GSSAPI from Kafka's client properties. ok is
// false for any other mechanism (PLAIN and SCRAM are built elsewhere).
//
//   - OAUTHBEARER with sasl.oauthbearer.token.endpoint.url (KIP-768,
//     OAuthBearerLoginCallbackHandler): tokens from the endpoint by the
//     client-credentials grant, clientId, clientSecret and scope from the
//     JAAS options, cached until 80% of their lifetime;
//   - OAUTHBEARER without it: an unsecured JWT, as Kafka's
//     OAuthBearerUnsecuredLoginCallbackHandler builds from the
//     unsecuredLogin* JAAS options (development only);
//   - GSSAPI: Krb5LoginModule with useKeyTab=true keyTab principal, or
//     useTicketCache=true (KRB5CCNAME), and sasl.kerberos.service.name;
//     the Kerberos configuration is KRB5_CONFIG or /etc/krb5.conf.
//
// JAAS extension_<name> (and unsecuredLoginExtension_<name>) options
// become SASL extensions (KIP-342).
func saslMechanismFromProps(props map[string]string) (kgosasl.Mechanism, bool, error) {
	switch strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"])) {
	case "OAUTHBEARER":
		m, err := oauthMechanism(props)
		return m, true, err
	case "GSSAPI":
		m, err := kerberosMechanism(props)
		return m, true, err
	}
	return nil, false, nil
}

func loginModule(props map[string]string, class string) (jaas.Module, error) {
	raw := strings.TrimSpace(props["sasl.jaas.config"])
	if raw == "" {
		return jaas.Module{}, fmt.Errorf("sasl.jaas.config is required for sasl.mechanism=%s (%s)", props["sasl.mechanism"], class)
	}
	mod, err := jaas.ParseOne(raw)
	if err != nil {
		return jaas.Module{}, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if mod.Class != class {
		return jaas.Module{}, fmt.Errorf("sasl.jaas.config names %s; sasl.mechanism=%s needs %s", mod.Class, props["sasl.mechanism"], class)
	}
	return mod, nil
}

func oauthMechanism(props map[string]string) (kgosasl.Mechanism, error) {
	mod, err := loginModule(props, oauthLoginModule)
	if err != nil {
		return nil, err
	}
	ext := map[string]string{}
	for k, v := range mod.Options {
		if name, ok := strings.CutPrefix(k, "extension_"); ok {
			ext[name] = v
		}
	}
	handler := strings.TrimSpace(props["sasl.login.callback.handler.class"])
	endpoint := strings.TrimSpace(props["sasl.oauthbearer.token.endpoint.url"])
	switch {
	case handler != "" && handler != oauthLoginHandler && handler != oauthLoginHandlerOld:
		return nil, fmt.Errorf("sasl.login.callback.handler.class=%s: only %s is supported", handler, oauthLoginHandler)
	case handler != "" && endpoint == "":
		return nil, fmt.Errorf("sasl.login.callback.handler.class=%s needs sasl.oauthbearer.token.endpoint.url", handler)
	case endpoint == "":
		tok, err := unsecuredLoginToken(mod.Options, time.Now())
		if err != nil {
			return nil, err
		}
		for k, v := range mod.Options {
			if name, ok := strings.CutPrefix(k, "unsecuredLoginExtension_"); ok {
				ext[name] = v
			}
		}
		return oauth.Auth{Token: tok, Extensions: ext}.AsMechanism(), nil
	}
	src, err := newTokenSource(endpoint, mod.Options, props)
	if err != nil {
		return nil, err
	}
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := src.token(ctx)
		return oauth.Auth{Token: tok, Extensions: ext}, err
	}), nil
}

// unsecuredLoginToken builds Kafka's unsecured JWT: {"alg":"none"} and the
// claims of unsecuredLoginStringClaim_<n>, unsecuredLoginNumberClaim_<n>
// and unsecuredLoginListClaim_<n> (the first character of the value
// separating its elements), with iat, exp (unsecuredLoginLifetimeSeconds)
// and the principal claim (unsecuredLoginPrincipalClaimName, default sub)
// required.
func unsecuredLoginToken(opts map[string]string, now time.Time) (string, error) {
	claims := map[string]any{}
	for k, v := range opts {
		switch {
		case strings.HasPrefix(k, "unsecuredLoginStringClaim_"):
			claims[strings.TrimPrefix(k, "unsecuredLoginStringClaim_")] = v
		case strings.HasPrefix(k, "unsecuredLoginNumberClaim_"):
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return "", fmt.Errorf("sasl.jaas.config: %s=%q is not a number", k, v)
			}
			claims[strings.TrimPrefix(k, "unsecuredLoginNumberClaim_")] = n
		case strings.HasPrefix(k, "unsecuredLoginListClaim_"):
			var list []string
			if v != "" {
				list = strings.Split(v[1:], v[:1])
			}
			claims[strings.TrimPrefix(k, "unsecuredLoginListClaim_")] = list
		}
	}
	principalClaim := opts["unsecuredLoginPrincipalClaimName"]
	if principalClaim == "" {
		principalClaim = "sub"
	}
	if s, _ := claims[principalClaim].(string); strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("sasl.jaas.config: unsecuredLoginStringClaim_%s (the token's principal) is required", principalClaim)
	}
	life := defaultUnsecuredLife
	if s := opts["unsecuredLoginLifetimeSeconds"]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return "", fmt.Errorf("sasl.jaas.config: unsecuredLoginLifetimeSeconds=%q is not a positive number", s)
		}
		life = time.Duration(n) * time.Second
	}
	claims["iat"] = float64(now.UnixMilli()) / 1000
	claims["exp"] = float64(now.Add(life).UnixMilli()) / 1000
	header, _ := json.Marshal(map[string]string{"alg": "none"})
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(header) + "." + enc.EncodeToString(body) + ".", nil
}

// tokenSource gets access tokens from an OAuth 2 token endpoint with the
// client-credentials grant (RFC 6749 §4.4), as Kafka's
// HttpAccessTokenRetriever: client id and secret in HTTP Basic, the scope
// in the form. A token is reused until 80% of its lifetime has passed.
type tokenSource struct {
	endpoint, clientID, secret, scope string
	http                              *http.Client

	mu      sync.Mutex
	cached  string
	refresh time.Time
}

func newTokenSource(endpoint string, opts, props map[string]string) (*tokenSource, error) {
	if _, err := url.ParseRequestURI(endpoint); err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.token.endpoint.url: %v", err)
	}
	s := &tokenSource{endpoint: endpoint, clientID: opts["clientId"], secret: opts["clientSecret"], scope: opts["scope"]}
	if s.clientID == "" || s.secret == "" {
		return nil, errors.New("sasl.jaas.config: clientId and clientSecret are required with sasl.oauthbearer.token.endpoint.url")
	}
	timeout := time.Duration(0)
	for _, k := range []string{"sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms"} {
		ms := defaultLoginTimeoutMs
		if v := strings.TrimSpace(props[k]); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("%s=%q: want a positive number of milliseconds", k, v)
			}
			ms = n
		}
		timeout += time.Duration(ms) * time.Millisecond
	}
	s.http = &http.Client{Timeout: timeout}
	return s, nil
}

func (s *tokenSource) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached != "" && time.Now().Before(s.refresh) {
		return s.cached, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if s.scope != "" {
		form.Set("scope", s.scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(s.clientID), url.QueryEscape(s.secret))
	resp, err := s.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("OAUTHBEARER token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("OAUTHBEARER token endpoint: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("OAUTHBEARER token endpoint answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var tr struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &tr); err != nil || tr.AccessToken == "" {
		return "", errors.New("OAUTHBEARER token endpoint: the response holds no access_token")
	}
	s.cached = tr.AccessToken
	life := time.Duration(tr.ExpiresIn * float64(time.Second))
	s.refresh = time.Now().Add(time.Duration(float64(life) * tokenRefreshFraction))
	return s.cached, nil
}

func kerberosMechanism(props map[string]string) (kgosasl.Mechanism, error) {
	mod, err := loginModule(props, kerberosLoginModule)
	if err != nil {
		return nil, err
	}
	service := strings.TrimSpace(mod.Options["serviceName"])
	if service == "" {
		service = strings.TrimSpace(props["sasl.kerberos.service.name"])
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
