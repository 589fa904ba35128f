package tlsconf

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper is ssl.principal.mapping.rules (KIP-371): an ordered list
// of rules, each RULE:pattern/replacement/ with an optional L or U to lower-
// or upper-case the result, or DEFAULT (the distinguished name unchanged).
// The first rule whose pattern matches the whole name gives the principal's
// name; a name no rule matches is an authentication failure, as Kafka's
// SslPrincipalMapper throws.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault   bool
	match       *regexp.Regexp // the pattern anchored, for the whole-name test
	pattern     *regexp.Regexp
	replacement string
	lower       bool
	upper       bool
}

// ruleSplitter reads one rule and its separator at a time, as Kafka's
// SslPrincipalMapper.RULE_SPLITTER: a comma or newline ends a rule, but
// commas inside a RULE's pattern or replacement (escaped slashes allowed)
// do not.
var ruleSplitter = regexp.MustCompile(`^\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,\n]*?|([^,\n]*?))\s*(?:[,\n]\s*|$)`)

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		g := ruleSplitter.FindStringSubmatch(rest)
		if g == nil || g[0] == "" {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule at %q", rest)
		}
		rest = rest[len(g[0]):]
		switch {
		case g[1] == "DEFAULT":
			m.rules = append(m.rules, mappingRule{isDefault: true})
		case g[5] != "" || !strings.HasPrefix(g[1], "RULE:"):
			return nil, fmt.Errorf("ssl.principal.mapping.rules: invalid rule %q", g[1])
		default:
			pat, err := regexp.Compile(g[2])
			if err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %w", g[2], err)
			}
			match := regexp.MustCompile(`^(?:` + g[2] + `)$`)
			m.rules = append(m.rules, mappingRule{
				match: match, pattern: pat,
				replacement: javaReplacement(g[3]),
				lower:       g[4] == "L", upper: g[4] == "U",
			})
		}
	}
	return m, nil
}

// javaDollar finds Java's $n group references, which Go would read as
// named groups when followed by letters ($1x).
var javaDollar = regexp.MustCompile(`\$(\d)`)

// javaReplacement turns a Java Matcher replacement into Go's Expand form:
// $n becomes ${n}, \x becomes x.
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		if r[i] == '\\' && i+1 < len(r) {
			i++
			if r[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(r[i])
			}
			continue
		}
		b.WriteByte(r[i])
	}
	return javaDollar.ReplaceAllString(b.String(), `$${$1}`)
}

// Map applies the rules to a distinguished name.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.match.MatchString(dn) {
			continue
		}
		out := r.pattern.ReplaceAllString(dn, r.replacement)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no ssl.principal.mapping.rules rule matches %q", dn)
}

// SubjectDN is a certificate subject's distinguished name in RFC 2253 form,
// as Java's X500Principal.getName() gives Kafka's DefaultKafkaPrincipalBuilder:
// the most specific RDN first ("CN=alice,OU=eng,O=Acme,C=CZ").
func SubjectDN(c *x509.Certificate) string {
	return c.Subject.ToRDNSequence().String()
}
