package state

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/metrics"
)

// Controller exposes the KafkaController gauges and the metadata quorum's
// raft metrics. Like Kafka, only the active controller reports the
// cluster-wide counts (offline partitions, topics, partitions); every node
// reports ActiveControllerCount, so its sum over the cluster is 1.
type Controller struct {
	IsActive func() bool
	Image    func() *metadata.Image
	// Quorum is nil on a node without one (never, today).
	Quorum interface {
		QuorumState() (quorum.QuorumState, error)
		LeaderID() (int32, bool)
	}
	NodeID int32
	// PerTopic and PerPartition follow metrics.partition.level.
	PerTopic, PerPartition bool
}

var (
	activeDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, 0 elsewhere (KafkaController ActiveControllerCount).", nil, nil)
	offlineDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader, on the active controller (KafkaController OfflinePartitionsCount).", nil, nil)
	topicsDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_globaltopiccount",
		"Topics in the cluster, on the active controller (GlobalTopicCount).", nil, nil)
	partitionsDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_globalpartitioncount",
		"Partitions in the cluster, on the active controller (GlobalPartitionCount).", nil, nil)
	imbalanceDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
		"Partitions whose leader is not their preferred (first) replica, on the active controller (PreferredReplicaImbalanceCount).", nil, nil)
	fencedDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_fencedbrokercount",
		"Registered brokers that are fenced, on the active controller (FencedBrokerCount).", nil, nil)
	activeBrokersDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_activebrokercount",
		"Registered brokers that are not fenced, on the active controller (ActiveBrokerCount).", nil, nil)
	brokersDesc = prometheus.NewDesc("kafka_brokers",
		"Registered brokers, on the active controller (kafka_exporter's name).", nil, nil)
	topicPartitionsDesc = prometheus.NewDesc("kafka_topic_partitions",
		"Partitions of a topic, on the active controller (kafka_exporter's name).", []string{"topic"}, nil)
	metadataOffsetDesc = prometheus.NewDesc("kafka_server_metadataloader_current_metadata_offset",
		"Offset of the metadata image this node applied.", nil, nil)
	raftLeaderDesc = prometheus.NewDesc("kafka_server_raftmetrics_current_leader",
		"Node id of the metadata quorum's leader as this node knows it, -1 when none (raft-metrics current-leader).", nil, nil)
	raftEpochDesc = prometheus.NewDesc("kafka_server_raftmetrics_current_epoch",
		"The metadata quorum's leader epoch (raft-metrics current-epoch), on the leader.", nil, nil)
	raftHWDesc = prometheus.NewDesc("kafka_server_raftmetrics_high_watermark",
		"The metadata quorum's commit index (raft-metrics high-watermark), on the leader.", nil, nil)
	raftLagDesc = prometheus.NewDesc("kafka_server_raftmetrics_replica_lag",
		"Entries a voter or observer is behind the quorum leader's log end, on the leader.", []string{"replica", "role"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{activeDesc, offlineDesc, topicsDesc, partitionsDesc, imbalanceDesc, fencedDesc,
		activeBrokersDesc, brokersDesc, topicPartitionsDesc, metadataOffsetDesc, raftLeaderDesc, raftEpochDesc, raftHWDesc, raftLagDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	active := c.IsActive()
	ch <- prometheus.MustNewConstMetric(activeDesc, prometheus.GaugeValue, b2f(active))
	img := c.Image()
	ch <- prometheus.MustNewConstMetric(metadataOffsetDesc, prometheus.GaugeValue, float64(img.Offset()))
	var offline, total, imbalanced int
	if active {
		for _, t := range img.Topics() {
			if c.PerTopic {
				ch <- prometheus.MustNewConstMetric(topicPartitionsDesc, prometheus.GaugeValue, float64(len(t.Partitions)), t.Name)
			}
			for _, p := range t.Partitions {
				total++
				if p.Leader < 0 {
					offline++
				}
				if len(p.Replicas) > 0 && p.Leader >= 0 && p.Leader != p.Replicas[0] {
					imbalanced++
				}
			}
		}
		var fenced, unfenced int
		for _, b := range img.Brokers() {
			if b.Fenced {
				fenced++
			} else {
				unfenced++
			}
		}
		ch <- prometheus.MustNewConstMetric(fencedDesc, prometheus.GaugeValue, float64(fenced))
		ch <- prometheus.MustNewConstMetric(brokersDesc, prometheus.GaugeValue, float64(fenced+unfenced))
		ch <- prometheus.MustNewConstMetric(activeBrokersDesc, prometheus.GaugeValue, float64(unfenced))
	}
	ch <- prometheus.MustNewConstMetric(offlineDesc, prometheus.GaugeValue, float64(offline))
	ch <- prometheus.MustNewConstMetric(topicsDesc, prometheus.GaugeValue, float64(b2i(active)*img.NumTopics()))
	ch <- prometheus.MustNewConstMetric(partitionsDesc, prometheus.GaugeValue, float64(total))
	ch <- prometheus.MustNewConstMetric(imbalanceDesc, prometheus.GaugeValue, float64(imbalanced))
	if c.Quorum == nil {
		return
	}
	leader := int32(-1)
	if id, ok := c.Quorum.LeaderID(); ok {
		leader = id
	}
	ch <- prometheus.MustNewConstMetric(raftLeaderDesc, prometheus.GaugeValue, float64(leader))
	if leader != c.NodeID {
		return
	}
	qs, err := c.Quorum.QuorumState()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(raftEpochDesc, prometheus.GaugeValue, float64(qs.LeaderEpoch))
	ch <- prometheus.MustNewConstMetric(raftHWDesc, prometheus.GaugeValue, float64(qs.HighWatermark))
	var end int64
	for _, v := range qs.Voters {
		end = max(end, v.LogEndOffset)
	}
	seen := map[[2]string]bool{}
	for role, rs := range map[string][]quorum.ReplicaState{"voter": qs.Voters, "observer": qs.Observers} {
		for _, r := range rs {
			key := [2]string{strconv.Itoa(int(r.ID)), role}
			if r.LogEndOffset < 0 || seen[key] {
				continue // no position known, or a node id twice (a replaced disk)
			}
			seen[key] = true
			ch <- prometheus.MustNewConstMetric(raftLagDesc, prometheus.GaugeValue, float64(end-r.LogEndOffset), key[0], key[1])
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// imagePartitionFamilies are kafka_exporter's per-partition series, from
// the image on the active controller: every partition once in the cluster.
var imagePartitionFamilies = []struct {
	name, help string
	value      func(p *metadata.PartitionImage) int64
}{
	{"kafka_topic_partition_leader", "Leader of the partition, -1 when offline (kafka_exporter's name).", func(p *metadata.PartitionImage) int64 { return int64(p.Leader) }},
	{"kafka_topic_partition_replicas", "Replicas of the partition (kafka_exporter's name).", func(p *metadata.PartitionImage) int64 { return int64(len(p.Replicas)) }},
	{"kafka_topic_partition_in_sync_replica", "In-sync replicas of the partition (kafka_exporter's name).", func(p *metadata.PartitionImage) int64 { return int64(len(p.ISR)) }},
	{"kafka_topic_partition_under_replicated_partition", "1 when the partition's ISR is smaller than its replicas (kafka_exporter's name).", func(p *metadata.PartitionImage) int64 {
		return b2i64(len(p.ISR) < len(p.Replicas))
	}},
	{"kafka_topic_partition_leader_is_preferred", "1 when the partition's leader is its first replica (kafka_exporter's name).", func(p *metadata.PartitionImage) int64 {
		return b2i64(len(p.Replicas) > 0 && p.Leader == p.Replicas[0])
	}},
}

// WriteFamilies implements metrics.FamilyWriter: the image's per-partition
// series, on the active controller.
func (c *Controller) WriteFamilies(w *metrics.GaugeWriter) {
	if !c.PerPartition || !c.IsActive() {
		return
	}
	topics := c.Image().Topics()
	for _, f := range imagePartitionFamilies {
		w.Family(f.name, f.help)
		for _, t := range topics {
			for _, p := range t.Partitions {
				w.Sample(f.name, t.Name, p.Partition, f.value(p))
			}
		}
	}
}
