// Package telemetry receives client metrics (KIP-714): it hands clients
// their subscription (GetTelemetrySubscriptions), accepts what they push
// (PushTelemetry, OTLP metrics in protobuf), and re-exports the latest
// value of every pushed series on /metrics, so a producer's or consumer's
// own view (request latency, throttle time, queue time, …) sits beside the
// broker's. One subscription is configured (telemetry.subscription.*), as
// a single Kafka CLIENT_METRICS resource matching every client.
package telemetry

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// Config is the subscription and limits.
type Config struct {
	// Metrics are the requested name prefixes; "*" asks for all.
	Metrics  []string
	Interval time.Duration
	MaxBytes int32
}

// Receiver holds the subscription and every client's last push. Safe for
// concurrent use: mu guards clients; pushes are decoded before it is
// taken.
type Receiver struct {
	cfg            Config
	subscriptionID int32
	now            func() time.Time

	mu        sync.Mutex
	clients   map[[16]byte]*client
	lastPrune time.Time
}

// client is one client instance's state.
type client struct {
	clientID   string
	seen       time.Time // last subscription or push
	lastPush   time.Time
	terminated bool
	subscribed int32 // the subscription id it was given
	resource   []attr
	// series are the latest value of every series the client pushed,
	// by name and attributes: clients leave out of a push what did not
	// change or was zero since the last one (franz-go rolls its latency
	// gauges per push), so a push updates series rather than replacing
	// them all.
	series map[string]series
}

type attr struct{ key, value string }

// key identifies a series: its name and attributes.
func (s series) key() string {
	var b strings.Builder
	b.WriteString(s.name)
	for _, a := range s.attrs {
		b.WriteByte(0)
		b.WriteString(a.key)
		b.WriteByte('=')
		b.WriteString(a.value)
	}
	return b.String()
}

// series is one pushed data point, its latest value.
type series struct {
	name    string // the OTLP metric name
	counter bool   // a monotonic cumulative sum
	attrs   []attr
	value   float64
}

// NewReceiver returns a receiver for cfg.
func NewReceiver(cfg Config) *Receiver {
	// The subscription id identifies the configuration: a client whose id
	// is stale (the broker restarted with another subscription) gets
	// UNKNOWN_SUBSCRIPTION_ID and asks again.
	id := int32(crc32.ChecksumIEEE([]byte(fmt.Sprintf("%v|%d", cfg.Metrics, cfg.Interval.Milliseconds()))))
	return &Receiver{cfg: cfg, subscriptionID: id, now: time.Now, clients: map[[16]byte]*client{}}
}

// Compression types accepted in PushTelemetry (Kafka's ids): gzip and zstd.
const (
	compressionNone = 0
	compressionGzip = 1
	compressionZstd = 4
)

// Subscription is GetTelemetrySubscriptions' answer.
type Subscription struct {
	ClientInstanceID         [16]byte
	SubscriptionID           int32
	AcceptedCompressionTypes []int8
	PushIntervalMillis       int32
	TelemetryMaxBytes        int32
	DeltaTemporality         bool
	RequestedMetrics         []string
}

// Subscribe answers GetTelemetrySubscriptions: a client without an
// instance id (all zeros) is given a new one, as KIP-714 has the broker
// assign it.
func (r *Receiver) Subscribe(instanceID [16]byte, clientID string) Subscription {
	if instanceID == ([16]byte{}) {
		rand.Read(instanceID[:])
		instanceID[6] = instanceID[6]&0x0f | 0x40 // a version 4 UUID
		instanceID[8] = instanceID[8]&0x3f | 0x80
	}
	now := r.now()
	r.mu.Lock()
	r.pruneLocked(now)
	c := r.clients[instanceID]
	if c == nil {
		c = &client{}
		r.clients[instanceID] = c
	}
	c.clientID, c.subscribed, c.terminated, c.seen = clientID, r.subscriptionID, false, now
	r.mu.Unlock()
	requested := r.cfg.Metrics
	for _, m := range requested {
		if m == "*" {
			requested = []string{""} // KIP-714: a single empty string asks for every metric
			break
		}
	}
	return Subscription{
		ClientInstanceID:         instanceID,
		SubscriptionID:           r.subscriptionID,
		AcceptedCompressionTypes: []int8{compressionZstd, compressionGzip},
		PushIntervalMillis:       int32(r.cfg.Interval.Milliseconds()),
		TelemetryMaxBytes:        r.cfg.MaxBytes,
		// Cumulative sums re-export as Prometheus counters as they are.
		DeltaTemporality: false,
		RequestedMetrics: requested,
	}
}

// Push is a PushTelemetry request.
type Push struct {
	ClientInstanceID [16]byte
	SubscriptionID   int32
	Terminating      bool
	CompressionType  int8
	Metrics          []byte
	ClientID         string
}

