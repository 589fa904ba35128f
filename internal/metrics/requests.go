package metrics

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxVersion bounds the versions tracked per API; kmsg's newest versions
// stay below it (Fetch is at 17).
const maxVersion = 24

// apiVersionStats are one API version's request count and total time
// (Kafka's RequestMetrics RequestsPerSec and TotalTimeMs, tagged by request
// and version).
type apiVersionStats struct {
	total histogram
}

var (
	requestStats    [kmsg.MaxKey + 1][maxVersion + 1]apiVersionStats
	requestsErrored [kmsg.MaxKey + 1]atomic.Uint64
	inFlight        atomic.Int64
)

// RequestStarted counts a request the dispatcher is about to handle
// (kafka_network_requestchannel_requestqueuesize: Vltava has no shared
// queue, so the gauge is the requests being handled or parked).
func RequestStarted() {
	if disabled.Load() {
		return
	}
	inFlight.Add(1)
}

// RequestDone records a handled request: its API key, version and the time
// from its frame being read to its response being queued. A key or
// version kmsg does not know is not recorded (the connection was closed).
func RequestDone(key, version int16, took time.Duration) {
	if disabled.Load() {
		return
	}
	inFlight.Add(-1)
	if key < 0 || int(key) > kmsg.MaxKey || version < 0 || version > maxVersion {
		return
	}
	requestStats[key][version].total.observeNs(int64(took))
}

// RequestFailed counts a request that closed its connection (a handler
// error): kafka_network_requestmetrics_errors_total{error="UNKNOWN_SERVER_ERROR"}
// is Kafka's nearest.
func RequestFailed(key int16) {
	if disabled.Load() {
		return
	}
	if key >= 0 && int(key) <= kmsg.MaxKey {
		requestsErrored[key].Add(1)
	}
}

var (
	requestsDesc = prometheus.NewDesc("kafka_network_requestmetrics_requests_total",
		"Requests handled, per API and version (RequestMetrics RequestsPerSec).", []string{"request", "version"}, nil)
	totalTimeDesc = prometheus.NewDesc("kafka_network_requestmetrics_totaltimems",
		"Time from a request being read to its response being queued, in milliseconds (RequestMetrics TotalTimeMs).", []string{"request", "version"}, nil)
	errorsDesc = prometheus.NewDesc("kafka_network_requestmetrics_errors_total",
		"Requests whose handling failed and closed the connection (RequestMetrics ErrorsPerSec).", []string{"request", "error"}, nil)
	queueDesc = prometheus.NewDesc("kafka_network_requestchannel_requestqueuesize",
		"Requests being handled or parked (Vltava has no shared request queue: each connection reads one request ahead).", nil, nil)
)

// requestCollector exposes the request counters.
type requestCollector struct{}

func (requestCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- requestsDesc
	ch <- totalTimeDesc
	ch <- errorsDesc
	ch <- queueDesc
}

func (requestCollector) Collect(ch chan<- prometheus.Metric) {
	for key := range requestStats {
		name := kmsg.NameForKey(int16(key))
		for v := range requestStats[key] {
			h := &requestStats[key][v].total
			if h.empty() {
				continue
			}
			version := strconv.Itoa(v)
			count, sum, buckets := h.snapshot()
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(count), name, version)
			ch <- prometheus.MustNewConstHistogram(totalTimeDesc, count, sum, buckets, name, version)
		}
		if n := requestsErrored[key].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(n), name, "UNKNOWN_SERVER_ERROR")
		}
	}
	ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(inFlight.Load()))
}
