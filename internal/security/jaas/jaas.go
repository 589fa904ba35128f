// Package jaas parses the JAAS configuration strings Kafka takes in
// sasl.jaas.config and its listener- and mechanism-prefixed forms:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret" user_alice="alice-secret";
//
// One or more login modules, each a class name, a control flag (required,
// requisite, sufficient, optional) and options (name=value, the value
// quoted or a bare word), ended by a semicolon. Kafka's own parser accepts
// exactly one module per sasl.jaas.config; that rule is the caller's.
package jaas

import (
	"fmt"
	"strings"
	"unicode"
)

// Module is one login module entry.
type Module struct {
	Class   string
	Flag    string
	Options map[string]string
}

// Parse parses a JAAS configuration string into its login modules.
func Parse(s string) ([]Module, error) {
	p := &parser{src: s}
	var mods []Module
	for {
		p.skipSpace()
		if p.done() {
			break
		}
		m, err := p.module()
		if err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("jaas: no login module in %q", s)
	}
	return mods, nil
}

// ParseOne parses a configuration that must hold exactly one login module,
// as Kafka requires of sasl.jaas.config.
func ParseOne(s string) (Module, error) {
	mods, err := Parse(s)
	if err != nil {
		return Module{}, err
	}
	if len(mods) != 1 {
		return Module{}, fmt.Errorf("jaas: sasl.jaas.config must contain exactly one login module, found %d", len(mods))
	}
	return mods[0], nil
}

type parser struct {
	src string
	pos int
}

func (p *parser) done() bool { return p.pos >= len(p.src) }

func (p *parser) skipSpace() {
	for !p.done() && unicode.IsSpace(rune(p.src[p.pos])) {
		p.pos++
	}
}

// word reads a bare token: anything up to space, '=', ';' or a quote.
func (p *parser) word() string {
	start := p.pos
	for !p.done() {
		c := p.src[p.pos]
		if unicode.IsSpace(rune(c)) || c == '=' || c == ';' || c == '"' {
			break
		}
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) module() (Module, error) {
	class := p.word()
	if class == "" {
		return Module{}, p.errorf("expected a login module class name")
	}
	p.skipSpace()
	flag := p.word()
	switch strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return Module{}, p.errorf("login module %s: control flag %q is not required, requisite, sufficient or optional", class, flag)
	}
	m := Module{Class: class, Flag: strings.ToLower(flag), Options: map[string]string{}}
	for {
		p.skipSpace()
		if p.done() {
			return Module{}, p.errorf("login module %s: missing the closing ';'", class)
		}
		if p.src[p.pos] == ';' {
			p.pos++
			return m, nil
		}
		name := p.word()
		if name == "" {
			return Module{}, p.errorf("login module %s: expected an option name", class)
		}
		p.skipSpace()
		if p.done() || p.src[p.pos] != '=' {
			return Module{}, p.errorf("login module %s: option %s has no '='", class, name)
		}
		p.pos++
		p.skipSpace()
		value, err := p.value()
		if err != nil {
			return Module{}, err
		}
		if _, dup := m.Options[name]; dup {
			return Module{}, p.errorf("login module %s: option %s given twice", class, name)
		}
		m.Options[name] = value
	}
}

// value reads a quoted string (backslash escapes the next character) or a
// bare word.
func (p *parser) value() (string, error) {
	if p.done() {
		return "", p.errorf("expected an option value")
	}
	if p.src[p.pos] != '"' {
		w := p.word()
		if w == "" {
			return "", p.errorf("expected an option value")
		}
		return w, nil
	}
	p.pos++
	var b strings.Builder
	for !p.done() {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case '\\':
			if p.done() {
				return "", p.errorf("unterminated escape")
			}
			b.WriteByte(p.src[p.pos])
			p.pos++
		case '"':
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated quoted value")
}

// errorf reports a syntax error by position only: JAAS strings carry
// passwords, which must not appear in errors or logs.
func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("jaas: at character %d: %s", p.pos, fmt.Sprintf(format, args...))
}
