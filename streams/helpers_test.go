package streams_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vltava/vltava/streams"
)

// driver builds the topology b and starts a test driver closed at cleanup.
func driver(t *testing.T, b *streams.Builder) *streams.TestDriver {
	t.Helper()
	topo, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	d, err := streams.NewTestDriver(topo, streams.TestDriverConfig{ApplicationID: "app"})
	if err != nil {
		t.Fatalf("NewTestDriver: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func pipe[K, V any](t *testing.T, in *streams.TestInputTopic[K, V], k K, v V, ts int64) {
	t.Helper()
	if err := in.PipeInput(k, v, ts); err != nil {
		t.Fatalf("PipeInput(%v, %v, %d): %v", k, v, ts, err)
	}
}

// read renders every unread record as "key=value@ts" ("key=<nil>@ts" for
// a tombstone).
func read[K, V any](t *testing.T, out *streams.TestOutputTopic[K, V]) []string {
	t.Helper()
	rs, err := out.ReadRecordsToList()
	if err != nil {
		t.Fatalf("reading output: %v", err)
	}
	var got []string
	for _, r := range rs {
		if r.IsNullValue {
			got = append(got, fmt.Sprintf("%v=<nil>@%d", r.Key, r.Timestamp))
		} else {
			got = append(got, fmt.Sprintf("%v=%v@%d", r.Key, r.Value, r.Timestamp))
		}
	}
	return got
}

func expect(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}
