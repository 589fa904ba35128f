package server

import (
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maybeLogRequest writes a debug line for a sample of requests
// (log.request.sample.rate), Kafka's kafka.request.logger at DEBUG without
// logging every request of a busy broker. Nothing is computed unless the
// sample hits and debug is enabled.
func (c *conn) maybeLogRequest(r *Request, size int, received time.Time) {
	rate := c.srv.cfg.RequestLogSampleRate
	if rate <= 0 || (rate < 1 && rand.Float64() >= rate) {
		return
	}
	if !c.log.Enabled(c.ctx, slog.LevelDebug) {
		return
	}
	c.log.Debug("request", "api", kmsg.NameForKey(r.Key), "version", r.Version,
		"correlation_id", r.CorrelationID, "client_id", r.ClientID, "bytes", size,
		"principal", r.Conn.Principal.String(), "took", time.Since(received))
}
