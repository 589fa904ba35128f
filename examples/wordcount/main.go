// Command wordcount is the word-count example of the streams package, as
// Kafka Streams' WordCountDemo: it splits the lines of
// streams-plaintext-input into lower-case words and writes the running
// count per word (8-byte big-endian, as Kafka's LongSerializer) to
// streams-wordcount-output.
//
// With --application-server host:port it also serves the counts store
// over HTTP (interactive queries) on that address:
//
//	curl -L http://host:port/stores/counts/keys/kafka
//
// redirects to the instance holding the word.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/vltava/vltava/streams"
)

var nonWord = regexp.MustCompile(`\W+`)

func topology(input, output string) (*streams.Topology, error) {
	b := streams.NewBuilder()
	lines := streams.NewStream(b, input, streams.String(), streams.String())
	words := streams.FlatMapValues(lines, func(_, line string) []string {
		var out []string
		for _, w := range nonWord.Split(strings.ToLower(line), -1) {
			if w != "" {
				out = append(out, w)
			}
		}
		return out
	})
	streams.GroupBy(words, func(_, word string) string { return word }).
		Count(streams.Materialized("counts")).
		ToStream().To(output)
	return b.Build()
}

func main() {
	bootstrap := flag.String("bootstrap-server", "127.0.0.1:9092", "Kafka bootstrap servers")
	appID := flag.String("application-id", "streams-wordcount", "application.id")
	input := flag.String("input", "streams-plaintext-input", "input topic")
	output := flag.String("output", "streams-wordcount-output", "output topic")
	guarantee := flag.String("processing-guarantee", streams.AtLeastOnce, "processing.guarantee")
	stateDir := flag.String("state-dir", "", "state.dir (default: the temp dir)")
	server := flag.String("application-server", "", "host:port to serve interactive queries on (application.server)")
	commit := flag.Int("commit-interval-ms", -1, "commit.interval.ms (default: Kafka Streams')")
	flag.Parse()

	topo, err := topology(*input, *output)
	if err != nil {
		fail(err)
	}
	props := map[string]string{"application.id": *appID, "bootstrap.servers": *bootstrap, "processing.guarantee": *guarantee}
	if *stateDir != "" {
		props["state.dir"] = *stateDir
	}
	if *server != "" {
		props["application.server"] = *server
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
	if *server != "" {
		ln, err := net.Listen("tcp", *server)
		if err != nil {
			fail(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/stores/counts/", http.StripPrefix("/stores/counts",
			streams.StoreHandler(app, "counts", streams.String(), streams.Int64(), func(s string) (string, error) { return s, nil })))
		srv := &http.Server{Handler: mux}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fail(err)
			}
		}()
		defer srv.Close()
	}
	if err := app.Start(ctx); err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "wordcount: running")
	go func() { <-ctx.Done(); _ = app.Close() }()
	if err := app.Wait(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wordcount:", err)
	os.Exit(1)
}
