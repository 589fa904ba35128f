package state

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/partition"
)

// Partitions exposes the replica manager's view of the hosted partitions.
type Partitions struct {
	// All returns the hosted partitions (partition.Manager.All).
	All   func() []*partition.Partition
	Level metrics.Level
}

var (
	underReplicatedDesc = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions led here whose ISR is smaller than their replica set (ReplicaManager UnderReplicatedPartitions).", nil, nil)
	underMinISRDesc = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions led here whose ISR is smaller than min.insync.replicas (UnderMinIsrPartitionCount).", nil, nil)
	atMinISRDesc = prometheus.NewDesc("kafka_server_replicamanager_atminisrpartitioncount",
		"Partitions led here whose ISR is exactly min.insync.replicas (AtMinIsrPartitionCount).", nil, nil)
	partitionCountDesc = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Partitions hosted here (ReplicaManager PartitionCount).", nil, nil)
	leaderCountDesc = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions led here (ReplicaManager LeaderCount).", nil, nil)
	topicSizeDesc = prometheus.NewDesc("kafka_log_topic_size",
		"Bytes of a topic's logs on this broker (sum of kafka_log_log_size).", []string{"topic"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Partitions) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{underReplicatedDesc, underMinISRDesc, atMinISRDesc, partitionCountDesc, leaderCountDesc, topicSizeDesc} {
		ch <- d
	}
}

// replicaState is one hosted partition as a scrape sees it.
type replicaState struct {
	topic                   string
	index                   int32
	size, leo, lso, hw      int64
	segments                int
	leader, underReplicated bool
}

func (c *Partitions) snapshot() []replicaState {
	parts := c.All()
	out := make([]replicaState, len(parts))
	for i, p := range parts {
		log := p.Log()
		r := replicaState{topic: p.Topic, index: p.Index, size: log.Size(), leo: log.LogEndOffset(), lso: log.LogStartOffset(),
			hw: p.HighWatermark(), segments: log.NumSegments(), leader: p.IsLeader()}
		if r.leader {
			r.underReplicated = len(p.ISR()) < len(p.Replicas())
		}
		out[i] = r
	}
	return out
}

// Collect implements prometheus.Collector: the broker-wide and per-topic
// series. The per-partition ones are written by WriteFamilies.
func (c *Partitions) Collect(ch chan<- prometheus.Metric) {
	parts := c.All()
	var under, underMin, atMin, leaders int
	topicBytes := map[string]int64{}
	for _, p := range parts {
		if c.Level.PerTopic() {
			topicBytes[p.Topic] += p.Log().Size()
		}
		if !p.IsLeader() {
			continue
		}
		leaders++
		isr, replicas := len(p.ISR()), len(p.Replicas())
		minISR := int(p.Config().MinInsyncReplicas)
		if isr < replicas {
			under++
		}
		if isr < minISR {
			underMin++
		} else if isr == minISR {
			atMin++
		}
	}
	for t, n := range topicBytes {
		ch <- prometheus.MustNewConstMetric(topicSizeDesc, prometheus.GaugeValue, float64(n), t)
	}
	ch <- prometheus.MustNewConstMetric(underReplicatedDesc, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(underMinISRDesc, prometheus.GaugeValue, float64(underMin))
	ch <- prometheus.MustNewConstMetric(atMinISRDesc, prometheus.GaugeValue, float64(atMin))
	ch <- prometheus.MustNewConstMetric(partitionCountDesc, prometheus.GaugeValue, float64(len(parts)))
	ch <- prometheus.MustNewConstMetric(leaderCountDesc, prometheus.GaugeValue, float64(leaders))
}

// perPartitionFamilies are the per-partition gauges, written directly
// (metrics.FamilyWriter): one series per hosted partition (leaderOnly:
// per partition led here).
var perPartitionFamilies = []struct {
	name, help string
	leaderOnly bool
	value      func(*replicaState) int64
}{
	{"kafka_log_log_size", "Bytes of the partition's log segments on this broker (Log Size).", false, func(r *replicaState) int64 { return r.size }},
	{"kafka_log_log_logendoffset", "The replica's log end offset (Log LogEndOffset).", false, func(r *replicaState) int64 { return r.leo }},
	{"kafka_log_log_logstartoffset", "The replica's log start offset (Log LogStartOffset).", false, func(r *replicaState) int64 { return r.lso }},
	{"kafka_log_log_numlogsegments", "The replica's segment count (Log NumLogSegments).", false, func(r *replicaState) int64 { return int64(r.segments) }},
	{"kafka_cluster_partition_underreplicated", "1 when this partition, led here, is under-replicated (Partition UnderReplicated).", true, func(r *replicaState) int64 { return b2i64(r.underReplicated) }},
	{"kafka_topic_partition_current_offset", "High watermark of a partition led here (kafka_exporter's name).", true, func(r *replicaState) int64 { return r.hw }},
	{"kafka_topic_partition_oldest_offset", "Log start offset of a partition led here (kafka_exporter's name).", true, func(r *replicaState) int64 { return r.lso }},
}

// WriteFamilies implements metrics.FamilyWriter: the per-partition series,
// unless metrics.partition.level leaves them out.
func (c *Partitions) WriteFamilies(w *metrics.GaugeWriter) {
	if !c.Level.PerPartition() {
		return
	}
	parts := c.snapshot()
	for _, f := range perPartitionFamilies {
		w.Family(f.name, f.help)
		for i := range parts {
			r := &parts[i]
			if f.leaderOnly && !r.leader {
				continue
			}
			w.Sample(f.name, r.topic, r.index, f.value(r))
		}
	}
}

func b2i64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
