package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// checkValue validates a raw value against a key's type and rule. With
// kafkaStyle the error carries Kafka's ConfigException wording (used for topic
// configs, whose errors travel back to clients); otherwise it uses Vltava's
// friendlier start-up wording.
func checkValue(name string, t Type, r rule, raw string, kafkaStyle bool) error {
	v := strings.TrimSpace(raw)
	fail := func(friendly, kafka string) error {
		e := &ValueError{Name: name, Value: raw, Reason: friendly}
		if kafkaStyle {
			e.kafkaReason = kafka
		}
		return e
	}
	if r.custom != nil {
		if reason := r.custom(v); reason != "" {
			return fail(reason, reason)
		}
		return nil
	}
	switch t {
	case Boolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return fail("must be true or false", "Expected value to be either true or false")
		}
	case Int, Short, Long:
		bits := map[Type]int{Int: 32, Short: 16, Long: 64}[t]
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return fail("must be "+r.numberPhrase(t), "Not a number of type "+t.String())
		}
		if reason := r.intRange(n); reason != "" {
			return fail("must be "+r.numberPhrase(t), reason)
		}
	case Double:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return fail("must be "+r.numberPhrase(t), "Not a number of type DOUBLE")
		}
		if r.hasMin && f < r.fmin {
			return fail("must be "+r.numberPhrase(t), "Value must be at least "+javaDouble(r.fmin))
		}
		if r.hasMax && f > r.fmax {
			return fail("must be "+r.numberPhrase(t), "Value must be no more than "+javaDouble(r.fmax))
		}
	case List:
		items := splitList(v)
		if r.nonEmptyList && len(items) == 0 {
			return fail("must not be empty", "Empty list")
		}
		if len(r.listOf) > 0 {
			for _, it := range items {
				if !contains(r.listOf, it) {
					return fail("must be a comma-separated list of "+r.describe(t),
						"String must be one of: "+strings.Join(r.listOf, ", "))
				}
			}
		}
	}
	if len(r.oneOf) > 0 && !contains(r.oneOf, v) && !(r.foldCase && slices.ContainsFunc(r.oneOf, func(o string) bool { return strings.EqualFold(o, v) })) {
		return fail("must be one of "+r.describe(t), "String must be one of: "+strings.Join(r.oneOf, ", "))
	}
	return nil
}

// numberPhrase is the friendly description of a numeric key's valid values,
// e.g. "an integer >= 14" or "a number in [0.0, 1.0]".
func (r rule) numberPhrase(t Type) string {
	noun := "an integer"
	lo, hi := strconv.FormatInt(r.min, 10), strconv.FormatInt(r.max, 10)
	switch t {
	case Double:
		noun = "a number"
		lo, hi = javaDouble(r.fmin), javaDouble(r.fmax)
	case Short:
		noun = "a 16-bit integer"
	case Int:
		noun = "a 32-bit integer"
		if r.hasMin || r.hasMax {
			noun = "an integer"
		}
	}
	switch {
	case r.allowMinusOne:
		return fmt.Sprintf("%s in [%s, %s] or -1", noun, lo, hi)
	case r.hasMin && r.hasMax:
		return fmt.Sprintf("%s in [%s, %s]", noun, lo, hi)
	case r.hasMin:
		return fmt.Sprintf("%s >= %s", noun, lo)
	}
	return noun
}

// intRange returns Kafka's wording of a range violation, or "".
func (r rule) intRange(n int64) string {
	if r.allowMinusOne && n == -1 {
		return ""
	}
	if r.allowMinusOne && (n < r.min || n > r.max) {
		return fmt.Sprintf("Value must be between %d and %d, or -1", r.min, r.max)
	}
	if r.hasMin && n < r.min {
		return fmt.Sprintf("Value must be at least %d", r.min)
	}
	if r.hasMax && n > r.max {
		return fmt.Sprintf("Value must be no more than %d", r.max)
	}
	return ""
}

// splitList splits a Kafka LIST value: comma separated, whitespace around
// elements ignored, and the empty string is the empty list.
func splitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// canonical renders a valid raw value the way Kafka's ConfigDef.convertToString
// prints the parsed value (booleans lower case, lists re-joined, trimmed).
func canonical(t Type, raw string) string {
	v := strings.TrimSpace(raw)
	switch t {
	case Boolean:
		return strings.ToLower(v)
	case Int, Short, Long:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case Double:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return javaDouble(f)
		}
	case List:
		return strings.Join(splitList(v), ",")
	}
	return v
}

// javaDouble formats f as Java's Double.toString does, so doubles print the
// way Kafka prints them ("0.5", "1.0", "1.7976931348623157E308").
func javaDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // 1.7976931348623157E+308
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	if strings.HasPrefix(exp, "-") {
		exp = "-" + strings.TrimLeft(exp[1:], "0")
	} else {
		exp = strings.TrimLeft(exp, "0")
	}
	return mant + "E" + exp
}

func parseBool(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

func parseInt(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}

func parseFloat(v string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return f
}
