package lag

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exposes the lag series as kafka_exporter names them
// (kafka_consumergroup_lag, kafka_consumergroup_current_offset, their _sum
// per topic) plus kafka_consumergroup_lag_seconds and Burrow's status as
// kafka_consumergroup_status.
type Collector struct {
	Evaluator *Evaluator
	// PerPartition is false when metrics.partition.level is "broker":
	// only the per-group and per-topic sums are exposed.
	PerPartition bool
}

var (
	lagDesc = prometheus.NewDesc("kafka_consumergroup_lag",
		"High watermark minus the group's committed offset (kafka_exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	currentDesc = prometheus.NewDesc("kafka_consumergroup_current_offset",
		"The group's committed offset (kafka_exporter's name).", []string{"consumergroup", "topic", "partition"}, nil)
	lagSumDesc = prometheus.NewDesc("kafka_consumergroup_lag_sum",
		"The group's lag summed over a topic's partitions (kafka_exporter's name).", []string{"consumergroup", "topic"}, nil)
	currentSumDesc = prometheus.NewDesc("kafka_consumergroup_current_offset_sum",
		"The group's committed offsets summed over a topic's partitions (kafka_exporter's name).", []string{"consumergroup", "topic"}, nil)
	lagStableDesc = prometheus.NewDesc("kafka_consumergroup_lag_stable",
		"Last stable offset minus the group's committed offset: the lag of a read_committed consumer, which cannot read into an open transaction (0 when the group committed past the LSO).", []string{"consumergroup", "topic", "partition"}, nil)
	lagStableSumDesc = prometheus.NewDesc("kafka_consumergroup_lag_stable_sum",
		"The group's kafka_consumergroup_lag_stable summed over a topic's partitions.", []string{"consumergroup", "topic"}, nil)
	lagSecondsDesc = prometheus.NewDesc("kafka_consumergroup_lag_seconds",
		"Age in seconds of the record at the group's committed offset: how far behind in time the group is (0 when caught up).", []string{"consumergroup", "topic", "partition"}, nil)
	membersDesc = prometheus.NewDesc("kafka_consumergroup_members",
		"Members of the group (kafka_exporter's name).", []string{"consumergroup"}, nil)
	statusDesc = prometheus.NewDesc("kafka_consumergroup_status",
		"Burrow's status of the group over the sampling window: 0 NOTFOUND, 1 OK, 2 WARN, 3 ERR.", []string{"consumergroup"}, nil)
	partitionStatusDesc = prometheus.NewDesc("kafka_consumergroup_partition_status",
		"Burrow's status of one partition of the group: 0 NOTFOUND, 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND.", []string{"consumergroup", "topic", "partition"}, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{membersDesc, lagDesc, currentDesc, lagSumDesc, currentSumDesc, lagStableDesc, lagStableSumDesc, lagSecondsDesc, statusDesc, partitionStatusDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	type sums struct{ lag, stable, current int64 }
	for _, g := range c.Evaluator.Current() {
		ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, float64(g.Status), g.Group)
		ch <- prometheus.MustNewConstMetric(membersDesc, prometheus.GaugeValue, float64(g.Members), g.Group)
		perTopic := map[string]*sums{}
		for _, p := range g.Partitions {
			s := perTopic[p.Topic]
			if s == nil {
				s = &sums{}
				perTopic[p.Topic] = s
			}
			s.lag += p.Lag
			s.stable += p.StableLag
			s.current += p.CurrentOffset
			if !c.PerPartition {
				continue
			}
			idx := strconv.Itoa(int(p.Partition))
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(p.Lag), g.Group, p.Topic, idx)
			ch <- prometheus.MustNewConstMetric(currentDesc, prometheus.GaugeValue, float64(p.CurrentOffset), g.Group, p.Topic, idx)
			ch <- prometheus.MustNewConstMetric(lagStableDesc, prometheus.GaugeValue, float64(p.StableLag), g.Group, p.Topic, idx)
			ch <- prometheus.MustNewConstMetric(lagSecondsDesc, prometheus.GaugeValue, p.LagSeconds, g.Group, p.Topic, idx)
			ch <- prometheus.MustNewConstMetric(partitionStatusDesc, prometheus.GaugeValue, float64(p.Status), g.Group, p.Topic, idx)
		}
		for t, s := range perTopic {
			ch <- prometheus.MustNewConstMetric(lagSumDesc, prometheus.GaugeValue, float64(s.lag), g.Group, t)
			ch <- prometheus.MustNewConstMetric(currentSumDesc, prometheus.GaugeValue, float64(s.current), g.Group, t)
			ch <- prometheus.MustNewConstMetric(lagStableSumDesc, prometheus.GaugeValue, float64(s.stable), g.Group, t)
		}
	}
}
