package quorum

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// raftLogger adapts hashicorp/raft's hclog interface to a *slog.Logger so
// raft's elections, snapshots and connection failures go to the node's one
// log with structured attributes. raft logs per event (election, snapshot,
// peer failure), not per entry, so Info is passed through as Info; Trace and
// Debug become slog Debug.
//
// Thread-safety: immutable after construction; safe for concurrent use (as
// slog.Logger is). SetLevel is honoured only as a floor below which calls are
// dropped before reaching slog.
type raftLogger struct {
	base    *slog.Logger
	name    string
	implied []any
	level   hclog.Level
}

var _ hclog.Logger = (*raftLogger)(nil)

func newRaftLogger(base *slog.Logger, level hclog.Level) *raftLogger {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return &raftLogger{base: base, name: "raft", level: level}
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < l.level {
		return
	}
	sl := slogLevel(level)
	if !l.base.Enabled(context.Background(), sl) {
		return
	}
	attrs := make([]any, 0, len(l.implied)+len(args)+2)
	attrs = append(attrs, "component", l.name)
	attrs = append(attrs, l.implied...)
	for _, a := range args {
		// raft formats some values lazily with hclog.Fmt.
		if f, ok := a.(hclog.Format); ok && len(f) > 0 {
			if format, ok := f[0].(string); ok {
				a = fmt.Sprintf(format, f[1:]...)
			}
		}
		attrs = append(attrs, a)
	}
	l.base.Log(context.Background(), sl, msg, attrs...)
}

func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *raftLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *raftLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *raftLogger) enabled(level hclog.Level) bool {
	return level >= l.level && l.base.Enabled(context.Background(), slogLevel(level))
}

func (l *raftLogger) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *raftLogger) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *raftLogger) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *raftLogger) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *raftLogger) IsError() bool { return l.enabled(hclog.Error) }

func (l *raftLogger) ImpliedArgs() []any { return l.implied }

func (l *raftLogger) With(args ...any) hclog.Logger {
	c := *l
	c.implied = append(append([]any(nil), l.implied...), args...)
	return &c
}

func (l *raftLogger) Name() string { return l.name }

func (l *raftLogger) Named(name string) hclog.Logger {
	c := *l
	c.name = l.name + "." + name
	return &c
}

func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

// SetLevel is part of hclog.Logger; raft never calls it on a logger it was
// given. Changing the floor of a shared adapter would race, so it is ignored.
func (l *raftLogger) SetLevel(hclog.Level) {}

func (l *raftLogger) GetLevel() hclog.Level { return l.level }

func (l *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *raftLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return standardWriter{l}
}

// standardWriter turns lines written by a standard-library logger (raft's
// transport uses one in places) into Info records, honouring a leading
// "[LEVEL]" tag when present.
type standardWriter struct{ l *raftLogger }

func (w standardWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := hclog.Info
	for tag, lv := range map[string]hclog.Level{"[TRACE]": hclog.Trace, "[DEBUG]": hclog.Debug, "[INFO]": hclog.Info, "[WARN]": hclog.Warn, "[ERR]": hclog.Error, "[ERROR]": hclog.Error} {
		if rest, ok := strings.CutPrefix(msg, tag); ok {
			level, msg = lv, strings.TrimSpace(rest)
			break
		}
	}
	w.l.Log(level, msg)
	return len(p), nil
}
