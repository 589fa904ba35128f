package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// kafkaAddConfigs parses kafka-configs.sh's --add-config values
// ("k1=v1,k2=[a,b]": commas inside brackets belong to a list value, whose
// brackets are dropped) and the properties of --add-config-file.
func kafkaAddConfigs(values []string, file string) ([][2]string, error) {
	var out [][2]string
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--add-config-file: %w", err)
		}
		defer f.Close()
		kvs, err := parseProperties(bufio.NewScanner(f))
		if err != nil {
			return nil, fmt.Errorf("--add-config-file %s: %w", file, err)
		}
		out = append(out, kvs...)
	}
	for _, v := range values {
		for _, item := range splitOutsideBrackets(v) {
			if strings.TrimSpace(item) == "" {
				continue
			}
			k, val, ok := strings.Cut(item, "=")
			if !ok || strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("--add-config %q: expected key=value", item)
			}
			val = strings.TrimSpace(val)
			if strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
				val = val[1 : len(val)-1]
			}
			out = append(out, [2]string{strings.TrimSpace(k), val})
		}
	}
	return out, nil
}

func splitOutsideBrackets(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
