package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Event counters: things that happen too rarely to be on a hot path, and
// the API the security and quota code reports into.

var (
	isrShrinks, isrExpands atomic.Uint64
	logFlushes             histogram
	parkedFetches          atomic.Int64
	parkedProduces         atomic.Int64

	// labelled counters: (listener, mechanism) and (quota type) keyed.
	labelledMu    sync.Mutex // guards authFailures, authSuccesses, throttles and connections; never held on a request path longer than a map update
	authFailures  = map[[2]string]uint64{}
	authSuccesses = map[[2]string]uint64{}
	throttles     = map[string]*throttleStats{}
	connections   = map[string]int64{}
)

type throttleStats struct {
	count uint64
	ms    float64
}

// IsrShrunk counts an ISR shrink this broker proposed as leader, once the
// metadata image holds it (ReplicaManager IsrShrinksPerSec).
func IsrShrunk() { isrShrinks.Add(1) }

// IsrExpanded counts an ISR expansion this broker proposed as leader, once
// the metadata image holds it (ReplicaManager IsrExpandsPerSec).
func IsrExpanded() { isrExpands.Add(1) }

// LogFlushed records one fsync of a log (LogFlushStats LogFlushRateAndTimeMs).
func LogFlushed(took time.Duration) { logFlushes.observeNs(int64(took)) }

// FetchParked and FetchUnparked bracket a consumer or follower fetch
// waiting for data (DelayedOperationPurgatory PurgatorySize, Fetch).
func FetchParked() {
	if !disabled.Load() {
		parkedFetches.Add(1)
	}
}

// FetchUnparked: see FetchParked.
func FetchUnparked() {
	if !disabled.Load() {
		parkedFetches.Add(-1)
	}
}

// ProduceParked and ProduceUnparked bracket an acks=all produce waiting for
// the ISR (PurgatorySize, Produce).
func ProduceParked() {
	if !disabled.Load() {
		parkedProduces.Add(1)
	}
}

// ProduceUnparked: see ProduceParked.
func ProduceUnparked() {
	if !disabled.Load() {
		parkedProduces.Add(-1)
	}
}

// AuthenticationFailed counts a failed authentication on a listener with a
// mechanism ("PLAIN", "SCRAM-SHA-256", "GSSAPI", "SSL", ...), Kafka's
// failed-authentication-total of the socket server metrics. Pass only
// enabled mechanism names (not one a client asked for), so clients cannot
// grow the label set.
func AuthenticationFailed(listener, mechanism string) {
	labelledMu.Lock()
	authFailures[[2]string{listener, mechanism}]++
	labelledMu.Unlock()
}

// AuthenticationSucceeded counts a successful authentication
// (successful-authentication-total).
func AuthenticationSucceeded(listener, mechanism string) {
	labelledMu.Lock()
	authSuccesses[[2]string{listener, mechanism}]++
	labelledMu.Unlock()
}

// QuotaThrottled counts a response throttled by a client quota of the given
// type ("Produce", "Fetch", "Request", as Kafka's quota sensors name them)
// and the throttle time it carried.
func QuotaThrottled(quotaType string, throttle time.Duration) {
	labelledMu.Lock()
	t := throttles[quotaType]
	if t == nil {
		t = &throttleStats{}
		throttles[quotaType] = t
	}
	t.count++
	t.ms += float64(throttle) / float64(time.Millisecond)
	labelledMu.Unlock()
}

// ConnectionOpened and ConnectionClosed track the open connections of a
// listener (socket-server-metrics connection-count).
func ConnectionOpened(listener string) {
	labelledMu.Lock()
	connections[listener]++
	labelledMu.Unlock()
}

func ConnectionClosed(listener string) {
	labelledMu.Lock()
	connections[listener]--
	labelledMu.Unlock()
}

var (
	isrShrinksDesc = prometheus.NewDesc("kafka_server_replicamanager_isrshrinks_total", "ISR shrinks proposed by this broker as leader (ReplicaManager IsrShrinksPerSec).", nil, nil)
	isrExpandsDesc = prometheus.NewDesc("kafka_server_replicamanager_isrexpands_total", "ISR expansions proposed by this broker as leader (ReplicaManager IsrExpandsPerSec).", nil, nil)
	flushDesc      = prometheus.NewDesc("kafka_log_logflushstats_logflushrateandtimems", "Log fsyncs and their time in milliseconds (LogFlushStats LogFlushRateAndTimeMs).", nil, nil)
	purgatoryDesc  = prometheus.NewDesc("kafka_server_delayedoperationpurgatory_purgatorysize", "Requests parked waiting (DelayedOperationPurgatory PurgatorySize).", []string{"delayedOperation"}, nil)
	authFailDesc   = prometheus.NewDesc("kafka_server_socket_server_metrics_failed_authentication_total", "Failed authentications per listener and mechanism.", []string{"listener", "mechanism"}, nil)
	authOKDesc     = prometheus.NewDesc("kafka_server_socket_server_metrics_successful_authentication_total", "Successful authentications per listener and mechanism.", []string{"listener", "mechanism"}, nil)
	throttleDesc   = prometheus.NewDesc("kafka_server_quota_throttled_total", "Responses throttled by a client quota, per quota type.", []string{"quota"}, nil)
	throttleMsDesc = prometheus.NewDesc("kafka_server_quota_throttle_time_ms_total", "Throttle time given by client quotas, per quota type, in milliseconds.", []string{"quota"}, nil)
	connDesc       = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_count", "Open client connections per listener.", []string{"listener"}, nil)
)

// eventCollector exposes the event counters.
type eventCollector struct{}

func (eventCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{isrShrinksDesc, isrExpandsDesc, flushDesc, purgatoryDesc, authFailDesc, authOKDesc, throttleDesc, throttleMsDesc, connDesc} {
		ch <- d
	}
}

func (eventCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(isrShrinksDesc, prometheus.CounterValue, float64(isrShrinks.Load()))
	ch <- prometheus.MustNewConstMetric(isrExpandsDesc, prometheus.CounterValue, float64(isrExpands.Load()))
	count, sum, buckets := logFlushes.snapshot()
	ch <- prometheus.MustNewConstHistogram(flushDesc, count, sum, buckets)
	ch <- prometheus.MustNewConstMetric(purgatoryDesc, prometheus.GaugeValue, float64(parkedFetches.Load()), "Fetch")
	ch <- prometheus.MustNewConstMetric(purgatoryDesc, prometheus.GaugeValue, float64(parkedProduces.Load()), "Produce")
	labelledMu.Lock()
	defer labelledMu.Unlock()
	for k, n := range authFailures {
		ch <- prometheus.MustNewConstMetric(authFailDesc, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	for k, n := range authSuccesses {
		ch <- prometheus.MustNewConstMetric(authOKDesc, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	for q, t := range throttles {
		ch <- prometheus.MustNewConstMetric(throttleDesc, prometheus.CounterValue, float64(t.count), q)
		ch <- prometheus.MustNewConstMetric(throttleMsDesc, prometheus.CounterValue, t.ms, q)
	}
	for l, n := range connections {
		ch <- prometheus.MustNewConstMetric(connDesc, prometheus.GaugeValue, float64(n), l)
	}
}

// ISRChanges are the ISR shrinks and expansions counted so far
// (kafka_server_replicamanager_isrshrinks_total and isrexpands_total).
func ISRChanges() (shrinks, expands uint64) { return isrShrinks.Load(), isrExpands.Load() }