// Accept takes one push, returning the Kafka error KIP-714 gives for a bad
// one: UNKNOWN_SUBSCRIPTION_ID for a stale subscription or an unknown
// client, INVALID_REQUEST after a terminating push, TELEMETRY_TOO_LARGE,
// UNSUPPORTED_COMPRESSION_TYPE, INVALID_RECORD for a payload that does not
// decode.
func (r *Receiver) Accept(p Push) error {
	if len(p.Metrics) > int(r.cfg.MaxBytes) {
		return fmt.Errorf("%w: %d bytes of metrics, telemetry.max.bytes is %d", kerr.TelemetryTooLarge, len(p.Metrics), r.cfg.MaxBytes)
	}
	r.mu.Lock()
	c := r.clients[p.ClientInstanceID]
	var known, terminated bool
	if c != nil {
		known, terminated = c.subscribed == p.SubscriptionID, c.terminated
	}
	r.mu.Unlock()
	switch {
	case !known || p.SubscriptionID != r.subscriptionID:
		return fmt.Errorf("%w: subscription %d is not the current one (%d)", kerr.UnknownSubscriptionID, p.SubscriptionID, r.subscriptionID)
	case terminated:
		return fmt.Errorf("%w: the client already sent its terminating push", kerr.InvalidRequest)
	}
	raw, err := decompress(p.CompressionType, p.Metrics, int64(r.cfg.MaxBytes)*64)
	if err != nil {
		return err
	}
	var md metricspb.MetricsData
	if err := proto.Unmarshal(raw, &md); err != nil {
		return fmt.Errorf("%w: the metrics are not OTLP MetricsData: %v", kerr.InvalidRecord, err)
	}
	resource, points := flatten(&md)
	r.mu.Lock()
	defer r.mu.Unlock()
	c = r.clients[p.ClientInstanceID]
	if c == nil {
		return kerr.UnknownSubscriptionID
	}
	c.lastPush, c.resource, c.clientID = r.now(), resource, p.ClientID
	if c.series == nil {
		c.series = map[string]series{}
	}
	for _, pt := range points {
		c.series[pt.key()] = pt
	}
	c.seen = c.lastPush
	if p.Terminating {
		// The client is closing: its last values go with it.
		c.terminated, c.series = true, nil
	}
	return nil
}

// pruneLocked forgets clients not heard from for expiry intervals, at most
// once an interval, so instance ids that subscribe and never push (or
// vanish) do not accumulate. mu must be held.
func (r *Receiver) pruneLocked(now time.Time) {
	if now.Sub(r.lastPrune) < r.cfg.Interval {
		return
	}
	r.lastPrune = now
	for id, c := range r.clients {
		if now.Sub(c.seen) > expiry*r.cfg.Interval {
			delete(r.clients, id)
		}
	}
}

func decompress(codec int8, b []byte, limit int64) ([]byte, error) {
	var rd io.Reader
	switch codec {
	case compressionNone:
		return b, nil
	case compressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", kerr.InvalidRecord, err)
		}
		rd = zr
	case compressionZstd:
		zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", kerr.InvalidRecord, err)
		}
		defer zr.Close()
		rd = zr
	default:
		return nil, fmt.Errorf("%w: compression type %d is not accepted", kerr.UnsupportedCompressionType, codec)
	}
	out, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err == nil && int64(len(out)) > limit {
		err = errors.New("decompresses past the limit")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decompressing the metrics: %v", kerr.InvalidRecord, err)
	}
	return out, nil
}

// flatten turns OTLP metrics into series: gauges and sums (number data
// points); histograms and summaries, which Kafka clients do not push, are
// skipped.
func flatten(md *metricspb.MetricsData) (resource []attr, out []series) {
	for _, rm := range md.GetResourceMetrics() {
		resource = append(resource, attrs(rm.GetResource().GetAttributes())...)
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				var points []*metricspb.NumberDataPoint
				counter := false
				switch {
				case m.GetGauge() != nil:
					points = m.GetGauge().GetDataPoints()
				case m.GetSum() != nil:
					points = m.GetSum().GetDataPoints()
					counter = m.GetSum().GetIsMonotonic() &&
						m.GetSum().GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
				}
				for _, dp := range points {
					v := dp.GetAsDouble()
					if _, ok := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
						v = float64(dp.GetAsInt())
					}
					out = append(out, series{name: m.GetName(), counter: counter, attrs: attrs(dp.GetAttributes()), value: v})
				}
			}
		}
	}
	return resource, out
}

func attrs(kvs []*commonpb.KeyValue) []attr {
	var out []attr
	for _, kv := range kvs {
		v := kv.GetValue()
		var s string
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			s = x.StringValue
		case *commonpb.AnyValue_IntValue:
			s = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			s = fmt.Sprint(x.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			s = fmt.Sprint(x.BoolValue)
		default:
			continue
		}
		out = append(out, attr{kv.GetKey(), s})
	}
	return out
}

// promName maps an OTLP metric or attribute name onto Prometheus'
// alphabet, as the OpenTelemetry Prometheus exporter does: every character
// outside [a-zA-Z0-9_] becomes '_' (org.apache.kafka.producer.node.request.latency.avg
// → org_apache_kafka_producer_node_request_latency_avg).
func promName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	return strings.Clone(string(b))
}
