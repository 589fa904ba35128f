package oauthbearer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/vltava/vltava/internal/security/jaas"
)

// ClientKeys are the client configs NewClient reads, Kafka's names.
var ClientKeys = []string{"sasl.jaas.config", "sasl.login.callback.handler.class",
	"sasl.oauthbearer.token.endpoint.url", "sasl.login.connect.timeout.ms", "sasl.login.read.timeout.ms"}

// The client side's login handler classes (KIP-768), and defaults.
const (
	loginHandlerClass     = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
	loginHandlerClassOld  = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
	defaultUnsecuredLife  = time.Hour // unsecuredLoginLifetimeSeconds' default, 3600
	tokenRefreshFraction  = 0.8       // sasl.login.refresh.window.factor's default
	defaultLoginTimeoutMs = 10000     // sasl.login.connect/read.timeout.ms, unset in Kafka: the JDK's 10 s
)

// NewClient builds the client side of OAUTHBEARER, for the CLI's
// --command-config and the broker's own connections, from Kafka's client
// configs (lookup as for New):
//
//   - with sasl.oauthbearer.token.endpoint.url (KIP-768,
//     OAuthBearerLoginCallbackHandler): tokens from the endpoint by the
//     client-credentials grant, clientId, clientSecret and scope from the
//     JAAS options, reused until 80% of their lifetime;
//   - without: an unsecured JWT, as Kafka's
//     OAuthBearerUnsecuredLoginCallbackHandler builds from the
//     unsecuredLogin* JAAS options (development only), minted afresh for
//     every authentication.
//
// JAAS extension_<name> (and unsecuredLoginExtension_<name>) options
// become SASL extensions (KIP-342).
func NewClient(lookup func(key string) (string, bool)) (kgosasl.Mechanism, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	raw := get("sasl.jaas.config")
	if raw == "" {
		return nil, errors.New("sasl.jaas.config is required for OAUTHBEARER (" + loginModuleClass + ")")
	}
	mod, err := jaas.ParseOne(raw)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if mod.Class != loginModuleClass {
		return nil, fmt.Errorf("sasl.jaas.config names %s; OAUTHBEARER needs %s", mod.Class, loginModuleClass)
	}
	if err := refuseSSLOptions(mod.Options); err != nil {
		return nil, err
	}
	ext := map[string]string{}
	for k, v := range mod.Options {
		if name, ok := strings.CutPrefix(k, "extension_"); ok {
			ext[name] = v
		}
	}
	handler := get("sasl.login.callback.handler.class")
	endpoint := get("sasl.oauthbearer.token.endpoint.url")
	switch {
	case handler != "" && handler != loginHandlerClass && handler != loginHandlerClassOld:
		return nil, fmt.Errorf("sasl.login.callback.handler.class=%s: only %s is supported", handler, loginHandlerClass)
	case handler != "" && endpoint == "":
		return nil, fmt.Errorf("sasl.login.callback.handler.class=%s needs sasl.oauthbearer.token.endpoint.url", handler)
	case endpoint == "":
		// Checked now, so a misconfiguration fails at start.
		if _, err := unsecuredLoginToken(mod.Options, time.Now()); err != nil {
			return nil, err
		}
		for k, v := range mod.Options {
			if name, ok := strings.CutPrefix(k, "unsecuredLoginExtension_"); ok {
				ext[name] = v
			}
		}
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			tok, err := unsecuredLoginToken(mod.Options, time.Now())
			return oauth.Auth{Token: tok, Extensions: ext}, err
		}), nil
	}
	src, err := newTokenSource(endpoint, mod.Options, get)
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

func newTokenSource(endpoint string, opts map[string]string, get func(string) string) (*tokenSource, error) {
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
		if v := get(k); v != "" {
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
