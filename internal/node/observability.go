package node

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vltava/vltava/internal/broker"
	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/lag"
	"github.com/vltava/vltava/internal/logging"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/metrics/state"
	"github.com/vltava/vltava/internal/telemetry"
	"github.com/vltava/vltava/internal/tiered"
)

// observability is the node's admin listener (admin.listeners) and what it
// serves: /metrics, /v1/health, /v1/consumer-lag, /debug/pprof.
type observability struct {
	http      *httpapi.Server
	lag       *lag.Evaluator     // nil on a controller-only node
	lagClient *lag.ClusterClient // reads partitions hosted elsewhere; may be nil
	metrics   *metrics.Registry
}

// adminHTTPKeys are the admin listener's keys: admin.listeners, admin.ssl.*,
// admin.authentication.*.
var adminHTTPKeys = httpapi.Keys{Service: "admin", Prefix: "admin.", DefaultRealm: "vltava-admin"}

// ownListener is this broker's own address for its internal client: the
// inter-broker listener's, else the first client listener's.
func (n *Node) ownListener() string {
	if n.server == nil {
		return ""
	}
	addrs := n.server.Addrs()
	if a, ok := addrs[n.cfg.InterBrokerListenerName]; ok {
		return a.String()
	}
	for _, l := range n.cfg.Listeners {
		if a, ok := addrs[l.Name]; ok {
			return a.String()
		}
	}
	return ""
}

