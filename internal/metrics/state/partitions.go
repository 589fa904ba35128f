package state

import (
	"strconv"

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
	partitionURDesc = prometheus.NewDesc("kafka_cluster_partition_underreplicated",
		"1 when this partition, led here, is under-replicated (Partition UnderReplicated).", []string{"topic", "partition"}, nil)
	logSizeDesc = prometheus.NewDesc("kafka_log_log_size",
		"Bytes of the partition's log segments on this broker (Log Size).", []string{"topic", "partition"}, nil)
	logEndDesc = prometheus.NewDesc("kafka_log_log_logendoffset",
		"The replica's log end offset (Log LogEndOffset).", []string{"topic", "partition"}, nil)
	logStartDesc = prometheus.NewDesc("kafka_log_log_logstartoffset",
		"The replica's log start offset (Log LogStartOffset).", []string{"topic", "partition"}, nil)
	segmentsDesc = prometheus.NewDesc("kafka_log_log_numlogsegments",
		"The replica's segment count (Log NumLogSegments).", []string{"topic", "partition"}, nil)
	currentOffsetDesc = prometheus.NewDesc("kafka_topic_partition_current_offset",
		"High watermark of a partition led here (kafka_exporter's name).", []string{"topic", "partition"}, nil)
	oldestOffsetDesc = prometheus.NewDesc("kafka_topic_partition_oldest_offset",
		"Log start offset of a partition led here (kafka_exporter's name).", []string{"topic", "partition"}, nil)
	topicSizeDesc = prometheus.NewDesc("kafka_log_topic_size",
		"Bytes of a topic's logs on this broker (sum of kafka_log_log_size).", []string{"topic"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Partitions) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{underReplicatedDesc, underMinISRDesc, atMinISRDesc, partitionCountDesc, leaderCountDesc,
		partitionURDesc, logSizeDesc, logEndDesc, logStartDesc, segmentsDesc, currentOffsetDesc, oldestOffsetDesc, topicSizeDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Partitions) Collect(ch chan<- prometheus.Metric) {
	parts := c.All()
	var under, underMin, atMin, leaders int
	perPartition, perTopic := c.Level.PerPartition(), c.Level.PerTopic()
	var topic string
	var topicBytes int64
	flushTopic := func() {
		if perTopic && topic != "" {
			ch <- prometheus.MustNewConstMetric(topicSizeDesc, prometheus.GaugeValue, float64(topicBytes), topic)
		}
	}
	for _, p := range parts {
		if p.Topic != topic { // All is sorted by topic
			flushTopic()
			topic, topicBytes = p.Topic, 0
		}
		log := p.Log()
		size := log.Size()
		topicBytes += size
		leader := p.IsLeader()
		var ur bool
		if leader {
			leaders++
			isr, replicas := len(p.ISR()), len(p.Replicas())
			minISR := int(p.Config().MinInsyncReplicas)
			ur = isr < replicas
			if ur {
				under++
			}
			if isr < minISR {
				underMin++
			} else if isr == minISR {
				atMin++
			}
		}
		if !perPartition {
			continue
		}
		idx := strconv.Itoa(int(p.Index))
		ch <- prometheus.MustNewConstMetric(logSizeDesc, prometheus.GaugeValue, float64(size), p.Topic, idx)
		ch <- prometheus.MustNewConstMetric(logEndDesc, prometheus.GaugeValue, float64(log.LogEndOffset()), p.Topic, idx)
		ch <- prometheus.MustNewConstMetric(logStartDesc, prometheus.GaugeValue, float64(log.LogStartOffset()), p.Topic, idx)
		ch <- prometheus.MustNewConstMetric(segmentsDesc, prometheus.GaugeValue, float64(log.NumSegments()), p.Topic, idx)
		if leader {
			ch <- prometheus.MustNewConstMetric(partitionURDesc, prometheus.GaugeValue, b2f(ur), p.Topic, idx)
			ch <- prometheus.MustNewConstMetric(currentOffsetDesc, prometheus.GaugeValue, float64(p.HighWatermark()), p.Topic, idx)
			ch <- prometheus.MustNewConstMetric(oldestOffsetDesc, prometheus.GaugeValue, float64(p.LogStartOffset()), p.Topic, idx)
		}
	}
	flushTopic()
	ch <- prometheus.MustNewConstMetric(underReplicatedDesc, prometheus.GaugeValue, float64(under))
	ch <- prometheus.MustNewConstMetric(underMinISRDesc, prometheus.GaugeValue, float64(underMin))
	ch <- prometheus.MustNewConstMetric(atMinISRDesc, prometheus.GaugeValue, float64(atMin))
	ch <- prometheus.MustNewConstMetric(partitionCountDesc, prometheus.GaugeValue, float64(len(parts)))
	ch <- prometheus.MustNewConstMetric(leaderCountDesc, prometheus.GaugeValue, float64(leaders))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
