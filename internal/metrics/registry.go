package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Level is metrics.partition.level: how much per-topic and per-partition
// detail the series carry.
type Level int8

const (
	LevelPartition Level = iota // per-topic and per-partition series
	LevelTopic                  // per-topic series only
	LevelBroker                 // broker-wide series only
)

// ParseLevel reads metrics.partition.level ("partition", "topic", "broker").
func ParseLevel(s string) Level {
	switch s {
	case "topic":
		return LevelTopic
	case "broker":
		return LevelBroker
	}
	return LevelPartition
}

// PerTopic reports whether per-topic series are exposed.
func (l Level) PerTopic() bool { return l <= LevelTopic }

// PerPartition reports whether per-partition series are exposed.
func (l Level) PerPartition() bool { return l == LevelPartition }

// Registry is one node's Prometheus registry: the Go runtime and process
// collectors, this package's counters, and the state collectors the node
// registers.
type Registry struct {
	reg   *prometheus.Registry
	level Level

	mu      sync.Mutex // guards writers
	writers []FamilyWriter
}

// NewRegistry returns a registry with the runtime, process, request, topic
// and event collectors registered.
func NewRegistry(level Level) *Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		requestCollector{},
		newTopicCollector(level.PerTopic()),
		eventCollector{},
	)
	return &Registry{reg: reg, level: level}
}

// Level is the registry's metrics.partition.level.
func (r *Registry) Level() Level { return r.level }

// Register adds a collector (the partition, controller and lag collectors).
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Gatherer is the registry for tests and in-process readers.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }
