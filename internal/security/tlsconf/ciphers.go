package tlsconf

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// tls13Suites are TLS 1.3's suites, which Go always enables and does not
// let a configuration choose among.
var tls13Suites = map[string]bool{
	"TLS_AES_128_GCM_SHA256":       true,
	"TLS_AES_256_GCM_SHA384":       true,
	"TLS_CHACHA20_POLY1305_SHA256": true,
}

// cipherSuites maps ssl.cipher.suites (IANA names, as Java uses them; the
// SSL_ prefix Java also accepts is read as TLS_) to Go's suite ids for TLS
// 1.2 and below. A suite Go cannot do is refused by name. TLS 1.3 suites
// may be listed only all together, since Go cannot enable a subset. An
// empty list keeps Go's defaults.
// only13 reports a list of TLS 1.3 suites alone: Java then has no suite for
// older versions, so only TLS 1.3 connects.
func cipherSuites(names []string) (ids []uint16, only13 bool, err error) {
	if len(names) == 0 {
		return nil, false, nil
	}
	known := map[string]uint16{}
	for _, cs := range tls.CipherSuites() {
		known[cs.Name] = cs.ID
	}
	for _, cs := range tls.InsecureCipherSuites() {
		known[cs.Name] = cs.ID
	}
	var unknown []string
	tls13 := 0
	for _, n := range names {
		name := n
		if rest, ok := strings.CutPrefix(n, "SSL_"); ok {
			name = "TLS_" + rest
		}
		if tls13Suites[name] {
			tls13++
			continue
		}
		id, ok := known[name]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		ids = append(ids, id)
	}
	if len(unknown) > 0 {
		return nil, false, fmt.Errorf("ssl.cipher.suites: Go's TLS cannot do %s", strings.Join(unknown, ", "))
	}
	if tls13 > 0 && tls13 < len(tls13Suites) {
		return nil, false, fmt.Errorf("ssl.cipher.suites: TLS 1.3 suites can be listed only all together (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256): Go always enables all three")
	}
	return ids, len(ids) == 0, nil
}