// startObservability binds the admin listener. It runs before the node is
// ready, so /v1/health answers "not ready" while the broker registers.
func (n *Node) startObservability() error {
	if len(n.cfg.AdminListeners) == 0 {
		return nil
	}
	o := &observability{metrics: metrics.NewRegistry(metrics.ParseLevel(n.cfg.MetricsPartitionLevel))}
	level := o.metrics.Level()
	ctrl := &state.Controller{
		IsActive: n.IsActiveController,
		Image:    func() *metadata.Image { return n.meta.Image() },
		Quorum:   n.meta,
		NodeID:   n.cfg.NodeID,
		PerTopic: level.PerTopic(), PerPartition: level.PerPartition(),
	}
	// The collectors' descriptors are fixed; a registration error is a
	// bug (two collectors claiming one series), not a runtime condition.
	mustRegister := func(c prometheus.Collector) {
		if err := o.metrics.Register(c); err != nil {
			panic(fmt.Sprintf("metrics: %v", err))
		}
	}
	mustRegister(ctrl)
	o.metrics.AddFamilyWriter(ctrl)
	if n.partitions != nil {
		parts := &state.Partitions{All: n.partitions.All, Level: o.metrics.Level()}
		mustRegister(parts)
		o.metrics.AddFamilyWriter(parts)
		computer := &lag.Computer{Groups: n.groups, Partitions: n.partitions}
		if seed := n.ownListener(); seed != "" {
			// Partitions of a group not hosted here are read from their
			// leaders, as any client of the cluster would.
			if rc, err := lag.NewClusterClient([]string{seed}); err == nil {
				computer.Remote, o.lagClient = rc, rc
			}
		}
		o.lag = lag.NewEvaluator(computer,
			time.Duration(n.cfg.MetricsConsumerLagSampleIntervalMs)*time.Millisecond)
		mustRegister(&lag.Collector{Evaluator: o.lag, PerPartition: o.metrics.Level().PerPartition()})
	}
	if n.telemetry != nil {
		o.metrics.AddFamilyWriter(n.telemetry)
	}
	if n.tiered != nil {
		mustRegister(&tiered.Collector{Manager: n.tiered.mgr.Load})
	}
	opts, err := adminHTTPKeys.Options(n.cfg.HTTPServiceSetting)
	if err != nil {
		if o.lagClient != nil {
			o.lagClient.Close()
		}
		return err
	}
	opts.Listeners = n.cfg.AdminListeners
	opts.Logger = n.log.With("component", "admin-http")
	o.http = httpapi.New(opts)
	if n.cfg.MetricsEnable {
		o.http.Handle("GET /metrics", o.metrics.Handler())
	}
	o.http.HandleFunc("GET /v1/health", n.serveHealth)
	o.http.HandleFunc("GET /v1/health/live", n.serveHealth)
	o.http.HandleFunc("GET /v1/health/ready", n.serveHealth)
	if o.lag != nil {
		o.http.Handle("GET /v1/consumer-lag", o.lag.Handler())
	}
	if n.cfg.AdminPprofEnable {
		o.http.HandleFunc("/debug/pprof/", pprof.Index)
		o.http.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		o.http.HandleFunc("/debug/pprof/profile", pprof.Profile)
		o.http.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		o.http.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	// A deleted topic's BrokerTopicMetrics go with it, as Kafka removes
	// its MBeans.
	n.meta.Subscribe(func(old, img *metadata.Image) {
		if old == nil || old.NumTopics() != img.NumTopics() {
			metrics.ForgetTopicsExcept(func(t string) bool { _, ok := img.Topic(t); return ok })
		}
	})
	if err := o.http.Start(); err != nil {
		if o.lagClient != nil {
			o.lagClient.Close()
		}
		// As Kafka with a listener it cannot bind, the node does not
		// start, the default endpoint included (another node on the
		// machine holds 127.0.0.1:9644): admin.listeners= (empty) runs
		// it without one.
		return fmt.Errorf("admin.listeners: %w (set admin.listeners to another endpoint, or to nothing for no admin listener)", err)
	}
	if o.lag != nil {
		o.lag.Start()
	}
	n.obs = o
	return nil
}

// loggerLevels are the levels behind the node's logger for the
// broker-logger configs, nil when the logger was not made by
// internal/logging (then they are refused).
func loggerLevels(log *slog.Logger) broker.LoggerLevels {
	if lv := logging.LevelsOf(log); lv != nil {
		return lv
	}
	return nil
}

// telemetryReceiver creates the client-metrics receiver with
// telemetry.enable; nil (the APIs not advertised) without.
func (n *Node) telemetryReceiver() broker.TelemetryReceiver {
	if !n.cfg.TelemetryEnable {
		return nil
	}
	n.telemetry = telemetry.NewReceiver(telemetry.Config{
		Metrics:  n.cfg.TelemetrySubscriptionMetrics,
		Interval: time.Duration(n.cfg.TelemetrySubscriptionIntervalMs) * time.Millisecond,
		MaxBytes: n.cfg.TelemetryMaxBytes,
	})
	return n.telemetry
}

// Health is the body of /v1/health.
type Health struct {
	// Live: the process serves HTTP (always true when it answers).
	Live bool `json:"live"`
	// Ready: the node is registered, unfenced and serving clients (a
	// controller-only node: its quorum endpoint serves).
	Ready  bool  `json:"ready"`
	NodeID int32 `json:"node_id"`
}

// serveHealth answers /v1/health (both), /v1/health/live (200 while the
// process runs) and /v1/health/ready (200 once the node is ready, else
// 503), the split Kubernetes probes want.
func (n *Node) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := Health{Live: true, NodeID: n.cfg.NodeID}
	select {
	case <-n.ready:
		h.Ready = true
	default:
	}
	code := http.StatusOK
	if !h.Ready && r.URL.Path != "/v1/health/live" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(h)
}

// closeObservability stops the lag sampler and the admin listener.
func (n *Node) closeObservability() error {
	if n.obs == nil {
		return nil
	}
	if n.obs.lag != nil {
		n.obs.lag.Close()
	}
	if n.obs.lagClient != nil {
		n.obs.lagClient.Close()
	}
	return n.obs.http.Close()
}

// AdminAddrs are the admin listener's bound addresses (none without one).
func (n *Node) AdminAddrs() []string {
	if n.obs == nil {
		return nil
	}
	var out []string
	for _, a := range n.obs.http.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// Lag is the consumer lag the admin listener reports, nil on a
// controller-only node or without admin.listeners.
func (n *Node) Lag() *lag.Evaluator {
	if n.obs == nil {
		return nil
	}
	return n.obs.lag
}
