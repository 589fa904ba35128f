package telemetry

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/metrics"
)

// FuzzAccept feeds arbitrary PushTelemetry payloads to the receiver. The
// invariant: a payload is accepted or refused with a Kafka error, never a
// panic, and an accepted one can be exported.
func FuzzAccept(f *testing.F) {
	f.Add([]byte{}, int8(0))
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00}, int8(0))
	f.Add([]byte{0x1f, 0x8b, 0x08}, int8(1))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd}, int8(4))
	f.Fuzz(func(t *testing.T, payload []byte, codec int8) {
		r := NewReceiver(Config{Metrics: []string{"*"}, Interval: time.Second, MaxBytes: 1 << 16})
		sub := r.Subscribe([16]byte{}, "fuzz")
		err := r.Accept(Push{ClientInstanceID: sub.ClientInstanceID, SubscriptionID: sub.SubscriptionID, CompressionType: codec, Metrics: payload})
		if err == nil {
			bw := bufio.NewWriter(io.Discard)
			r.WriteFamilies(metrics.NewGaugeWriter(bw))
			bw.Flush()
		}
	})
}
