package streamstest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestExactlyOnceUnderFailure runs the clickstream example as two
// instances while one of them is SIGKILLed and restarted repeatedly. Under
// exactly_once_v2 the final per-URL counts (read committed) equal the
// direct computation exactly; under at_least_once they are at least it,
// and the test reports by how much they exceed it.
func TestExactlyOnceUnderFailure(t *testing.T) {
	for _, g := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(g, func(t *testing.T) { runFailure(t, g, false) })
	}
}

// TestExactlyOnceUnderBrokerFailure is the same against a 3-node cluster
// (every topic replicated 3 times) while a broker, a different one each
// time, is SIGKILLed and restarted: the instances ride out leader and
// coordinator moves, and exactly_once_v2 still counts every click once.
func TestExactlyOnceUnderBrokerFailure(t *testing.T) {
	runFailure(t, "exactly_once_v2", true)
}

func runFailure(t *testing.T, guarantee string, killBrokers bool) {
	const batches, perBatch, kills = 8, 1500, 3
	var c *cluster
	var addr string
	var seeds []string
	rf := 1
	if killBrokers {
		c = startCluster(t, 3)
		addr, seeds, rf = c.bootstrap(), c.seeds(), 3
	} else {
		addr = startBroker(t)
		seeds = []string{addr}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("website_clicks"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 4, int16(rf), nil, "website_clicks", "users", "clicks_per_user_per_minute", "clicks_per_url", "clicks_enriched"); err != nil {
		t.Fatal(err)
	}
	bin := build(t, "./examples/clickstream")
	args := func() []string {
		return []string{"--bootstrap-server", addr, "--processing-guarantee", guarantee, "--state-dir", t.TempDir(), "--commit-interval-ms", "100",
			"--replication-factor", fmt.Sprint(rf)}
	}
	victim := start(t, "instance-a", bin, args()...)
	other := start(t, "instance-b", bin, args()...)
	fencedB := false

	rng := rand.New(rand.NewSource(2))
	want := map[string]int64{}
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	killed := 0
	for b := 0; b < batches; b++ {
		var rs []*kgo.Record
		for i := 0; i < perBatch; i++ {
			u := fmt.Sprintf("u%d", rng.Intn(50))
			ts += int64(rng.Intn(20))
			c := click{User: u, URL: fmt.Sprintf("/p/%d", rng.Intn(20)), Timestamp: ts}
			v, _ := json.Marshal(c)
			rs = append(rs, &kgo.Record{Key: []byte(u), Value: v, Timestamp: time.UnixMilli(ts)})
			want[c.URL]++
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if b == 2 && guarantee == "exactly_once_v2" && !killBrokers {
			// Another producer takes instance-b's transactional ID over:
			// its next commit is fenced, and it must close its tasks and
			// rejoin with a new producer rather than die.
			poll.Until(t, 60*time.Second, "fencing instance-b's producer", func() error { return fenceMember(ctx, cl, adm, other) })
			fencedB = true
		}
		if b%2 == 1 && killed < kills {
			// Let the instance get going, then kill it mid-processing.
			poll.True(t, 60*time.Second, "instance processing", func() bool { return processedSome(ctx, adm) })
			if killBrokers {
				id := 1 + killed%3
				c.kill(id)
				// Records produced while the broker is down.
				more := 500
				var rs []*kgo.Record
				for i := 0; i < more; i++ {
					u := fmt.Sprintf("u%d", rng.Intn(50))
					ts += int64(rng.Intn(20))
					ck := click{User: u, URL: fmt.Sprintf("/p/%d", rng.Intn(20)), Timestamp: ts}
					v, _ := json.Marshal(ck)
					rs = append(rs, &kgo.Record{Key: []byte(u), Value: v, Timestamp: time.UnixMilli(ts)})
					want[ck.URL]++
				}
				if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
				c.restart(id)
				killed++
				continue
			}
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = victim.cmd.Wait()
			killed++
			victim = start(t, fmt.Sprintf("instance-a-%d", killed), bin, args()...)
		}
	}

	out, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("clicks_per_url"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]int64{}
	var excess int64
	poll.Until(t, 3*time.Minute, "final per-URL counts", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := out.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value)) })
		excess = 0
		for url, n := range want {
			if got[url] < n {
				return fmt.Errorf("%s: %d of %d", url, got[url], n)
			}
			excess += got[url] - n
		}
		return nil
	})
	var total int64
	for _, n := range want {
		total += n
	}
	if fencedB {
		if other.cmd.ProcessState != nil {
			t.Errorf("instance-b exited after its producer was fenced: %v", other.cmd.ProcessState)
		}
		if !strings.Contains(other.out.String(), "producer fenced") {
			t.Errorf("instance-b did not report the fence:\n%s", other.out.String())
		}
	}
	what := "instance"
	if killBrokers {
		what = "broker"
	}
	t.Logf("%s: %d clicks, %d %s kills; counts exceed the direct computation by %d", guarantee, total, killed, what, excess)
	if guarantee == "exactly_once_v2" && excess != 0 {
		t.Errorf("exactly_once_v2: counts exceed the direct computation by %d: %v vs %v", excess, got, want)
	}
}

// processedSome says the application committed some input offsets.
func processedSome(ctx context.Context, adm *kadm.Client) bool {
	offs, err := adm.FetchOffsets(ctx, "clickstream")
	if err != nil {
		return false
	}
	n := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { n += o.At })
	return n > 0
}

// fenceMember bumps the producer epoch of the stream thread of p's
// instance, found by its client ID (<application.id>-<process>-StreamThread-1)
// in the group: an InitProducerId for its transactional ID, as a new
// producer with that ID would send.
func fenceMember(ctx context.Context, cl *kgo.Client, adm *kadm.Client, p *proc) error {
	groups, err := adm.DescribeGroups(ctx, "clickstream")
	if err != nil {
		return err
	}
	// The instance's process ID is in its log line "streams starting".
	var txnID string
	for _, m := range groups["clickstream"].Members {
		proc, ok := strings.CutSuffix(strings.TrimPrefix(m.ClientID, "clickstream-"), "-StreamThread-1")
		if ok && strings.Contains(p.out.String(), proc) {
			txnID = "clickstream-" + proc + "-0"
		}
	}
	if txnID == "" {
		return fmt.Errorf("instance not in the group yet")
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = 10000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	return nil
}
