package server

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServeCustomListener: a listener the caller bound is served next to
// the configured ones, named as given, reported by Addrs and closed by
// Close, whether Serve runs before or after Start.
func TestServeCustomListener(t *testing.T) {
	for _, tc := range []struct {
		name       string
		serveFirst bool
	}{
		{name: "serve after start", serveFirst: false},
		{name: "serve before start", serveFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &testHandler{released: make(chan struct{}, 1)}
			s := New(Config{Listeners: []ListenerConfig{{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"}}},
				h, slog.New(slog.NewTextHandler(io.Discard, nil)))
			custom, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			serve := func() {
				if err := s.Serve(custom, ListenerConfig{Name: "CONTROLLER", SecurityProtocol: "PLAINTEXT"}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.serveFirst {
				serve()
			}
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			if !tc.serveFirst {
				serve()
			}
			addrs := s.Addrs()
			if addrs["PLAINTEXT"] == nil || addrs["CONTROLLER"] == nil {
				t.Fatalf("Addrs = %v, want PLAINTEXT and CONTROLLER", addrs)
			}
			if got, want := addrs["CONTROLLER"].String(), custom.Addr().String(); got != want {
				t.Errorf("CONTROLLER addr %s, want %s", got, want)
			}
			for _, name := range []string{"PLAINTEXT", "CONTROLLER"} {
				c := dial(t, addrs[name].String())
				req := kmsg.NewPtrMetadataRequest()
				req.SetVersion(9)
				c.Write(encodeRequest(req, 7, "test-client"))
				if corr := readResponse(t, c, req.ResponseKind()); corr != 7 {
					t.Errorf("%s: correlation id %d, want 7", name, corr)
				}
			}
			s.Close()
			if c, err := net.Dial("tcp", custom.Addr().String()); err == nil {
				c.Close()
				t.Error("custom listener still accepts after Close")
			}
			if err := s.Serve(custom, ListenerConfig{Name: "LATE"}); err == nil {
				t.Error("Serve after Close succeeded")
			}
		})
	}
}
