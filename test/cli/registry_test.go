package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/poll"
)

// startStandaloneRegistry runs `vltava registry serve` against b with
// Confluent's key names in a properties file, and returns its URL once it
// serves, and a func stopping it (SIGTERM).
func startStandaloneRegistry(t *testing.T, b *broker) (string, func()) {
	t.Helper()
	addr := freeAddr(t)
	props := filepath.Join(t.TempDir(), "registry.properties")
	if err := os.WriteFile(props, []byte("listeners=http://"+addr+"\n"+
		"kafkastore.bootstrap.servers="+b.addr+"\n"+
		"kafkastore.topic=_schemas_cli\n"+
		"schema.compatibility.level=backward\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(mustBinary(t, vltavaBinary), "registry", "serve", "--config", props)
	cmd.Stdout, cmd.Stderr = &lockedWriter{b: &out}, &lockedWriter{b: &out}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("registry output:\n%s", out.String())
		}
	})
	url := "http://" + addr
	poll.Until(t, 60*time.Second, "the standalone registry to serve", func() error {
		select {
		case <-exited:
			t.Fatalf("vltava registry serve exited:\n%s", out.String())
		default:
		}
		resp, err := http.Get(url + "/subjects")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	return url, stop
}

// TestRegistryCommands: a standalone `vltava registry serve` over a
// Vltava broker, driven by the registry commands (register, subjects,
// get, compat, config), then produce and consume with --value-schema-id
// turning JSON lines into Avro records in the wire format and back.
func TestRegistryCommands(t *testing.T) {
	t.Parallel()
	b := startVltava(t)
	url, _ := startStandaloneRegistry(t, b)
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := file("order.avsc", `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"city","type":"string"}]}`)
	noDefault := file("no-default.avsc", `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"city","type":"string"},{"name":"qty","type":"int"}]}`)
	withDefault := file("with-default.avsc", `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"city","type":"string"},{"name":"qty","type":"int","default":1}]}`)
	reg := func(args ...string) string {
		return ok(t, nil, "", append(append([]string{"registry"}, args...), "--registry-url", url)...)
	}

	var registered struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal([]byte(reg("register", "--subject", "orders-value", "-f", v1)), &registered); err != nil || registered.ID <= 0 {
		t.Fatalf("register: %+v, %v", registered, err)
	}
	id := strconv.Itoa(registered.ID)
	if out := reg("subjects"); !strings.Contains(out, `"orders-value"`) {
		t.Errorf("subjects: %s", out)
	}
	if out := reg("get", "--id", id); !strings.Contains(out, "Order") {
		t.Errorf("get --id %s: %s", id, out)
	}
	if out := reg("get", "--subject", "orders-value", "--version", "latest"); !strings.Contains(out, `"version": 1`) && !strings.Contains(out, `"version":1`) {
		t.Errorf("get --subject orders-value: %s", out)
	}

	// BACKWARD: a field added without a default is refused (non-zero
	// exit), one with a default accepted.
	r := runRaw(t, "", "registry", "compat", "--subject", "orders-value", "-f", noDefault, "--registry-url", url)
	if r.code == 0 || !strings.Contains(r.stdout, `"is_compatible": false`) {
		t.Errorf("compat of a field without a default: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if out := reg("compat", "--subject", "orders-value", "-f", withDefault); !strings.Contains(out, `"is_compatible": true`) {
		t.Errorf("compat of a field with a default: %s", out)
	}
	reg("config", "--subject", "orders-value", "--set", "FULL")
	if out := reg("config", "--subject", "orders-value"); !strings.Contains(out, "FULL") {
		t.Errorf("config --subject orders-value: %s", out)
	}
	// A subject without a level of its own shows the global one.
	if out := reg("config", "--subject", "orders-key"); !strings.Contains(out, "BACKWARD") {
		t.Errorf("config --subject orders-key: %s", out)
	}
	if out := reg("subjects", "--prefix", "orders-"); !strings.Contains(out, `"orders-value"`) {
		t.Errorf("subjects --prefix orders-: %s", out)
	}
	if out := reg("subjects", "--prefix", "payments-"); strings.TrimSpace(out) != "[]" {
		t.Errorf("subjects --prefix payments-: %s", out)
	}

	// JSON lines in, Avro in the wire format in the topic, JSON out.
	ok(t, b, "{\"id\":1,\"city\":\"Brno\"}\n{\"id\":2,\"city\":\"Praha\"}\n", "produce", "orders", "--value-schema-id", id, "--registry-url", url)
	raw := decodeLines[consumed](t, ok(t, b, "", "consume", "orders", "--from-beginning", "--max-messages", "2", "--timeout", "10s", "--format", "json"))
	for _, c := range raw {
		if c.Value == nil || len(*c.Value) < 5 || (*c.Value)[0] != 0 {
			t.Fatalf("stored value is not in the wire format: %+v", c)
		}
	}
	decoded := decodeLines[consumed](t, ok(t, b, "", "consume", "orders", "--from-beginning", "--max-messages", "2", "--timeout", "10s",
		"--format", "json", "--value-schema-id", id, "--registry-url", url))
	want := []string{`{"city":"Brno","id":1}`, `{"city":"Praha","id":2}`}
	if len(decoded) != len(want) {
		t.Fatalf("consumed %d records, want %d", len(decoded), len(want))
	}
	for i, c := range decoded {
		var v map[string]any
		if c.Value == nil || json.Unmarshal([]byte(*c.Value), &v) != nil {
			t.Fatalf("record %d: value %v is not JSON", i, c.Value)
		}
		if got, _ := json.Marshal(v); string(got) != want[i] {
			t.Errorf("record %d: %s, want %s", i, got, want[i])
		}
	}
	// JSON Schema (.json) and Protobuf (.proto) the same way: the type is
	// the file's, each record is the format's encoding behind the id (JSON
	// itself; Protobuf's message indexes and binary), and comes back as
	// the JSON it was.
	for _, f := range []struct {
		topic, file, schema, in, want string
		payload                       func([]byte) bool
	}{
		{"orders-json", "order.json", `{"type":"object","properties":{"id":{"type":"integer"},"city":{"type":"string"}},"required":["id","city"]}`,
			`{"id":3,"city":"Plzen"}`, `{"city":"Plzen","id":3}`, func(p []byte) bool { return string(p) == `{"id":3,"city":"Plzen"}` }},
		{"orders-proto", "order.proto", "syntax = \"proto3\";\nmessage Order {\n  int64 id = 1;\n  string city = 2;\n}\n",
			`{"id":"3","city":"Plzen"}`, `{"city":"Plzen","id":"3"}`, func(p []byte) bool { return len(p) > 1 && p[0] == 0 && !json.Valid(p) }},
	} {
		var r struct {
			ID int `json:"id"`
		}
		if err := json.Unmarshal([]byte(reg("register", "--subject", f.topic+"-value", "-f", file(f.file, f.schema))), &r); err != nil || r.ID <= 0 {
			t.Fatalf("register %s: %+v, %v", f.file, r, err)
		}
		fid := strconv.Itoa(r.ID)
		if out := reg("get", "--id", fid); !strings.Contains(out, map[string]string{"order.json": `"JSON"`, "order.proto": `"PROTOBUF"`}[f.file]) {
			t.Errorf("get --id %s: %s, want its schema type", fid, out)
		}
		ok(t, b, f.in+"\n", "produce", f.topic, "--value-schema-id", fid, "--registry-url", url)
		stored := decodeLines[consumed](t, ok(t, b, "", "consume", f.topic, "--from-beginning", "--max-messages", "1", "--timeout", "10s", "--format", "json"))
		if len(stored) != 1 || stored[0].Value == nil {
			t.Fatalf("%s: stored %+v", f.topic, stored)
		}
		v := []byte(*stored[0].Value)
		if len(v) < 5 || v[0] != 0 || strconv.Itoa(int(v[1])<<24|int(v[2])<<16|int(v[3])<<8|int(v[4])) != fid || !f.payload(v[5:]) {
			t.Fatalf("%s: stored value % x is not schema %s's wire format", f.topic, v, fid)
		}
		back := decodeLines[consumed](t, ok(t, b, "", "consume", f.topic, "--from-beginning", "--max-messages", "1", "--timeout", "10s",
			"--format", "json", "--value-schema-id", fid, "--registry-url", url))
		var got map[string]any
		if len(back) != 1 || back[0].Value == nil || json.Unmarshal([]byte(*back[0].Value), &got) != nil {
			t.Fatalf("%s: decoded %+v", f.topic, back)
		}
		if g, _ := json.Marshal(got); string(g) != f.want {
			t.Errorf("%s: decoded %s, want %s", f.topic, g, f.want)
		}
	}
	// The endpoints' TLS and authentication keys are Confluent's; one
	// that cannot be honoured stops start-up, named.
	for key, want := range map[string]string{
		"authentication.method=BASIC":    "authentication.users.file",
		"ssl.keystore.location=/nowhere": "has no https:// endpoint",
		"ssl.provider=SunJSSE":           "ssl.provider: not a schema registry setting",
	} {
		r := runRaw(t, "", "registry", "serve", "--override", "kafkastore.bootstrap.servers="+b.addr, "--override", key)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("registry serve --override %s: exit %d, stderr %q, want it refused naming %q", key, r.code, r.stderr, want)
		}
	}
	// A line the schema does not fit is refused, naming the schema.
	if msg := fails(t, b, "{\"id\":\"three\"}\n", "produce", "orders", "--value-schema-id", id, "--registry-url", url); !strings.Contains(msg, "schema "+id) {
		t.Errorf("a value that does not fit: %s", msg)
	}
}

// TestRegistryNodesElectOneLeader: two `vltava registry serve` nodes over
// one topic elect one leader in the schema-registry group; registrations
// sent to both at once get distinct ids (the follower forwards its writes
// to the leader), both nodes serve every schema by id, and once the first
// node stops the second leads and takes writes.
func TestRegistryNodesElectOneLeader(t *testing.T) {
	t.Parallel()
	b := startVltava(t)
	urlA, stopA := startStandaloneRegistry(t, b)
	urlB, _ := startStandaloneRegistry(t, b)
	register := func(url, subject, name string) (int, error) {
		body, _ := json.Marshal(map[string]string{"schema": `{"type":"record","name":"` + name + `","fields":[]}`})
		resp, err := http.Post(url+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var out struct {
			ID      int    `json:"id"`
			Message string `json:"message"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != http.StatusOK {
			return 0, errors.New(resp.Status + ": " + out.Message)
		}
		return out.ID, nil
	}
	const n = 20
	ids := make([]int, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		url := urlA
		if i%2 == 1 {
			url = urlB
		}
		wg.Go(func() { ids[i], errs[i] = register(url, "s"+strconv.Itoa(i)+"-value", "R"+strconv.Itoa(i)) })
	}
	wg.Wait()
	seen := map[int]int{}
	for i := range 2 * n {
		if errs[i] != nil {
			t.Fatalf("register s%d-value: %v", i, errs[i])
		}
		if j, dup := seen[ids[i]]; dup {
			t.Fatalf("s%d-value and s%d-value, different schemas, both got id %d", j, i, ids[i])
		}
		seen[ids[i]] = i
	}
	for _, url := range []string{urlA, urlB} {
		for id := range seen {
			poll.Until(t, 10*time.Second, "schema "+strconv.Itoa(id)+" at "+url, func() error {
				resp, err := http.Get(url + "/schemas/ids/" + strconv.Itoa(id))
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return errors.New(resp.Status)
				}
				return nil
			})
		}
	}
	// The first node goes (it leaves the group): the second leads.
	stopA()
	id, err := register(urlB, "after-value", "After")
	if err != nil {
		t.Fatalf("register through the remaining node: %v", err)
	}
	if _, dup := seen[id]; dup {
		t.Fatalf("the remaining node reused id %d", id)
	}
}
