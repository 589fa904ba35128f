package oauthbearer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// unsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler:
// it accepts an unsigned JWT ("alg":"none", an empty signature) and checks
// only its claims. It is for development: anyone can mint such a token.
// Options come from the OAuthBearerLoginModule entry of sasl.jaas.config.
type unsecuredValidator struct {
	principalClaim string        // unsecuredValidatorPrincipalClaimName, default "sub"
	scopeClaim     string        // unsecuredValidatorScopeClaimName, default "scope"
	requiredScope  []string      // unsecuredValidatorRequiredScope, space-delimited
	clockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs, default 0
}

func newUnsecuredValidator(options map[string]string) (*unsecuredValidator, error) {
	v := &unsecuredValidator{principalClaim: "sub", scopeClaim: "scope"}
	if s := strings.TrimSpace(options["unsecuredValidatorPrincipalClaimName"]); s != "" {
		v.principalClaim = s
	}
	if s := strings.TrimSpace(options["unsecuredValidatorScopeClaimName"]); s != "" {
		v.scopeClaim = s
	}
	v.requiredScope = strings.Fields(options["unsecuredValidatorRequiredScope"])
	if s := strings.TrimSpace(options["unsecuredValidatorAllowableClockSkewMs"]); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("sasl.jaas.config: unsecuredValidatorAllowableClockSkewMs=%q is not a non-negative integer", s)
		}
		v.clockSkew = time.Duration(ms) * time.Millisecond
	}
	return v, nil
}

// validate checks an unsecured JWS compact serialization, header.payload.
// (RFC 7515 §A.5), as OAuthBearerUnsecuredJws and OAuthBearerValidationUtils:
// the principal claim present and a string, iat (if present) not in the
// future, exp present and not past, exp after iat, and the required scope.
func (v *unsecuredValidator) validate(_ context.Context, raw string, now time.Time) (validToken, *failure) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 || parts[2] != "" {
		return validToken{}, invalidToken("an unsecured JWS compact serialization must have 3 dot-separated Base64URL-encoded values, the third empty")
	}
	header, err := decodeJSONPart(parts[0])
	if err != nil {
		return validToken{}, invalidToken("JWS header: " + err.Error())
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return validToken{}, invalidToken("an unsecured JWS must have the 'alg' header set to 'none'")
	}
	claims, err := decodeJSONPart(parts[1])
	if err != nil {
		return validToken{}, invalidToken("JWT claims: " + err.Error())
	}
	principal, ok := claims[v.principalClaim].(string)
	if !ok || strings.TrimSpace(principal) == "" {
		return validToken{}, invalidToken(fmt.Sprintf("the principal claim %q is missing or not a non-empty string", v.principalClaim))
	}
	iat, hasIat, err := numericDate(claims, "iat")
	if err != nil {
		return validToken{}, invalidToken(err.Error())
	}
	if hasIat && iat.After(now.Add(v.clockSkew)) {
		return validToken{}, invalidToken("the token was issued in the future (iat)")
	}
	exp, hasExp, err := numericDate(claims, "exp")
	if err != nil {
		return validToken{}, invalidToken(err.Error())
	}
	if !hasExp {
		return validToken{}, invalidToken("the token has no expiration time (exp)")
	}
	if !now.Add(-v.clockSkew).Before(exp) {
		return validToken{}, invalidToken("the token has expired (exp)")
	}
	if hasIat && !exp.After(iat) {
		return validToken{}, invalidToken("the token's expiration time (exp) is not after its issue time (iat)")
	}
	scope, err := scopeClaim(claims, v.scopeClaim)
	if err != nil {
		return validToken{}, invalidToken(err.Error())
	}
	if f := checkScope(scope, v.requiredScope); f != nil {
		return validToken{}, f
	}
	return validToken{principal: principal, expiry: exp, scope: scope}, nil
}

// decodeJSONPart decodes one Base64URL part of a JWS (padding optional, as
// Java's URL decoder) into a JSON object.
func decodeJSONPart(s string) (map[string]any, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("not Base64URL: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// numericDate reads a NumericDate claim: seconds since the epoch, possibly
// fractional (RFC 7519 §2).
func numericDate(claims map[string]any, name string) (time.Time, bool, error) {
	v, ok := claims[name]
	if !ok || v == nil {
		return time.Time{}, false, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false, fmt.Errorf("the %q claim is not a number", name)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
		return time.Time{}, false, fmt.Errorf("the %q claim is not a valid NumericDate", name)
	}
	return time.UnixMilli(int64(f * 1000)), true, nil
}

// scopeClaim reads a scope claim: a space-delimited string or a list of
// strings (OAuthBearerUnsecuredJws.scope and Kafka's secured validator both
// take either form). Absent is no scope.
func scopeClaim(claims map[string]any, name string) ([]string, error) {
	switch v := claims[name].(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(v), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("the %q claim is a list with a non-string element", name)
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("the %q claim is neither a string nor a list of strings", name)
}

// checkScope fails with insufficient_scope, naming the required scope, when
// the token lacks any of it (OAuthBearerValidationUtils.validateScope).
func checkScope(have, required []string) *failure {
	for _, r := range required {
		found := false
		for _, h := range have {
			if h == r {
				found = true
				break
			}
		}
		if !found {
			return &failure{status: "insufficient_scope", scope: strings.Join(required, " "), reason: "the token's scope lacks " + r}
		}
	}
	return nil
}
