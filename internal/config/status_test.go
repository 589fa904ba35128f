package config

import (
	"bufio"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestEveryKeyHasATruthfulStatus walks every key of the configuration
// reference (docs/CONFIGURATION.md) and checks its "Support" column against
// the code:
//   - every key has a status, and the doc prints it;
//   - an honoured key is read outside this package: a field of Broker or
//     Topic tagged with the key is used by non-test code of another package,
//     or the key's name appears there as a string, or (a broker log default)
//     the topic key it provides the default for is honoured;
//   - a refused ("default only") key set to another valid value stops
//     ParseBroker (broker keys) or fails ValidateTopicConfigs with
//     INVALID_CONFIG (topic keys), with an error naming the key, while its
//     default is accepted.
//
// A key added without a status, or marked honoured without a reader, fails
// here.
func TestEveryKeyHasATruthfulStatus(t *testing.T) {
	brokerRows, topicRows, groupRows := docSupportColumn(t)
	if len(brokerRows) != len(BrokerDefs()) || len(topicRows) != len(TopicDefs()) || len(groupRows) != len(GroupDefs()) {
		t.Fatalf("doc lists %d broker, %d topic and %d group keys, the code %d, %d and %d; run go generate ./internal/config",
			len(brokerRows), len(topicRows), len(groupRows), len(BrokerDefs()), len(TopicDefs()), len(GroupDefs()))
	}
	for k := range keyStatus {
		if _, ok := brokerDefs[k]; !ok {
			t.Errorf("keyStatus names %s, which is not a broker key", k)
		}
	}
	for k := range topicKeyStatus {
		if _, ok := topicDefs[k]; !ok {
			t.Errorf("topicKeyStatus names %s, which is not a topic key", k)
		}
	}
	readers := readersOutsideConfig(t)
	for _, d := range GroupDefs() {
		s := GroupSupport(d.Name)
		checkDocAndReason(t, "group", d, s, groupRows[d.Name])
		if s.Status == Honoured && !readers[d.Name] {
			t.Errorf("group key %s is marked honoured but nothing outside internal/config reads it (use its constant, listed in groupKeyConsts, or refuse it)", d.Name)
		}
	}

	for _, d := range BrokerDefs() {
		s := BrokerSupport(d.Name)
		checkDocAndReason(t, "broker", d, s, brokerRows[d.Name])
		switch s.Status {
		case Honoured:
			if d.TopicSynonym != "" && TopicSupport(d.TopicSynonym).Status == Honoured {
				continue // read through ResolveTopic with the topic key
			}
			if !readers[d.Name] {
				t.Errorf("broker key %s is marked honoured but nothing outside internal/config reads it (tag the Broker field that holds it with `config:%q` and use it, or refuse it)", d.Name, d.Name)
			}
		case DefaultOnly:
			if _, _, err := ParseBroker(map[string]string{d.Name: d.Default}); d.HasDefault && err != nil {
				t.Errorf("%s at its default %q is refused: %v", d.Name, d.Default, err)
			}
			v, ok := otherValidValue(d)
			if !ok {
				t.Errorf("no valid non-default value found to test the refusal of %s", d.Name)
				continue
			}
			_, _, err := ParseBroker(map[string]string{d.Name: v})
			if err == nil || !strings.Contains(err.Error(), d.Name+": "+s.Reason) {
				t.Errorf("ParseBroker(%s=%s) = %v, want a refusal naming the key and %q", d.Name, v, err, s.Reason)
			}
			if d.ReadOnly {
				continue
			}
			err = ValidateBrokerDynamic(map[string]string{d.Name: v})
			if err == nil || !errors.Is(err, kerr.InvalidConfig) {
				t.Errorf("dynamic %s=%s = %v, want INVALID_CONFIG", d.Name, v, err)
			}
		}
	}
	for _, d := range TopicDefs() {
		s := TopicSupport(d.Name)
		checkDocAndReason(t, "topic", d, s, topicRows[d.Name])
		switch s.Status {
		case Honoured:
			if !readers[d.Name] {
				t.Errorf("topic key %s is marked honoured but nothing outside internal/config reads it (tag the Topic field with `config:%q` and use it, or refuse it)", d.Name, d.Name)
			}
		case DefaultOnly:
			if err := ValidateTopicConfigs(map[string]string{d.Name: d.Default}); err != nil {
				t.Errorf("topic %s at its default is refused: %v", d.Name, err)
			}
			v, ok := otherValidValue(d)
			if !ok {
				t.Errorf("no valid non-default value found to test the refusal of %s", d.Name)
				continue
			}
			// remote.storage.enable keeps Kafka's own message for it.
			err := ValidateTopicConfigs(map[string]string{d.Name: v})
			if !errors.Is(err, kerr.InvalidConfig) || (!strings.Contains(err.Error(), d.Name) && d.Name != "remote.storage.enable") {
				t.Errorf("ValidateTopicConfigs(%s=%s) = %v, want INVALID_CONFIG naming the key", d.Name, v, err)
			}
		}
	}
}

func checkDocAndReason(t *testing.T, scope string, d Def, s Support, docCell string) {
	t.Helper()
	if s.Status == StatusUnset {
		t.Errorf("%s key %s has no status", scope, d.Name)
	}
	if s.Status != Honoured && s.Reason == "" {
		t.Errorf("%s key %s is %s without a reason", scope, d.Name, s.Status)
	}
	if !strings.HasPrefix(docCell, s.Status.String()) {
		t.Errorf("doc says %s key %s is %q, the code %q", scope, d.Name, docCell, s.Status)
	}
}

// docSupportColumn reads the Support column of both tables of
// docs/CONFIGURATION.md.
func docSupportColumn(t *testing.T) (broker, topic, group map[string]string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "CONFIGURATION.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	broker, topic, group = map[string]string{}, map[string]string{}, map[string]string{}
	var table map[string]string
	col := -1
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "## Broker configs":
			table = broker
		case line == "## Topic configs":
			table = topic
		case line == "## Group configs":
			table = group
		case strings.HasPrefix(line, "## "):
			table = nil
		}
		if table == nil || !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := splitRow(line)
		if cells[0] == "Name" {
			col = -1
			for i, c := range cells {
				if c == "Support" {
					col = i
				}
			}
			if col < 0 {
				t.Fatalf("table header %q has no Support column", line)
			}
			continue
		}
		if col < 0 || len(cells) <= col || !strings.HasPrefix(cells[0], "`") {
			continue
		}
		table[strings.Trim(cells[0], "`")] = cells[col]
	}
	return broker, topic, group
}

