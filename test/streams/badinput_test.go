package streamstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/streams"
)

// TestBadInput runs Apps against a broker: a missing source topic fails
// Start naming it; a record whose value does not deserialize is skipped
// and counted under LogAndContinueExceptionHandler, and stops the App in
// ERROR under LogAndFailExceptionHandler.
func TestBadInput(t *testing.T) {
	addr := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "nums", "nums-out"); err != nil {
		t.Fatal(err)
	}
	newApp := func(id, in, handler string) *streams.App {
		b := streams.NewBuilder()
		streams.NewStream(b, in, streams.String(), streams.Int64()).To(in + "-out")
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := streams.ParseConfig(map[string]string{"application.id": id, "bootstrap.servers": addr,
			"state.dir": t.TempDir(), "commit.interval.ms": "100", "default.deserialization.exception.handler": handler})
		if err != nil {
			t.Fatal(err)
		}
		a, err := streams.New(topo, cfg, streams.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}

	t.Run("missing source topic", func(t *testing.T) {
		a := newApp("bad-missing", "no-such-topic", "LogAndFailExceptionHandler")
		err := a.Start(ctx)
		if err == nil || !strings.Contains(err.Error(), "no-such-topic") || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("Start: %v, want an error naming the missing topic", err)
		}
		if a.State() != streams.StateError {
			t.Errorf("state %s, want ERROR", a.State())
		}
	})

	num := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	rs := []*kgo.Record{
		{Topic: "nums", Key: []byte("a"), Value: num(1)},
		{Topic: "nums", Key: []byte("b"), Value: []byte("not eight bytes")},
		{Topic: "nums", Key: []byte("c"), Value: num(3)},
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	t.Run("LogAndContinue", func(t *testing.T) {
		a := newApp("bad-continue", "nums", "LogAndContinueExceptionHandler")
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("nums-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		var got []string
		poll.Until(t, time.Minute, "the two good records out", func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := out.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%s=%d", r.Key, binary.BigEndian.Uint64(r.Value))) })
			if len(got) < 2 {
				return fmt.Errorf("got %v", got)
			}
			return nil
		})
		if strings.Join(got, " ") != "a=1 c=3" {
			t.Errorf("output %v, want a=1 c=3", got)
		}
		poll.True(t, 30*time.Second, "the bad record counted as skipped", func() bool {
			m := a.Metrics()
			return m.Skipped == 1 && m.Processed == 2
		})
		if a.State() != streams.StateRunning {
			t.Errorf("state %s, want RUNNING", a.State())
		}
	})

	t.Run("LogAndFail", func(t *testing.T) {
		a := newApp("bad-fail", "nums", "LogAndFailExceptionHandler")
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Wait() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "LogAndFail") || !strings.Contains(err.Error(), "nums-0@1") {
				t.Errorf("Wait: %v, want the LogAndFail error naming nums-0@1", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the App did not stop on the undecodable record")
		}
		if a.State() != streams.StateError {
			t.Errorf("state %s, want ERROR", a.State())
		}
	})
}
