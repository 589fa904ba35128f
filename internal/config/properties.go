package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseProperties parses text in Java .properties syntax, following
// java.util.Properties.load:
//
//   - lines whose first non-blank character is # or ! are comments;
//   - a key ends at the first unescaped '=', ':' or blank; blanks around the
//     separator are skipped, trailing blanks of the value are kept;
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped;
//   - \t \n \r \f and \uXXXX are escapes, and a backslash before any other
//     character yields that character;
//   - a later duplicate key replaces an earlier one.
//
// Unlike Properties.load(InputStream), which reads ISO-8859-1, the input is
// taken as UTF-8: every Kafka config value is ASCII, and UTF-8 is what editors
// write today.
func ParseProperties(text string) (map[string]string, error) {
	props := map[string]string{}
	lines := logicalLines(text)
	for _, ln := range lines {
		key, value, err := splitKeyValue(ln.text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", ln.number, err)
		}
		props[key] = value
	}
	return props, nil
}

type logicalLine struct {
	number int // 1-based line where the logical line starts
	text   string
}

func isBlank(c rune) bool { return c == ' ' || c == '\t' || c == '\f' }

// logicalLines splits text into logical lines: comments and blank lines
// dropped, continuations joined (with the continuing backslash removed).
func logicalLines(text string) []logicalLine {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	natural := strings.Split(text, "\n")
	var out []logicalLine
	var cur strings.Builder
	start := 0
	continuing := false
	for i, raw := range natural {
		line := strings.TrimLeftFunc(raw, isBlank)
		if !continuing {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = i + 1
		}
		if trailingBackslashes(line)%2 == 1 {
			cur.WriteString(line[:len(line)-1])
			continuing = true
			continue
		}
		cur.WriteString(line)
		out = append(out, logicalLine{number: start, text: cur.String()})
		cur.Reset()
		continuing = false
	}
	if continuing && cur.Len() > 0 {
		// A continuation at end of input: Java keeps what it has.
		out = append(out, logicalLine{number: start, text: cur.String()})
	}
	return out
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitKeyValue splits one logical line into its unescaped key and value.
func splitKeyValue(line string) (string, string, error) {
	keyEnd, valueStart := len(line), len(line)
	hasSep, escaped := false, false
	for i, c := range line {
		switch {
		case escaped:
			escaped = false
			continue
		case c == '\\':
			escaped = true
			continue
		case c == '=' || c == ':':
			keyEnd, valueStart, hasSep = i, i+1, true
		case isBlank(c):
			keyEnd, valueStart = i, i+1
		default:
			continue
		}
		break
	}
	for valueStart < len(line) {
		c := rune(line[valueStart])
		if isBlank(c) {
			valueStart++
			continue
		}
		if !hasSep && (c == '=' || c == ':') {
			hasSep = true
			valueStart++
			continue
		}
		break
	}
	key, err := unescapeProperty(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	value, err := unescapeProperty(line[valueStart:])
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescapeProperty resolves .properties escapes.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if c != '\\' {
			b.WriteRune(c)
			continue
		}
		i++
		if i == len(rs) {
			break // a lone trailing backslash is dropped
		}
		switch rs[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 >= len(rs) {
				return "", fmt.Errorf(`malformed \uxxxx escape in %q`, s)
			}
			n, err := strconv.ParseUint(string(rs[i+1:i+5]), 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uxxxx escape in %q`, s)
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteRune(rs[i])
		}
	}
	return b.String(), nil
}
