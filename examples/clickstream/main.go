// Command clickstream is the website-clickstream example of the streams
// package: it reads JSON click events {"user","url","timestamp"} keyed by
// user from website_clicks (the event time is the click's "timestamp",
// in ms since the epoch, through a timestamp extractor), drops the users given by --exclude-user, and writes
//
//   - clicks_per_user_per_minute: per-user counts in 1-minute tumbling
//     windows, keyed "<user>@<window start ms>";
//   - clicks_per_url: the running count per URL;
//   - clicks_enriched: each click with the user's country, joined from the
//     users table topic (key user, value {"country"}).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vltava/vltava/streams"
)

// Click is an input event.
type Click struct {
	User      string `json:"user"`
	URL       string `json:"url"`
	Timestamp int64  `json:"timestamp"`
}

// User is a row of the users table.
type User struct {
	Country string `json:"country"`
}

// EnrichedClick is a click with the user's country ("" if unknown).
type EnrichedClick struct {
	Click
	Country string `json:"country"`
}

func topology(exclude map[string]bool) (*streams.Topology, error) {
	b := streams.NewBuilder()
	clickTime := func(r streams.ConsumedRecord, _ int64) (int64, error) {
		return r.Value.(Click).Timestamp, nil
	}
	clicks := streams.NewStream(b, "website_clicks", streams.String(), streams.JSON[Click](),
		streams.WithTimestampExtractor(clickTime)).
		FilterNot(func(user string, c Click) bool { return exclude[c.User] })

	perMinute := streams.WindowedBy(clicks.GroupByKey(), streams.TimeWindowsOfSizeWithNoGrace(time.Minute)).
		Count(streams.Materialized("clicks-per-user-per-minute"))
	streams.Map(perMinute.ToStream(), func(w streams.Windowed[string], n int64) (string, int64) {
		return fmt.Sprintf("%s@%d", w.Key, w.Window.Start), n
	}).To("clicks_per_user_per_minute")

	streams.GroupBy(clicks, func(_ string, c Click) string { return c.URL }, streams.Named("clicks-by-url")).
		Count(streams.Materialized("clicks-per-url")).
		ToStream().To("clicks_per_url")

	users := streams.NewTable(b, "users", streams.String(), streams.JSON[User](), streams.Materialized("users"))
	streams.LeftJoinTable(clicks, users, func(c Click, u *User) EnrichedClick {
		e := EnrichedClick{Click: c}
		if u != nil {
			e.Country = u.Country
		}
		return e
	}).To("clicks_enriched")
	return b.Build()
}

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func main() {
	bootstrap := flag.String("bootstrap-server", "127.0.0.1:9092", "Kafka bootstrap servers")
	appID := flag.String("application-id", "clickstream", "application.id")
	guarantee := flag.String("processing-guarantee", streams.AtLeastOnce, "processing.guarantee")
	stateDir := flag.String("state-dir", "", "state.dir (default: the temp dir)")
	commit := flag.Int("commit-interval-ms", -1, "commit.interval.ms (default: Kafka Streams')")
	rf := flag.Int("replication-factor", -1, "replication.factor of the changelog and repartition topics (-1: the broker's default)")
	var exclude listFlag
	flag.Var(&exclude, "exclude-user", "a bot user to drop (repeatable, or comma-separated)")
	flag.Parse()

	ex := map[string]bool{}
	for _, u := range exclude {
		ex[u] = true
	}
	topo, err := topology(ex)
	if err != nil {
		fail(err)
	}
	props := map[string]string{"application.id": *appID, "bootstrap.servers": *bootstrap, "processing.guarantee": *guarantee,
		"replication.factor": fmt.Sprint(*rf)}
	if *stateDir != "" {
		props["state.dir"] = *stateDir
	}
	if *commit >= 0 {
		props["commit.interval.ms"] = fmt.Sprint(*commit)
	}
	cfg, err := streams.ParseConfig(props)
	if err != nil {
		fail(err)
	}
	app, err := streams.New(topo, cfg, streams.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Start(ctx); err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "clickstream: running")
	go func() { <-ctx.Done(); _ = app.Close() }()
	if err := app.Wait(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "clickstream:", err)
	os.Exit(1)
}
