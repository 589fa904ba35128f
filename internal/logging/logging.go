// Package logging builds the server's slog logger: text or JSON lines
// (log.format), and a level per named logger that the broker-logger admin
// API (DescribeConfigs and IncrementalAlterConfigs on resource type
// BROKER_LOGGER, as Kafka's log4j loggers) reads and changes at run time.
//
// The loggers are "root" and one per component, named
// "vltava.<component>" after the component attribute every part of the
// node logs with (log.With("component", "storage") → vltava.storage). A
// component's level is its own once set, else root's.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// RootLogger is the name of the root logger, as log4j's.
const RootLogger = "root"

// componentPrefix names a component's logger.
const componentPrefix = "vltava."

// Levels is the level of every named logger. Safe for concurrent use; the
// logging path reads only atomics.
type Levels struct {
	root    slog.LevelVar
	initial slog.Level

	mu      sync.Mutex // guards loggers (adding a name); each entry's level is atomic
	loggers map[string]*loggerLevel
}

type loggerLevel struct {
	set   atomic.Bool
	level slog.LevelVar
}

// New returns a logger writing to w in format ("text" or "json") at root
// level, and its Levels.
func New(w io.Writer, format string, root slog.Level) (*slog.Logger, *Levels, error) {
	l := &Levels{initial: root, loggers: map[string]*loggerLevel{}}
	l.root.Set(root)
	// The inner handler passes everything; Enabled decides per logger.
	opts := &slog.HandlerOptions{Level: slog.Level(-100)}
	var inner slog.Handler
	switch format {
	case "", "text":
		inner = slog.NewTextHandler(w, opts)
	case "json":
		inner = slog.NewJSONHandler(w, opts)
	default:
		return nil, nil, fmt.Errorf("log.format %q: want text or json", format)
	}
	return slog.New(&handler{inner: inner, levels: l}), l, nil
}

func (l *Levels) logger(name string) *loggerLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.loggers[name]
	if e == nil {
		e = &loggerLevel{}
		l.loggers[name] = e
	}
	return e
}

// Names lists the loggers: root first, then the components that logged
// or were configured, sorted.
func (l *Levels) Names() []string {
	l.mu.Lock()
	names := make([]string, 0, len(l.loggers)+1)
	for n := range l.loggers {
		names = append(names, n)
	}
	l.mu.Unlock()
	sort.Strings(names)
	return append([]string{RootLogger}, names...)
}

// Has reports whether name is a logger.
func (l *Levels) Has(name string) bool {
	if name == RootLogger {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.loggers[name]
	return ok
}

// Level is a logger's effective level in log4j's words (root's for a
// component without its own).
func (l *Levels) Level(name string) string {
	if name != RootLogger {
		if e := l.logger(name); e.set.Load() {
			return log4jName(e.level.Level())
		}
	}
	return log4jName(l.root.Level())
}

// Set sets a logger's level from a log4j level name (TRACE, DEBUG, INFO,
// WARN, ERROR, FATAL, OFF; any case).
func (l *Levels) Set(name, level string) error {
	lv, ok := ParseLog4jLevel(level)
	if !ok {
		return fmt.Errorf("%q is not a supported log level; valid levels are %s", level, strings.Join(log4jLevels, ", "))
	}
	if name == RootLogger {
		l.root.Set(lv)
		return nil
	}
	e := l.logger(name)
	e.level.Set(lv)
	e.set.Store(true)
	return nil
}

// Reset makes a component inherit root's level again. Root itself cannot
// be removed (Kafka refuses it too).
func (l *Levels) Reset(name string) error {
	if name == RootLogger {
		return fmt.Errorf("removing the log level of the root logger is not allowed")
	}
	l.logger(name).set.Store(false)
	return nil
}

var log4jLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"}

// ParseLog4jLevel maps a log4j level name onto slog's scale: TRACE below
// DEBUG, FATAL above ERROR, OFF above everything.
func ParseLog4jLevel(s string) (slog.Level, bool) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE", "ALL":
		return slog.LevelDebug - 4, true
	case "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN":
		return slog.LevelWarn, true
	case "ERROR":
		return slog.LevelError, true
	case "FATAL":
		return slog.LevelError + 4, true
	case "OFF":
		return slog.Level(1 << 20), true
	}
	return 0, false
}

func log4jName(lv slog.Level) string {
	switch {
	case lv <= slog.LevelDebug-4:
		return "TRACE"
	case lv <= slog.LevelDebug:
		return "DEBUG"
	case lv <= slog.LevelInfo:
		return "INFO"
	case lv <= slog.LevelWarn:
		return "WARN"
	case lv <= slog.LevelError:
		return "ERROR"
	case lv <= slog.LevelError+4:
		return "FATAL"
	}
	return "OFF"
}

// handler filters records by the level of the logger they belong to.
type handler struct {
	inner  slog.Handler
	levels *Levels
	own    *loggerLevel // the component's logger; nil: root
}

// Enabled implements slog.Handler: the component's own level once set,
// else root's.
func (h *handler) Enabled(_ context.Context, lv slog.Level) bool {
	if h.own != nil && h.own.set.Load() {
		return lv >= h.own.level.Level()
	}
	return lv >= h.levels.root.Level()
}

// Handle implements slog.Handler.
func (h *handler) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

// WithAttrs implements slog.Handler; a component attribute selects the
// component's logger.
func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	own := h.own
	for _, a := range attrs {
		if a.Key == "component" {
			own = h.levels.logger(componentPrefix + a.Value.String())
		}
	}
	return &handler{inner: h.inner.WithAttrs(attrs), levels: h.levels, own: own}
}

// WithGroup implements slog.Handler.
func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(name), levels: h.levels, own: h.own}
}

// LevelsOf returns the Levels behind a logger made by New, or nil for any
// other logger (tests' loggers): then broker-logger configs are refused.
func LevelsOf(log *slog.Logger) *Levels {
	if h, ok := log.Handler().(*handler); ok {
		return h.levels
	}
	return nil
}
