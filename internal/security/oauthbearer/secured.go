package oauthbearer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// securedValidator is KIP-768's broker-side validator
// (OAuthBearerValidatorCallbackHandler with its BrokerJwtValidator): a JWS
// signed by a key of the identity provider's JWKS, with exp and iat present,
// exp and nbf honoured within sasl.oauthbearer.clock.skew.seconds, the
// issuer and audience checked when configured, and the principal taken from
// sasl.oauthbearer.sub.claim.name.
type securedValidator struct {
	keys      *jwksCache
	audience  []string // sasl.oauthbearer.expected.audience
	issuer    string   // sasl.oauthbearer.expected.issuer
	clockSkew time.Duration
	subClaim  string
	scopeName string
}

// Config keys of the secured validator and their Kafka defaults.
const (
	keyJWKSURL        = "sasl.oauthbearer.jwks.endpoint.url"
	keyJWKSRefresh    = "sasl.oauthbearer.jwks.endpoint.refresh.ms"
	keyJWKSBackoff    = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"
	keyJWKSBackoffMax = "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"
	keyClockSkew      = "sasl.oauthbearer.clock.skew.seconds"
	keyAudience       = "sasl.oauthbearer.expected.audience"
	keyIssuer         = "sasl.oauthbearer.expected.issuer"
	keySubClaim       = "sasl.oauthbearer.sub.claim.name"
	keyScopeClaim     = "sasl.oauthbearer.scope.claim.name"
)

// signingMethods are the JWS algorithms accepted: every asymmetric one
// (jose4j's DISALLOW_NONE, less the HMAC ones, which a public JWKS cannot
// serve).
var signingMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func newSecuredValidator(lookup func(string) (string, bool)) (*securedValidator, error) {
	get := func(key, def string) string {
		if v, ok := lookup(key); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		return def
	}
	millis := func(key, def string) (time.Duration, error) {
		s := get(key, def)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%s is not a non-negative number of milliseconds", key, s)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	jwksURL := get(keyJWKSURL, "")
	if jwksURL == "" {
		return nil, fmt.Errorf("%s is required by %s", keyJWKSURL, SecuredHandlerClass)
	}
	refresh, err := millis(keyJWKSRefresh, "3600000")
	if err != nil {
		return nil, err
	}
	backoff, err := millis(keyJWKSBackoff, "100")
	if err != nil {
		return nil, err
	}
	backoffMax, err := millis(keyJWKSBackoffMax, "10000")
	if err != nil {
		return nil, err
	}
	skewStr := get(keyClockSkew, "30")
	skew, err := strconv.Atoi(skewStr)
	if err != nil || skew < 0 {
		return nil, fmt.Errorf("%s=%s is not a non-negative number of seconds", keyClockSkew, skewStr)
	}
	v := &securedValidator{
		issuer:    get(keyIssuer, ""),
		clockSkew: time.Duration(skew) * time.Second,
		subClaim:  get(keySubClaim, "sub"),
		scopeName: get(keyScopeClaim, "scope"),
	}
	for _, a := range strings.Split(get(keyAudience, ""), ",") {
		if a = strings.TrimSpace(a); a != "" {
			v.audience = append(v.audience, a)
		}
	}
	v.keys, err = newJWKSCache(jwksURL, refresh, backoff, backoffMax)
	if err != nil {
		return nil, err
	}
	return v, nil
}

var errNoKey = errors.New("no key of the JWKS matches the token's key id")

func (v *securedValidator) validate(ctx context.Context, raw string, now time.Time) (validToken, *failure) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(signingMethods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.clockSkew),
		jwt.WithTimeFunc(func() time.Time { return now }),
	}
	if len(v.audience) > 0 {
		opts = append(opts, jwt.WithAudience(v.audience...))
	}
	if v.issuer != "" {
		opts = append(opts, jwt.WithIssuer(v.issuer))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		keys := v.keys.lookup(ctx, kid)
		if len(keys) == 0 {
			return nil, errNoKey
		}
		set := jwt.VerificationKeySet{Keys: make([]jwt.VerificationKey, len(keys))}
		for i, k := range keys {
			set.Keys[i] = k
		}
		return set, nil
	})
	if err != nil {
		return validToken{}, invalidToken(err.Error())
	}
	// jose4j, which Kafka's validator is built on, requires iat, and
	// refuses a token carrying an audience when none is expected.
	if _, ok := claims["iat"]; !ok {
		return validToken{}, invalidToken("the token has no issue time (iat)")
	}
	if _, ok := claims["aud"]; ok && len(v.audience) == 0 {
		return validToken{}, invalidToken("the token has an audience (aud) but " + keyAudience + " is not set")
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return validToken{}, invalidToken("the token has no valid expiration time (exp)")
	}
	sub, ok := claims[v.subClaim].(string)
	if !ok || strings.TrimSpace(sub) == "" {
		return validToken{}, invalidToken(fmt.Sprintf("the %q claim is missing or not a non-empty string", v.subClaim))
	}
	scope, err := scopeClaim(claims, v.scopeName)
	if err != nil {
		return validToken{}, invalidToken(err.Error())
	}
	return validToken{principal: sub, expiry: exp.Time, scope: scope}, nil
}
