package transforms

import (
	"fmt"
	"strings"
)

// javaLayout translates a java.text.SimpleDateFormat pattern, the format
// Kafka's TimestampConverter and TimestampRouter take, into a Go time
// layout. Pattern letters without a Go equivalent, and literal text Go
// would read as a layout element, are refused.
func javaLayout(pattern string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c == '\'' {
			j := i + 1
			if j < len(pattern) && pattern[j] == '\'' {
				b.WriteByte('\'')
				i += 2
				continue
			}
			end := strings.IndexByte(pattern[j:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated quote in date format %q", pattern)
			}
			lit := pattern[j : j+end]
			if err := literalOK(lit, pattern); err != nil {
				return "", err
			}
			b.WriteString(lit)
			i = j + end + 1
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			if err := literalOK(string(c), pattern); err != nil {
				return "", err
			}
			b.WriteByte(c)
			i++
			continue
		}
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		var out string
		switch c {
		case 'y', 'u':
			if n == 2 {
				out = "06"
			} else {
				out = "2006"
			}
		case 'M', 'L':
			switch {
			case n == 1:
				out = "1"
			case n == 2:
				out = "01"
			case n == 3:
				out = "Jan"
			default:
				out = "January"
			}
		case 'd':
			out = map[bool]string{true: "2", false: "02"}[n == 1]
		case 'D':
			out = "002"
		case 'H':
			if n == 1 {
				return "", fmt.Errorf("date format %q: H without zero padding has no Go equivalent", pattern)
			}
			out = "15"
		case 'h':
			out = map[bool]string{true: "3", false: "03"}[n == 1]
		case 'm':
			out = map[bool]string{true: "4", false: "04"}[n == 1]
		case 's':
			out = map[bool]string{true: "5", false: "05"}[n == 1]
		case 'S':
			prev := b.String()
			if !strings.HasSuffix(prev, ".") && !strings.HasSuffix(prev, ",") {
				return "", fmt.Errorf("date format %q: S (milliseconds) must follow '.' or ','", pattern)
			}
			out = strings.Repeat("0", n)
		case 'a':
			out = "PM"
		case 'E':
			out = map[bool]string{true: "Monday", false: "Mon"}[n >= 4]
		case 'z':
			out = "MST"
		case 'Z':
			out = "-0700"
		case 'X':
			switch n {
			case 1:
				out = "Z07"
			case 2:
				out = "Z0700"
			default:
				out = "Z07:00"
			}
		default:
			return "", fmt.Errorf("date format %q: pattern letter %c is not supported", pattern, c)
		}
		b.WriteString(out)
		i += n
	}
	return b.String(), nil
}

// literalOK refuses literal text that Go's layout parser would take for an
// element (digits, month and day names, time zone words).
func literalOK(lit, pattern string) error {
	for _, w := range []string{"Jan", "Mon", "MST", "PM", "pm", "Z07", "-07"} {
		if strings.Contains(lit, w) {
			return fmt.Errorf("date format %q: literal %q cannot be expressed", pattern, lit)
		}
	}
	if strings.ContainsAny(lit, "0123456789_") {
		return fmt.Errorf("date format %q: literal %q cannot be expressed", pattern, lit)
	}
	return nil
}
