package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
)

// TestRequestLogSampling checks log.request.sample.rate: 0 logs no
// request, 1 every one, and a fraction about that share of them; a logger
// above debug logs none whatever the rate.
func TestRequestLogSampling(t *testing.T) {
	const n = 4000
	logged := func(rate float64, level slog.Level) int {
		var buf bytes.Buffer
		c := &conn{
			srv: &Server{cfg: Config{RequestLogSampleRate: rate}},
			log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})),
			ctx: context.Background(),
		}
		r := &Request{Key: int16(kmsg.Produce), Version: 9, ClientID: "sampled", Conn: &ConnInfo{Principal: security.Anonymous}}
		for range n {
			c.maybeLogRequest(r, 100, time.Now())
		}
		lines := strings.Count(buf.String(), "\n")
		if lines > 0 && !strings.Contains(buf.String(), "api=Produce version=9") {
			t.Errorf("request log line %q lacks the API and version", strings.SplitN(buf.String(), "\n", 2)[0])
		}
		return lines
	}
	if got := logged(0, slog.LevelDebug); got != 0 {
		t.Errorf("rate 0: %d lines, want none", got)
	}
	if got := logged(1, slog.LevelDebug); got != n {
		t.Errorf("rate 1: %d lines, want %d", got, n)
	}
	// Binomial(4000, 0.25): mean 1000, standard deviation 27; 700–1300 is
	// eleven deviations either side.
	if got := logged(0.25, slog.LevelDebug); got < 700 || got > 1300 {
		t.Errorf("rate 0.25: %d of %d lines, want about 1000", got, n)
	}
	if got := logged(1, slog.LevelInfo); got != 0 {
		t.Errorf("rate 1 at level INFO: %d lines, want none", got)
	}
}
