package console_test

// The console's pages against a real node started in-process: the test
// creates topics, records and a group's commits with franz-go, then reads
// each page as a browser would (httptest, the console's own handler) and
// checks what the HTML says.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/console"
	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/node"
	"github.com/vltava/vltava/internal/testing/poll"
)

// startNode starts a single node on loopback ports with no HTTP services
// of its own, and returns its PLAINTEXT address.
func startNode(t *testing.T, props map[string]string) (*node.Node, string) {
	t.Helper()
	all := map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"node.id":                          "1",
		"auto.create.topics.enable":        "false",
		"admin.listeners":                  "",
		"rest.listeners":                   "",
		"schema.registry.listeners":        "",
		"console.listeners":                "",
		"group.initial.rebalance.delay.ms": "0",
	}
	for k, v := range props {
		all[k] = v
	}
	cfg, _, err := config.ParseBroker(all)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("starting node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n, n.Addrs()["PLAINTEXT"].String()
}

// site is a console over a node, served by httptest.
type site struct {
	t    *testing.T
	srv  *httptest.Server
	adm  *kadm.Client
	kcl  *kgo.Client
	addr string
}

func newSite(t *testing.T, readOnly bool) *site {
	t.Helper()
	_, addr := startNode(t, nil)
	c, err := console.New(console.Config{Bootstrap: []string{addr}, ReadOnly: readOnly,
		HTTP: httpapi.Options{Service: "console"}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	kcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kcl.Close)
	return &site{t: t, srv: srv, adm: kadm.NewClient(kcl), kcl: kcl, addr: addr}
}

// get fetches path and returns the status and body.
func (s *site) get(path string) (int, string) {
	s.t.Helper()
	resp, err := http.Get(s.srv.URL + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post submits a form without following the redirect.
func (s *site) post(path string, form url.Values, header ...string) (*http.Response, string) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (s *site) createTopic(name string, partitions int32, configs map[string]*string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.adm.CreateTopic(ctx, partitions, 1, configs, name); err != nil {
		s.t.Fatalf("create %s: %v", name, err)
	}
}

func (s *site) produce(recs ...*kgo.Record) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.kcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		s.t.Fatalf("produce: %v", err)
	}
}

func mustContain(t *testing.T, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", body)
	}
}

