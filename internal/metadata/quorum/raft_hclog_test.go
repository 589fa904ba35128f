package quorum

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestRaftLoggerAdaptsToSlog(t *testing.T) {
	tests := []struct {
		name  string
		floor hclog.Level
		log   func(hclog.Logger)
		want  string // substring of the output; "" means nothing logged
	}{
		{"info passes through", hclog.NoLevel, func(l hclog.Logger) { l.Info("election won", "term", 3) },
			`level=INFO msg="election won" component=raft term=3`},
		{"warn keeps its level", hclog.NoLevel, func(l hclog.Logger) { l.Warn("failed to contact") }, `level=WARN`},
		{"error keeps its level", hclog.NoLevel, func(l hclog.Logger) { l.Error("boom") }, `level=ERROR`},
		{"debug is below the handler's info level", hclog.NoLevel, func(l hclog.Logger) { l.Debug("chatty") }, ""},
		{"floor drops info", hclog.Warn, func(l hclog.Logger) { l.Info("election won") }, ""},
		{"named and implied args", hclog.NoLevel, func(l hclog.Logger) { l.Named("snapshot").With("id", "x").Info("done") },
			`component=raft.snapshot id=x`},
		{"hclog.Fmt values are rendered", hclog.NoLevel, func(l hclog.Logger) { l.Info("cfg", "servers", hclog.Fmt("%d voters", 3)) },
			`servers="3 voters"`},
		{"standard logger level tags", hclog.NoLevel, func(l hclog.Logger) { l.StandardLogger(nil).Print("[WARN] pool full") },
			`level=WARN msg="pool full"`},
	}
	for _, tc := range tests {
		var buf bytes.Buffer
		base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
		tc.log(newRaftLogger(base, tc.floor))
		got := buf.String()
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: logged %q, want %q", tc.name, got, tc.want)
		}
	}
}
