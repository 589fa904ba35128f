package streamstest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
)

type click struct {
	User      string `json:"user"`
	URL       string `json:"url"`
	Timestamp int64  `json:"timestamp"`
}

// TestClickstreamExample runs examples/clickstream against a 3-node
// cluster on 100,000 generated clicks and checks its three outputs
// against a direct computation over the input. The records' own
// timestamps are the produce time: the windows follow the clicks'
// "timestamp" field, through the example's timestamp extractor.
func TestClickstreamExample(t *testing.T) {
	const numClicks = 100_000
	c := startCluster(t, 3)
	addr := c.bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("website_clicks"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 3, 3, nil, "website_clicks", "users", "clicks_per_user_per_minute", "clicks_per_url", "clicks_enriched"); err != nil {
		t.Fatal(err)
	}
	countries := []string{"CZ", "DE", "FR", "US"}
	var users []*kgo.Record
	for i := 0; i < 40; i++ {
		v, _ := json.Marshal(map[string]string{"country": countries[i%len(countries)]})
		users = append(users, &kgo.Record{Topic: "users", Key: []byte(fmt.Sprintf("u%d", i)), Value: v, Timestamp: time.UnixMilli(1)})
	}
	if err := cl.ProduceSync(ctx, users...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	start(t, "clickstream", build(t, "./examples/clickstream"),
		"--bootstrap-server", addr, "--exclude-user", "bot1,bot2", "--state-dir", t.TempDir(), "--commit-interval-ms", "200",
		"--replication-factor", "3")
	// The users table is loaded once its changelog holds every user.
	poll.Until(t, 90*time.Second, "users table loaded", func() error {
		offs, err := adm.ListEndOffsets(ctx, "clickstream-users-changelog")
		if err != nil {
			return err
		}
		var n int64
		offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
		if n < 40 {
			return fmt.Errorf("users changelog holds %d of 40", n)
		}
		return nil
	})

	rng := rand.New(rand.NewSource(1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	perURL := map[string]int64{}
	perUserMinute := map[string]int64{}
	kept := 0
	var batch []*kgo.Record
	ts := base
	for i := 0; i < numClicks; i++ {
		u := fmt.Sprintf("u%d", rng.Intn(45)) // u40-u44 are not in the users table
		if rng.Intn(10) == 0 {
			u = fmt.Sprintf("bot%d", 1+rng.Intn(2))
		}
		ts += int64(rng.Intn(40)) // increasing: no late records with no grace
		c := click{User: u, URL: fmt.Sprintf("/page/%d", rng.Intn(30)), Timestamp: ts}
		v, _ := json.Marshal(c)
		batch = append(batch, &kgo.Record{Key: []byte(u), Value: v})
		if u == "bot1" || u == "bot2" {
			continue
		}
		kept++
		perURL[c.URL]++
		perUserMinute[fmt.Sprintf("%s@%d", u, ts/60000*60000)]++
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("clicks_per_url", "clicks_per_user_per_minute", "clicks_enriched"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	gotURL, gotWin := map[string]int64{}, map[string]int64{}
	enriched, badCountry := 0, 0
	equal := func(a, b map[string]int64) bool {
		if len(a) != len(b) {
			return false
		}
		for k, v := range a {
			if b[k] != v {
				return false
			}
		}
		return true
	}
	poll.Until(t, 6*time.Minute, "outputs equal to the direct computation", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := out.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			switch r.Topic {
			case "clicks_per_url":
				gotURL[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
			case "clicks_per_user_per_minute":
				gotWin[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
			case "clicks_enriched":
				enriched++
				var e struct {
					User    string `json:"user"`
					Country string `json:"country"`
				}
				_ = json.Unmarshal(r.Value, &e)
				var idx int
				fmt.Sscanf(e.User, "u%d", &idx)
				want := ""
				if idx < 40 {
					want = countries[idx%len(countries)]
				}
				if e.Country != want {
					badCountry++
				}
			}
		})
		if !equal(gotURL, perURL) || !equal(gotWin, perUserMinute) || enriched < kept {
			return fmt.Errorf("clicks_per_url %d/%d keys equal=%v, per-minute %d/%d keys equal=%v, enriched %d/%d",
				len(gotURL), len(perURL), equal(gotURL, perURL), len(gotWin), len(perUserMinute), equal(gotWin, perUserMinute), enriched, kept)
		}
		return nil
	})
	if enriched != kept || badCountry != 0 {
		t.Errorf("clicks_enriched: %d records (want %d), %d with a wrong country", enriched, kept, badCountry)
	}
}
