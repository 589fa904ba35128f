package gssapi

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KerberosName is a Kerberos principal as Kafka's KerberosName parses it:
// service[/host][@realm].
type KerberosName struct {
	Service, Host, Realm string
}

var kerberosNamePattern = regexp.MustCompile(`^([^/@]+)(/([^/@]+))?(@([^/@]+))?$`)

// ParseKerberosName parses "alice@REALM" or "kafka/host@REALM".
func ParseKerberosName(s string) (KerberosName, error) {
	m := kerberosNamePattern.FindStringSubmatch(s)
	if m == nil {
		if strings.Contains(s, "@") {
			return KerberosName{}, fmt.Errorf("malformed Kerberos name: %s", s)
		}
		return KerberosName{Service: s}, nil
	}
	return KerberosName{Service: m[1], Host: m[3], Realm: m[5]}, nil
}

func (n KerberosName) String() string {
	s := n.Service
	if n.Host != "" {
		s += "/" + n.Host
	}
	if n.Realm != "" {
		s += "@" + n.Realm
	}
	return s
}

// ShortNamer maps Kerberos principals to short names with
// sasl.kerberos.principal.to.local.rules, Kafka's KerberosShortNamer (the
// auth_to_local rules of Hadoop and MIT Kerberos, plus /L and /U):
//
//	DEFAULT                       in the default realm, the first component
//	RULE:[n:format](match)s/from/to/g/L
//
// A RULE applies to principals of n components: format builds a string from
// $0 (the realm), $1 and $2 (the components); it must match (the whole of)
// match; then s/from/to/ substitutes (every occurrence with g), and L or U
// lower- or upper-cases the result. The first rule that applies decides; a
// result still holding '/' or '@' is an error, as is no rule applying.
type ShortNamer struct {
	defaultRealm string
	rules        []shortNameRule
}

type shortNameRule struct {
	text         string
	isDefault    bool
	components   int
	format       string
	match        *regexp.Regexp // nil: any
	from         *regexp.Regexp // nil: no substitution
	to           string         // a Go Expand template
	global       bool
	lower, upper bool
}

// rulePattern is Kafka's KerberosRule grammar.
var rulePattern = regexp.MustCompile(`^((DEFAULT)|(RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?))$`)

// NewShortNamer parses the rules (the list sasl.kerberos.principal.to.local.rules
// holds; empty means DEFAULT). defaultRealm is the realm DEFAULT strips.
func NewShortNamer(defaultRealm string, rules []string) (*ShortNamer, error) {
	if len(rules) == 0 {
		rules = []string{"DEFAULT"}
	}
	n := &ShortNamer{defaultRealm: defaultRealm}
	for _, text := range rules {
		text = strings.TrimSpace(text)
		m := rulePattern.FindStringSubmatch(text)
		if m == nil {
			return nil, fmt.Errorf("invalid rule: %s", text)
		}
		if m[2] != "" {
			n.rules = append(n.rules, shortNameRule{text: text, isDefault: true})
			continue
		}
		r := shortNameRule{text: text, format: m[5], global: m[11] == "g", lower: m[12] == "L", upper: m[12] == "U"}
		c, err := strconv.Atoi(m[4])
		if err != nil {
			return nil, fmt.Errorf("invalid rule: %s: the component count is not a number", text)
		}
		r.components = c
		if m[6] != "" {
			if r.match, err = regexp.Compile(`^(?:` + m[7] + `)$`); err != nil {
				return nil, fmt.Errorf("invalid rule: %s: %v", text, err)
			}
		}
		if m[8] != "" {
			if r.from, err = regexp.Compile(m[9]); err != nil {
				return nil, fmt.Errorf("invalid rule: %s: %v", text, err)
			}
			if r.to, err = javaReplacement(m[10], r.from.NumSubexp()); err != nil {
				return nil, fmt.Errorf("invalid rule: %s: %v", text, err)
			}
		}
		n.rules = append(n.rules, r)
	}
	return n, nil
}

// ShortName maps a principal to its short name.
func (n *ShortNamer) ShortName(name KerberosName) (string, error) {
	var params []string
	switch {
	case name.Host == "" && name.Realm == "":
		return name.Service, nil // already simple
	case name.Host == "":
		params = []string{name.Realm, name.Service}
	default:
		params = []string{name.Realm, name.Service, name.Host}
	}
	for _, r := range n.rules {
		res, ok, err := r.apply(n.defaultRealm, params)
		if err != nil {
			return "", err
		}
		if ok {
			return res, nil
		}
	}
	return "", fmt.Errorf("no rules apply to %s", name)
}

func (r shortNameRule) apply(defaultRealm string, params []string) (string, bool, error) {
	var res string
	switch {
	case r.isDefault:
		if params[0] != defaultRealm {
			return "", false, nil
		}
		res = params[1]
	case len(params)-1 == r.components:
		base, err := substituteParams(r.format, params)
		if err != nil {
			return "", false, fmt.Errorf("rule %s: %v", r.text, err)
		}
		if r.match != nil && !r.match.MatchString(base) {
			return "", false, nil
		}
		res = base
		if r.from != nil {
			res = r.substitute(base)
		}
	default:
		return "", false, nil
	}
	if strings.ContainsAny(res, "/@") {
		return "", false, fmt.Errorf("non-simple name %s after auth_to_local rule %s", res, r.text)
	}
	switch {
	case r.lower:
		res = strings.ToLower(res)
	case r.upper:
		res = strings.ToUpper(res)
	}
	return res, true, nil
}

// substitute is Java's Matcher.replaceFirst, or replaceAll with g.
func (r shortNameRule) substitute(s string) string {
	if r.global {
		return r.from.ReplaceAllString(s, r.to)
	}
	loc := r.from.FindStringSubmatchIndex(s)
	if loc == nil {
		return s
	}
	out := r.from.ExpandString(nil, r.to, s, loc)
	return s[:loc[0]] + string(out) + s[loc[1]:]
}

// substituteParams replaces $n in format with params[n].
func substituteParams(format string, params []string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '$' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		if j == i+1 {
			continue // a '$' without digits stands for nothing, as in Kafka
		}
		num, _ := strconv.Atoi(format[i+1 : j])
		if num >= len(params) {
			return "", fmt.Errorf("index %d from %s is outside of the valid range 0 to %d", num, format, len(params)-1)
		}
		b.WriteString(params[num])
		i = j - 1
	}
	return b.String(), nil
}

// javaReplacement turns a java.util.regex replacement ($n group references,
// backslash escapes) into a Go Expand template.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
			if i == len(s) {
				return "", fmt.Errorf("character to be escaped is missing in %q", s)
			}
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case '$':
			i++
			if i == len(s) || s[i] < '0' || s[i] > '9' {
				return "", fmt.Errorf("illegal group reference in %q", s)
			}
			// Java reads the first digit, then more while the number
			// still names a group.
			num := int(s[i] - '0')
			for i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && num*10+int(s[i+1]-'0') <= groups {
				i++
				num = num*10 + int(s[i]-'0')
			}
			if num > groups {
				return "", fmt.Errorf("no group %d in %q", num, s)
			}
			fmt.Fprintf(&b, "${%d}", num)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