// splitRow splits a markdown table row on unescaped pipes.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// readersOutsideConfig returns the config keys read by non-test Go code of
// the module outside internal/config: keys tagged on a Broker or Topic field
// whose name is selected (x.Field) somewhere, and keys spelled as string
// literals.
func readersOutsideConfig(t *testing.T) map[string]bool {
	t.Helper()
	selected, literals := map[string]bool{}, map[string]bool{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path == filepath.Join(root, "internal", "config") || (path != root && strings.HasPrefix(e.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				selected[n.Sel.Name] = true
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil {
						literals[s] = true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]bool{}
	for k := range literals {
		read[k] = true
	}
	for method, keys := range methodReaders {
		if _, ok := reflect.TypeOf(&Broker{}).MethodByName(method); !ok {
			t.Errorf("methodReaders names %s, which is not a *Broker method", method)
		}
		if selected[method] {
			for _, k := range keys {
				read[k] = true
			}
		}
	}
	for name, key := range groupKeyConsts {
		if selected[name] {
			read[key] = true
		}
	}
	for _, typ := range []reflect.Type{reflect.TypeOf(Broker{}), reflect.TypeOf(Topic{})} {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag := f.Tag.Get("config")
			if tag == "" || !selected[f.Name] {
				continue
			}
			for _, k := range strings.Split(tag, ",") {
				read[k] = true
			}
		}
	}
	return read
}

// groupKeyConsts are the exported constants naming the group keys; a key is
// read when its constant is used outside this package.
var groupKeyConsts = map[string]string{
	"GroupConsumerSessionTimeoutKey":    GroupConsumerSessionTimeoutKey,
	"GroupConsumerHeartbeatIntervalKey": GroupConsumerHeartbeatIntervalKey,
}

// otherValidValue returns a value of d other than its default that passes
// its validation, to check that a refused key is refused for its status and
// not for a bad value.
func otherValidValue(d Def) (string, bool) {
	var candidates []string
	switch d.Type {
	case Boolean:
		candidates = []string{strconv.FormatBool(!parseBool(d.Default))}
	case Int, Short, Long:
		n := parseInt(d.Default)
		candidates = []string{strconv.FormatInt(n-1, 10), strconv.FormatInt(n+1, 10), "1", "2", "100"}
	case Double:
		candidates = []string{"0.25", "1000", "0.75"}
	default:
		candidates = append(candidates, d.rule.oneOf...)
		candidates = append(candidates, d.rule.listOf...)
		candidates = append(candidates, "x", "*", "0:1", "org.example.Plugin", "TLSv1.2")
	}
	for _, c := range candidates {
		if !isDefault(&d, c) && d.Validate(c) == nil {
			return c, true
		}
	}
	return "", false
}
