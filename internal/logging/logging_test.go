package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestJSONFormatAndPerComponentLevels(t *testing.T) {
	var buf bytes.Buffer
	log, levels, err := New(&buf, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	storage := log.With("component", "storage")
	storage.Debug("hidden at INFO")
	storage.Info("shown")
	if err := levels.Set("vltava.storage", "debug"); err != nil {
		t.Fatal(err)
	}
	storage.Debug("shown at DEBUG")
	log.Debug("root still at INFO")
	if got := levels.Level("vltava.storage"); got != "DEBUG" {
		t.Errorf("vltava.storage level %s, want DEBUG", got)
	}
	if err := levels.Reset("vltava.storage"); err != nil {
		t.Fatal(err)
	}
	storage.Debug("hidden again")
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		msgs = append(msgs, m["msg"].(string))
	}
	if want := "shown,shown at DEBUG"; strings.Join(msgs, ",") != want {
		t.Errorf("logged %v, want %s", msgs, want)
	}
	if names := levels.Names(); len(names) != 2 || names[0] != RootLogger || names[1] != "vltava.storage" {
		t.Errorf("loggers %v", names)
	}
	if err := levels.Set("root", "LOUD"); err == nil {
		t.Error("an unknown level was accepted")
	}
	if err := levels.Reset(RootLogger); err == nil {
		t.Error("the root logger's level was removed")
	}
}

func TestTextFormat(t *testing.T) {
	var buf bytes.Buffer
	log, _, err := New(&buf, "text", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello", "k", 1)
	if !strings.Contains(buf.String(), "msg=hello k=1") {
		t.Errorf("text line %q", buf.String())
	}
	if _, _, err := New(&buf, "xml", slog.LevelInfo); err == nil {
		t.Error("log.format=xml accepted")
	}
}
