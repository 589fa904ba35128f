package rest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/vltava/vltava/internal/logging"
)

// A cluster-wide level read from the config topic applies to its namespace
// and the namespace's descendants only, and records their last_modified.
func TestApplyClusterLevel(t *testing.T) {
	_, levels, err := logging.New(io.Discard, "text", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.b", "a.bc", "a.b.c", "x"} {
		if err := levels.Set(n, "INFO"); err != nil {
			t.Fatal(err)
		}
	}
	a := &API{levels: levels, loggerTimes: map[string]int64{}}
	a.applyClusterLevel("a.b", "WARN")
	for n, want := range map[string]string{"a.b": "WARN", "a.b.c": "WARN", "a.bc": "INFO", "x": "INFO", logging.RootLogger: "INFO"} {
		lj := a.levelOf(n)
		if lj.Level != want || (lj.LastModified != nil) != (want == "WARN") {
			t.Errorf("%s: %+v, want %s", n, lj, want)
		}
	}
	a.applyClusterLevel(logging.RootLogger, "ERROR")
	for _, n := range levels.Names() {
		if got := a.levelOf(n).Level; got != "ERROR" {
			t.Errorf("%s after root: %s", n, got)
		}
	}
	a.applyClusterLevel("a.b", "LOUD") // a malformed record changes nothing
	if got := a.levelOf("a.b").Level; got != "ERROR" {
		t.Errorf("after an invalid level: %s", got)
	}
}
