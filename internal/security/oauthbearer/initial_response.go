package oauthbearer

import (
	"errors"
	"regexp"
	"strings"
)

// initialResponse is the client's first (and only) message, RFC 7628 §3.1:
//
//	gs2-header kvsep *kvpair kvsep    gs2-header = "n," ["a=" saslname] ","
//	kvpair = key "=" value kvsep      kvsep = %x01
//
// The "auth" pair carries "Bearer <token>"; every other pair is a SASL
// extension (KIP-342).
type initialResponse struct {
	authzid    string
	token      string
	extensions map[string]string
}

// The grammar as Kafka's OAuthBearerClientInitialResponse accepts it: keys
// are letters only, values printable ASCII with space, tab, CR and LF, and a
// saslname escapes ',' and '=' as =2C and =3D.
var (
	saslNamePattern = regexp.MustCompile(`^(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+$`)
	keyPattern      = regexp.MustCompile(`^[A-Za-z]+$`)
	valuePattern    = regexp.MustCompile(`^[\x21-\x7e \t\r\n]+$`)
	authPattern     = regexp.MustCompile(`^(\w+) +([-_.a-zA-Z0-9]+)$`)
)

var errMalformed = errors.New("invalid OAUTHBEARER client first message")

func parseInitialResponse(b []byte) (initialResponse, error) {
	s := string(b)
	rest, ok := strings.CutPrefix(s, "n,")
	if !ok {
		return initialResponse{}, errMalformed
	}
	authz, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return initialResponse{}, errMalformed
	}
	var r initialResponse
	if authz != "" {
		name, ok := strings.CutPrefix(authz, "a=")
		if !ok || !saslNamePattern.MatchString(name) {
			return initialResponse{}, errMalformed
		}
		r.authzid = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(name)
	}
	// What follows the header is kvsep, the pairs each ended by kvsep, and
	// a final kvsep: "\x01k=v\x01\x01".
	body, ok := strings.CutPrefix(rest, "\x01")
	if !ok {
		return initialResponse{}, errMalformed
	}
	body, ok = strings.CutSuffix(body, "\x01")
	if !ok {
		return initialResponse{}, errMalformed
	}
	r.extensions = map[string]string{}
	haveAuth := false
	for body != "" {
		pair, after, ok := strings.Cut(body, "\x01")
		if !ok {
			return initialResponse{}, errMalformed
		}
		body = after
		k, v, ok := strings.Cut(pair, "=")
		if !ok || !keyPattern.MatchString(k) || !valuePattern.MatchString(v) {
			return initialResponse{}, errMalformed
		}
		if k == "auth" {
			m := authPattern.FindStringSubmatch(v)
			if m == nil || !strings.EqualFold(m[1], "bearer") || haveAuth {
				return initialResponse{}, errMalformed
			}
			r.token, haveAuth = m[2], true
			continue
		}
		if _, dup := r.extensions[k]; dup {
			return initialResponse{}, errMalformed
		}
		r.extensions[k] = v
	}
	if !haveAuth {
		return initialResponse{}, errMalformed
	}
	return r, nil
}