// cell is the text of the element with data-col=col in the row tagged
// rowAttr="rowVal".
func cell(t *testing.T, body, rowAttr, rowVal, col string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr ` + regexp.QuoteMeta(rowAttr+`="`+rowVal+`"`) + `[^>]*>(.*?)</tr>`).FindStringSubmatch(body)
	if row == nil {
		t.Fatalf("no row %s=%q in:\n%s", rowAttr, rowVal, body)
	}
	m := regexp.MustCompile(`(?s)data-col="` + col + `"[^>]*>(.*?)</td>`).FindStringSubmatch(row[1])
	if m == nil {
		t.Fatalf("row %s=%q has no %s: %s", rowAttr, rowVal, col, row[1])
	}
	return strings.TrimSpace(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], ""))
}

func TestOverviewShowsClusterAndBrokers(t *testing.T) {
	s := newSite(t, false)
	s.createTopic("orders", 3, nil)
	ctx := context.Background()
	md, err := s.adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	status, body := s.get("/")
	if status != http.StatusOK {
		t.Fatalf("GET /: %d", status)
	}
	mustContain(t, body, md.Cluster, s.addr, `id="controller">broker 1<`, `id="topics">1<`, `id="partitions">`, `id="under-replicated">0<`, `id="offline">0<`)
}

func TestTopicsSearchSortAndPage(t *testing.T) {
	s := newSite(t, false)
	s.createTopic("alpha", 1, nil)
	s.createTopic("beta", 3, nil)
	s.createTopic("gamma", 2, nil)
	s.produce(&kgo.Record{Topic: "alpha", Value: make([]byte, 4000)})

	_, body := s.get("/topics?q=ET")
	mustContain(t, body, `data-topic="beta"`)
	if strings.Contains(body, `data-topic="alpha"`) || strings.Contains(body, `data-topic="gamma"`) {
		t.Errorf("search ET shows other topics:\n%s", body)
	}
	if got := cell(t, body, "data-topic", "beta", "partitions"); got != "3" {
		t.Errorf("beta partitions = %q, want 3", got)
	}

	_, body = s.get("/topics?sort=partitions&desc=1")
	order := regexp.MustCompile(`data-topic="(alpha|beta|gamma)"`).FindAllStringSubmatch(body, -1)
	var names []string
	for _, m := range order {
		names = append(names, m[1])
	}
	if strings.Join(names, ",") != "beta,gamma,alpha" {
		t.Errorf("sorted by partitions descending: %v, want beta,gamma,alpha", names)
	}

	_, body = s.get("/topics?q=a&sort=name&per=2&page=2")
	mustContain(t, body, `data-topic="gamma"`, "Page 2 of 2", `rel="prev"`)
	if strings.Contains(body, `data-topic="alpha"`) {
		t.Errorf("page 2 of 2 shows alpha")
	}

	_, body = s.get("/topics?q=alpha")
	if size := cell(t, body, "data-topic", "alpha", "size"); size == "0 B" || size == "–" {
		t.Errorf("alpha's size after a 4000-byte record = %q", size)
	}
}

func TestCreateAndDeleteTopicFromTheForm(t *testing.T) {
	s := newSite(t, false)
	resp, body := s.post("/topics", url.Values{"name": {"made-here"}, "partitions": {"4"}, "replication_factor": {"1"},
		"configs": {"retention.ms=3600000\ncleanup.policy=compact"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/topics/made-here" {
		t.Fatalf("create: %d %s\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	ctx := context.Background()
	td, err := s.adm.ListTopics(ctx, "made-here")
	if err != nil || len(td["made-here"].Partitions) != 4 {
		t.Fatalf("made-here after create: %v %+v", err, td)
	}
	rc, err := s.adm.DescribeTopicConfigs(ctx, "made-here")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := rc.On("made-here", nil)
	for _, c := range cfg.Configs {
		if c.Key == "retention.ms" && (c.Value == nil || *c.Value != "3600000") {
			t.Errorf("retention.ms = %v", c.Value)
		}
	}

	_, page := s.get("/topics/made-here")
	mustContain(t, page, `id="partition-count">4<`)

	// Kafka's error name and a hint when the broker refuses.
	resp, body = s.post("/topics", url.Values{"name": {"made-here"}, "partitions": {"1"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("duplicate create: %d", resp.StatusCode)
	}
	mustContain(t, body, "TOPIC_ALREADY_EXISTS", `id="hint"`, `value="made-here"`)
	_, body = s.post("/topics", url.Values{"name": {"bad-config"}, "partitions": {"1"}, "configs": {"no.such.config=1"}})
	mustContain(t, body, "INVALID_CONFIG")
	_, body = s.post("/topics", url.Values{"name": {"bad-partitions"}, "partitions": {"zero"}})
	mustContain(t, body, "Partitions is a whole number")

	resp, body = s.post("/topics/made-here/delete", url.Values{"confirm": {"made-her"}})
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("delete with a wrong confirmation: %d, want 400", resp.StatusCode)
	}
	mustContain(t, body, "Type the topic")
	resp, _ = s.post("/topics/made-here/delete", url.Values{"confirm": {"made-here"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	poll.Until(t, 10*time.Second, "made-here deleted", func() error {
		td, err := s.adm.ListTopics(ctx, "made-here")
		if err == nil && td["made-here"].Err == nil {
			return fmt.Errorf("made-here still exists: %+v", td["made-here"])
		}
		return nil
	})
	// A form posted from another site is refused.
	resp, _ = s.post("/topics", url.Values{"name": {"from-elsewhere"}}, "Origin", "http://attacker.example")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site create: %d, want 403", resp.StatusCode)
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	s := newSite(t, true)
	s.createTopic("kept", 1, nil)
	_, body := s.get("/topics")
	if strings.Contains(body, `id="create-form"`) {
		t.Errorf("read-only topics page offers the create form")
	}
	mustContain(t, body, "read-only")
	resp, body := s.post("/topics", url.Values{"name": {"refused"}, "partitions": {"1"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only create: %d, want 403", resp.StatusCode)
	}
	mustContain(t, body, "console.read.only=true")
	resp, _ = s.post("/topics/kept/delete", url.Values{"confirm": {"kept"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only delete: %d, want 403", resp.StatusCode)
	}
	td, err := s.adm.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td["refused"]; ok {
		t.Errorf("read-only console created a topic")
	}
	if _, ok := td["kept"]; !ok {
		t.Errorf("read-only console deleted a topic")
	}
}

func TestTopicPageShowsPartitionsOffsetsAndConfigSources(t *testing.T) {
	s := newSite(t, false)
	ret := "7200000"
	s.createTopic("events", 2, map[string]*string{"retention.ms": &ret})
	for i := range 5 {
		s.produce(&kgo.Record{Topic: "events", Partition: 1, Value: []byte(fmt.Sprint(i))})
	}
	status, body := s.get("/topics/events")
	if status != http.StatusOK {
		t.Fatalf("%d\n%s", status, body)
	}
	mustContain(t, body, `id="partition-count">2<`)
	if got := cell(t, body, "data-partition", "1", "end"); got != "5" {
		t.Errorf("partition 1 end = %q, want 5", got)
	}
	if got := cell(t, body, "data-partition", "0", "end"); got != "0" {
		t.Errorf("partition 0 end = %q, want 0", got)
	}
	if got := cell(t, body, "data-partition", "1", "leader"); got != "1" {
		t.Errorf("partition 1 leader = %q", got)
	}
	if got := cell(t, body, "data-partition", "1", "isr"); got != "1" {
		t.Errorf("partition 1 ISR = %q", got)
	}
	row := regexp.MustCompile(`(?s)<tr data-config="retention.ms"[^>]*>.*?</tr>`).FindString(body)
	if !strings.Contains(row, "7200000") || !strings.Contains(row, "DYNAMIC_TOPIC_CONFIG") {
		t.Errorf("retention.ms row: %s", row)
	}
	row = regexp.MustCompile(`(?s)<tr data-config="segment.bytes"[^>]*>.*?</tr>`).FindString(body)
	if !strings.Contains(row, "DEFAULT_CONFIG") {
		t.Errorf("segment.bytes row: %s", row)
	}
	status, _ = s.get("/topics/no-such-topic")
	if status != http.StatusNotFound {
		t.Errorf("unknown topic: %d, want 404", status)
	}
}

func TestMessagesByOffsetAndTime(t *testing.T) {
	s := newSite(t, false)
	s.createTopic("log", 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 10 {
		s.produce(&kgo.Record{Topic: "log", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("value <%d>", i)),
			Timestamp: base.Add(time.Duration(i) * time.Minute), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{0xff, 0x00}}}})
	}
	s.produce(&kgo.Record{Topic: "log", Key: nil, Value: []byte{0xde, 0xad, 0xbe, 0xef}, Timestamp: base.Add(10 * time.Minute)})

	_, body := s.get("/topics/log/messages?partition=0&offset=3&limit=2")
	if got := cell(t, body, "data-offset", "3", "key"); got != "k3" {
		t.Errorf("offset 3 key = %q", got)
	}
	if got := cell(t, body, "data-offset", "4", "value"); got != "value &lt;4&gt;" {
		t.Errorf("offset 4 value = %q", got)
	}
	if got := cell(t, body, "data-offset", "4", "headers"); got != "h: hex ff00" {
		t.Errorf("offset 4 headers = %q", got)
	}
	if strings.Contains(body, `data-offset="5"`) || strings.Contains(body, `data-offset="2"`) {
		t.Errorf("limit=2 from 3 shows other offsets")
	}
	mustContain(t, body, `offset=5`, `offset=1`) // the next and previous windows

	_, body = s.get("/topics/log/messages?partition=0&offset=10")
	if got := cell(t, body, "data-offset", "10", "value"); got != "hex deadbeef" {
		t.Errorf("offset 10 value = %q", got)
	}
	if got := cell(t, body, "data-offset", "10", "key"); got != "null" {
		t.Errorf("offset 10 key = %q", got)
	}

	// ListOffsets by time: the first record at or after 6 minutes in.
	at := base.Add(6*time.Minute - 30*time.Second).UTC().Format(time.RFC3339Nano)
	_, body = s.get("/topics/log/messages?partition=0&limit=1&time=" + url.QueryEscape(at))
	mustContain(t, body, `id="time-offset">6<`)
	if got := cell(t, body, "data-offset", "6", "key"); got != "k6" {
		t.Errorf("time jump: key %q at offset 6", got)
	}

	_, body = s.get("/topics/log/messages?partition=0&offset=50")
	mustContain(t, body, "past the end")
	status, _ := s.get("/topics/log/messages?partition=9")
	if status != http.StatusNotFound {
		t.Errorf("partition 9: %d, want 404", status)
	}
}

func TestGroupsShowStateAndLag(t *testing.T) {
	s := newSite(t, false)
	s.createTopic("work", 2, nil)
	for i := range 7 {
		s.produce(&kgo.Record{Topic: "work", Partition: int32(i % 2), Value: []byte("x")})
	}
	// Partition 0 holds offsets 0..3, partition 1 0..2; the group
	// committed 1 and 2: lag 3 and 1.
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "work", Partition: 0, At: 1, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: "work", Partition: 1, At: 2, LeaderEpoch: -1})
	if err := s.adm.CommitAllOffsets(context.Background(), "billing", offsets); err != nil {
		t.Fatal(err)
	}
	_, body := s.get("/groups")
	mustContain(t, body, `data-group="billing"`)
	if got := cell(t, body, "data-group", "billing", "state"); got != "Empty" {
		t.Errorf("billing state = %q, want Empty", got)
	}
	_, body = s.get("/groups/billing")
	mustContain(t, body, `id="total-lag">4<`)
	lags := regexp.MustCompile(`(?s)<tr data-topic="work" data-partition="(\d)">.*?data-col="lag">(\d+)<`).FindAllStringSubmatch(body, -1)
	got := map[string]string{}
	for _, m := range lags {
		got[m[1]] = m[2]
	}
	if got["0"] != "3" || got["1"] != "1" {
		t.Errorf("lag per partition = %v, want 0:3 1:1\n%s", got, body)
	}
}

func TestNodeServesTheConsole(t *testing.T) {
	n, _ := startNode(t, map[string]string{"console.listeners": "http://127.0.0.1:0"})
	addrs := n.ConsoleAddrs()
	if len(addrs) != 1 {
		t.Fatalf("console addrs: %v", addrs)
	}
	resp, err := http.Get("http://" + addrs[0] + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Overview") {
		t.Fatalf("GET /: %d\n%s", resp.StatusCode, b)
	}
	resp, err = http.Get("http://" + addrs[0] + "/static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "prefers-color-scheme: dark") {
		t.Fatalf("GET /static/console.css: %d", resp.StatusCode)
	}
}

func TestUnsupportedConsoleKeysAreRefused(t *testing.T) {
	for _, props := range []map[string]string{
		{"console.listeners": "ftp://127.0.0.1:1"},
		{"console.ssl.provider": "SunJSSE"},
		{"console.authentication.method": "BEARER"},
	} {
		if _, _, err := config.ParseBroker(props); err == nil {
			t.Errorf("%v accepted", props)
		} else if k := keyOf(props); !strings.Contains(err.Error(), k) {
			t.Errorf("%v: the error does not name %s: %v", props, k, err)
		}
	}
}

func keyOf(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func TestNodeConsoleWithBasicAuthentication(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users.properties")
	if err := os.WriteFile(users, []byte("alice: secret,operator\nbob: pass,viewer\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ := startNode(t, map[string]string{
		"console.listeners":                 "http://127.0.0.1:0",
		"console.authentication.method":     "BASIC",
		"console.authentication.users.file": users,
		"console.authentication.roles":      "operator",
	})
	url := "http://" + n.ConsoleAddrs()[0] + "/topics"
	for _, c := range []struct {
		user, password string
		want           int
	}{
		{"", "", http.StatusUnauthorized},
		{"alice", "wrong", http.StatusUnauthorized},
		{"bob", "pass", http.StatusForbidden}, // not in console.authentication.roles
		{"alice", "secret", http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%q: %d, want %d", c.user, resp.StatusCode, c.want)
		}
	}
}
