package streamstest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestWordCountRebalance runs examples/wordcount under exactly_once_v2 as
// two instances, then adds a third and stops the first. After each step
// the tasks (and their stores) have moved, interactive queries sent to
// any instance find every word's count on its new owner (following the
// redirect), and the output topic's final counts equal a direct count of
// the input: nothing lost or counted twice across the moves.
func TestWordCountRebalance(t *testing.T) {
	addr := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("streams-plaintext-input"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 6, 1, nil, "streams-plaintext-input", "streams-wordcount-output"); err != nil {
		t.Fatal(err)
	}
	bin := build(t, "./examples/wordcount")
	type inst struct {
		p      *proc
		server string
	}
	launch := func(name string) inst {
		server := freeport.Addr(t)
		return inst{server: server, p: start(t, name, bin, "--bootstrap-server", addr, "--processing-guarantee", "exactly_once_v2",
			"--state-dir", t.TempDir(), "--application-server", server, "--commit-interval-ms", "100")}
	}
	a, b := launch("instance-a"), launch("instance-b")

	rng := rand.New(rand.NewSource(3))
	vocab := make([]string, 60)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%02d", i)
	}
	want := map[string]int64{}
	produce := func(lines int) {
		t.Helper()
		var rs []*kgo.Record
		for i := 0; i < lines; i++ {
			n := 1 + rng.Intn(6)
			ws := make([]string, n)
			for j := range ws {
				ws[j] = vocab[rng.Intn(len(vocab))]
				want[ws[j]]++
			}
			rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(rng.Intn(1000))), Value: []byte(strings.Join(ws, " "))})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("streams-wordcount-output"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]int64{}
	outputMatches := func(step string) {
		t.Helper()
		poll.Until(t, 3*time.Minute, step+": output counts equal the direct count", func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := out.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value)) })
			for w, n := range want {
				if got[w] != n {
					return fmt.Errorf("%s: %d, want %d", w, got[w], n)
				}
			}
			if len(got) != len(want) {
				return fmt.Errorf("%d words, want %d", len(got), len(want))
			}
			return nil
		})
	}
	httpc := &http.Client{Timeout: 5 * time.Second}
	getJSON := func(url string, v any) error {
		resp, err := httpc.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s %s", url, resp.Status, body)
		}
		return json.Unmarshal(body, v)
	}
	// queriesMatch asks via the entry instance for every word and checks
	// the counts; it returns the owner of each word.
	queriesMatch := func(step string, entry inst, live ...inst) map[string]string {
		t.Helper()
		owners := map[string]string{}
		poll.Until(t, 2*time.Minute, step+": interactive queries", func() error {
			for w, n := range want {
				var kv struct {
					Key   string `json:"key"`
					Value int64  `json:"value"`
				}
				if err := getJSON("http://"+entry.server+"/stores/counts/keys/"+w, &kv); err != nil {
					return err
				}
				if kv.Value != n {
					return fmt.Errorf("query %s: %d, want %d", w, kv.Value, n)
				}
				var md struct {
					ActiveHost string `json:"active_host"`
				}
				if err := getJSON("http://"+entry.server+"/stores/counts/metadata/"+w, &md); err != nil {
					return err
				}
				ok := false
				for _, l := range live {
					ok = ok || md.ActiveHost == l.server
				}
				if !ok {
					return fmt.Errorf("%s held by %q, not a live instance", w, md.ActiveHost)
				}
				owners[w] = md.ActiveHost
			}
			return nil
		})
		return owners
	}
	hosts := func(owners map[string]string) map[string]int {
		m := map[string]int{}
		for _, h := range owners {
			m[h]++
		}
		return m
	}

	produce(2000)
	outputMatches("two instances")
	o := queriesMatch("two instances", a, a, b)
	t.Logf("two instances: words per owner %v", hosts(o))

	c := launch("instance-c")
	// The third member gets tasks: some word moves to it.
	poll.Until(t, 2*time.Minute, "instance-c owns tasks", func() error {
		var md struct {
			ActiveHost string `json:"active_host"`
		}
		for _, w := range vocab {
			if err := getJSON("http://"+c.server+"/stores/counts/metadata/"+w, &md); err == nil && md.ActiveHost == c.server {
				return nil
			}
		}
		return fmt.Errorf("no word owned by instance-c yet")
	})
	produce(2000)
	outputMatches("three instances")
	o = queriesMatch("three instances", c, a, b, c)
	if hosts(o)[c.server] == 0 {
		t.Errorf("after instance-c joined no word is held by it: %v", hosts(o))
	}
	t.Logf("three instances: words per owner %v", hosts(o))

	if err := a.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.p.cmd.Wait(); err != nil {
		t.Errorf("instance-a after SIGTERM: %v\n%s", err, a.p.out.String())
	}
	produce(2000)
	outputMatches("instance-a gone")
	o = queriesMatch("instance-a gone", b, b, c)
	t.Logf("instance-a gone: words per owner %v", hosts(o))

	// /all and /range read each instance's local tasks: together the two
	// instances hold every word once.
	type kv struct {
		Key   string `json:"key"`
		Value int64  `json:"value"`
	}
	union := func(path string) (map[string]int64, error) {
		m := map[string]int64{}
		for _, in := range []inst{b, c} {
			var kvs []kv
			if err := getJSON("http://"+in.server+"/stores/counts/"+path, &kvs); err != nil {
				return nil, err
			}
			for _, e := range kvs {
				if _, dup := m[e.Key]; dup {
					return nil, fmt.Errorf("%s held by both instances", e.Key)
				}
				m[e.Key] = e.Value
			}
		}
		return m, nil
	}
	all, err := union("all")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Errorf("/all: %d words across the instances, want %d", len(all), len(want))
	}
	for w, n := range want {
		if all[w] != n {
			t.Errorf("/all: %s = %d, want %d", w, all[w], n)
		}
	}
	rng10, err := union("range?from=w00&to=w09")
	if err != nil {
		t.Fatal(err)
	}
	if len(rng10) != 10 || rng10["w00"] != want["w00"] || rng10["w09"] != want["w09"] {
		t.Errorf("/range w00..w09: %v", rng10)
	}
	var total int64
	for _, n := range want {
		total += n
	}
	t.Logf("%d words counted across two moves", total)
}
