// Package consoletest drives the web console in a real browser: Debian's
// headless Chromium through chromedp, against a vltava server (and a
// standalone vltava console) started from the built binary on loopback.
// Each page is checked for what the test put in the cluster with franz-go,
// and a screenshot of it is written to $VLTAVA_ARTIFACTS (or a temporary
// directory) for review.
package consoletest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// chromiumPath is Debian's chromium package (scripts/install-test-deps.sh);
// $VLTAVA_CHROMIUM overrides it.
func chromiumPath(t *testing.T) string {
	p := os.Getenv("VLTAVA_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("no Chromium at %s (install Debian's chromium: scripts/install-test-deps.sh): %v", p, err)
	}
	return p
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// vltava is the binary under test, built once; $VLTAVA_BIN overrides it.
func vltava(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("VLTAVA_BIN"); bin != "" {
		abs, _ := filepath.Abs(bin)
		return abs
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vltava-console-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "vltava")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/vltava")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// start runs the binary with args until the test ends (SIGTERM, then
// SIGKILL after 20 s); its output is logged if the test fails.
func start(t *testing.T, name string, args ...string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(vltava(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
}

// serving waits until url answers 200.
func serving(t *testing.T, url string) {
	t.Helper()
	poll.Until(t, 60*time.Second, url+" serving", func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// artifacts is where screenshots go.
func artifacts(t *testing.T) string {
	dir := os.Getenv("VLTAVA_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // the tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting Chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, dir: artifacts(t)}
}

// run runs steps, failing the test with what was tried.
func (b *browser) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action and returns its value.
func value[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

// open loads url and waits for sel.
func (b *browser) open(url, sel string) {
	b.t.Helper()
	b.run("open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// text is the text of the first element matching sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(value(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// screenshot writes the whole page as name.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := value(b, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

func (b *browser) expect(what, got, want string) {
	b.t.Helper()
	if got != want {
		b.t.Errorf("%s: the page shows %q, want %q", what, got, want)
	}
}

// colorScheme emulates prefers-color-scheme (light, dark, or "" for the
// browser's own).
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		p := emulation.SetEmulatedMediaParams{}
		if scheme != "" {
			p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
		}
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, p)
		return err
	})
}

func TestConsoleInTheBrowser(t *testing.T) {
	broker, consoleAddr := freeport.Addr(t), freeport.Addr(t)
	start(t, "vltava server", "server",
		"--override", "listeners=PLAINTEXT://"+broker,
		"--override", "log.dirs="+t.TempDir(),
		"--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=",
		"--override", "console.listeners=http://"+consoleAddr,
		"--override", "auto.create.topics.enable=false")
	site := "http://" + consoleAddr
	serving(t, site+"/")

	// The data the pages must show: a topic of 3 partitions, four records
	// in partition 1 (offsets 0..3), and a group that committed offset 1
	// there, so its lag is 3.
	kcl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	adm := kadm.NewClient(kcl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "browser-orders"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		r := &kgo.Record{Topic: "browser-orders", Partition: 1, Key: []byte(fmt.Sprintf("order-%d", i)),
			Value: []byte(fmt.Sprintf(`{"order":%d,"total":%d}`, i, 10*i+7))}
		if err := kcl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "browser-orders", Partition: 1, At: 1, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "browser-billing", commit); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)

	b.open(site+"/", "#cluster-id")
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.expect("cluster id", b.text("#cluster-id"), md.Cluster)
	b.expect("topics", b.text("#topics"), "1")
	b.expect("controller", b.text("#controller"), "broker 1")
	b.expect("broker", b.text("#broker-table tbody td.mono"), broker)
	b.expect("offline", b.text("#offline"), "0")
	b.screenshot("overview")

	// The dark theme: the same page with prefers-color-scheme: dark has
	// another background, and its screenshot is kept with the others.
	bg := `getComputedStyle(document.body).backgroundColor`
	light := value(b, "light background", chromedp.Evaluate[string](bg))
	b.run("prefer the dark theme", colorScheme("dark"))
	if dark := value(b, "dark background", chromedp.Evaluate[string](bg)); dark == light {
		t.Errorf("the dark theme has the light theme's background %s", light)
	}
	b.screenshot("overview-dark")
	b.run("back to the light theme", colorScheme(""))

	// The keyboard alone: the first Tab reaches "Skip to content", three
	// more the Topics link, Enter follows it; the search takes typing and
	// Enter, and its query lands in the URL.
	b.run("tab to the skip link", chromedp.KeyEvent(kb.Tab))
	b.expect("first focus", value(b, "focused element", chromedp.Evaluate[string](`document.activeElement.textContent`)), "Skip to content")
	b.run("tab to Topics and press Enter", chromedp.KeyEvent(kb.Tab+kb.Tab+kb.Tab), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS("#topic-table")))
	// (The value attribute is the server's: typing sets only the
	// property, so this waits for the search's own page.)
	b.run("search with the keyboard", chromedp.Focus(chromedp.CSS("#q")), chromedp.KeyEvent("browser"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`#q[value="browser"]`)), chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="browser-orders"]`)))
	if loc := value(b, "location", chromedp.Location()); !strings.HasSuffix(loc, "/topics?q=browser&sort=name") {
		t.Errorf("the keyboard search landed on %s", loc)
	}

	b.open(site+"/topics?q=browser", `tr[data-topic="browser-orders"]`)
	b.expect("partitions of browser-orders", b.text(`tr[data-topic="browser-orders"] [data-col="partitions"]`), "3")
	b.expect("replication of browser-orders", b.text(`tr[data-topic="browser-orders"] [data-col="replication"]`), "1")
	b.screenshot("topics")

	b.run("follow the topic link", chromedp.Click(chromedp.CSS(`tr[data-topic="browser-orders"] a`)), chromedp.WaitVisible(chromedp.CSS("#partition-count")))
	b.expect("topic name", b.text("#topic-name"), "browser-orders")
	b.expect("partition count", b.text("#partition-count"), "3")
	b.expect("partition 1 end offset", b.text(`tr[data-partition="1"] [data-col="end"]`), "4")
	b.screenshot("topic")

	b.open(site+"/topics/browser-orders/messages?partition=1&offset=3", `tr[data-offset="3"]`)
	b.expect("key at offset 3", b.text(`tr[data-offset="3"] [data-col="key"]`), "order-3")
	b.expect("value at offset 3", b.text(`tr[data-offset="3"] [data-col="value"]`), `{"order":3,"total":37}`)
	b.screenshot("messages")

	b.open(site+"/groups", `tr[data-group="browser-billing"]`)
	b.expect("group state", b.text(`tr[data-group="browser-billing"] [data-col="state"]`), "Empty")
	b.screenshot("groups")

	b.run("follow the group link", chromedp.Click(chromedp.CSS(`tr[data-group="browser-billing"] a`)), chromedp.WaitVisible(chromedp.CSS("#total-lag")))
	b.expect("lag of partition 1", b.text(`#lag-table tr[data-partition="1"] [data-col="lag"]`), "3")
	b.expect("total lag", b.text("#total-lag"), "3")
	b.screenshot("group")

	// Create a topic from the form, as a user would: open the form, type,
	// submit; the console lands on the new topic's page.
	b.open(site+"/topics", "#create summary")
	b.run("fill the create form",
		chromedp.Click(chromedp.CSS("#create summary")),
		chromedp.WaitVisible(chromedp.CSS("#create-name")),
		chromedp.SendKeys(chromedp.CSS("#create-name"), "from-the-form"),
		chromedp.SetValue(chromedp.CSS("#create-partitions"), "5"),
		chromedp.SetValue(chromedp.CSS("#create-rf"), "1"),
		chromedp.SetValue(chromedp.CSS("#create-configs"), "retention.ms=3600000"),
	)
	b.screenshot("topic-create-form")
	b.run("submit the create form", chromedp.Click(chromedp.CSS("#create-submit")), chromedp.WaitVisible(chromedp.CSS("#topic-name")))
	b.expect("created topic's page", b.text("#topic-name"), "from-the-form")
	td, err := adm.ListTopics(ctx, "from-the-form")
	if err != nil || td["from-the-form"].Err != nil || len(td["from-the-form"].Partitions) != 5 {
		t.Errorf("from-the-form after the form: %v %+v", err, td["from-the-form"])
	}
	// And librdkafka sees it as the form made it.
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat not found (%v): run scripts/install-test-deps.sh", err)
	}
	if out, err := exec.Command(kcat, "-L", "-b", broker, "-t", "from-the-form").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), `topic "from-the-form" with 5 partitions:`) {
		t.Errorf("kcat -L -t from-the-form: %v\n%s", err, out)
	}

	// The same form again: Kafka's error name and a hint.
	b.open(site+"/topics", "#create summary")
	b.run("create it twice",
		chromedp.Click(chromedp.CSS("#create summary")),
		chromedp.SendKeys(chromedp.CSS("#create-name"), "from-the-form"),
		chromedp.Click(chromedp.CSS("#create-submit")),
		chromedp.WaitVisible(chromedp.CSS("#kafka-error")))
	b.expect("error name", b.text("#kafka-error"), "TOPIC_ALREADY_EXISTS")
	b.screenshot("topic-create-refused")

	// Delete it from its page, typing its name to confirm.
	b.open(site+"/topics/from-the-form", "#delete-form")
	b.run("delete from the form",
		chromedp.SendKeys(chromedp.CSS("#delete-confirm"), "from-the-form"),
		chromedp.Click(chromedp.CSS("#delete-submit")),
		chromedp.WaitVisible(chromedp.CSS("#deleted")))
	b.screenshot("topic-deleted")
	poll.Until(t, 30*time.Second, "from-the-form deleted", func() error {
		td, err := adm.ListTopics(ctx, "from-the-form")
		if err == nil && td["from-the-form"].Err == nil {
			return fmt.Errorf("from-the-form still exists")
		}
		return nil
	})

	// A standalone read-only console against the same broker: no form,
	// and the form's POST is refused with 403.
	roAddr := freeport.Addr(t)
	start(t, "vltava console", "console", "--bootstrap-server", broker, "--listeners", "http://"+roAddr, "--read-only")
	ro := "http://" + roAddr
	serving(t, ro+"/")
	b.open(ro+"/topics", "#topic-table")
	forms := value(b, "count create forms", chromedp.Evaluate[int](`document.querySelectorAll("#create-form").length`))
	if forms != 0 {
		t.Errorf("the read-only console shows the create form")
	}
	b.expect("read-only badge", b.text(".ro"), "read-only")
	b.screenshot("topics-read-only")
	status := value(b, "POST the create form to the read-only console", chromedp.Evaluate[int](
		`fetch("/topics", {method: "POST", body: new URLSearchParams({name: "read-only-topic", partitions: "1"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if status != http.StatusForbidden {
		t.Errorf("read-only POST /topics: %d, want 403", status)
	}
	td, err = adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td["read-only-topic"]; ok {
		t.Errorf("the read-only console created a topic")
	}
}
