package tiered

import "github.com/prometheus/client_golang/prometheus"

// Collector exports a node's tiered-storage counters under the Prometheus
// JMX exporter's names of Kafka's remote-storage MBeans
// (kafka.server:type=BrokerTopicMetrics,name=RemoteCopyBytesPerSec →
// kafka_server_brokertopicmetrics_remotecopybytespersec_total), broker-wide
// as the series without a topic attribute are. Manager returns nil until
// the remote log manager runs; the counters then read zero and the lag
// gauges are left out, as they are not known yet.
type Collector struct {
	Manager func() *Manager
}

var remoteCounters = []struct {
	name, help string
	get        func(*Manager) int64
}{
	{"remotecopybytespersec", "Bytes of segments copied to remote storage.", func(m *Manager) int64 { return m.BytesCopied.Load() }},
	{"remotecopyrequestspersec", "Segments copied to remote storage.", func(m *Manager) int64 { return m.SegmentsCopied.Load() }},
	{"remotecopyerrorspersec", "Failed rounds of copying a partition's segments to remote storage.", func(m *Manager) int64 { return m.CopyErrors.Load() }},
	{"remotefetchbytespersec", "Bytes of record batches read from remote storage.", func(m *Manager) int64 { return m.BytesFetched.Load() }},
	{"remotefetchrequestspersec", "Reads served from remote storage.", func(m *Manager) int64 { return m.FetchRequests.Load() }},
	{"remotefetcherrorspersec", "Reads from remote storage that failed.", func(m *Manager) int64 { return m.FetchErrors.Load() }},
	{"remotedeleterequestspersec", "Remote segments deleted (retention, orphans, deleted records and topics).", func(m *Manager) int64 { return m.SegmentsDeleted.Load() }},
	{"remotedeleteerrorspersec", "Failed rounds of deleting remote segments.", func(m *Manager) int64 { return m.DeleteErrors.Load() }},
}

var remoteGauges = []struct {
	name, help string
	get        func(*Manager) int64
}{
	{"remotecopylagbytes", "Bytes of rolled segments below the last stable offset not yet in remote storage, over the partitions this node leads.", func(m *Manager) int64 { return m.CopyLagBytes.Load() }},
	{"remotecopylagsegments", "Rolled segments below the last stable offset not yet in remote storage, over the partitions this node leads.", func(m *Manager) int64 { return m.CopyLagSegments.Load() }},
	{"remotelogsizebytes", "Bytes in remote storage of the partitions this node leads.", func(m *Manager) int64 { return m.RemoteLogSizeBytes.Load() }},
}

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("kafka_server_brokertopicmetrics_"+name, help, nil, nil)
}

var (
	counterDescs = func() (ds []*prometheus.Desc) {
		for _, c := range remoteCounters {
			ds = append(ds, desc(c.name+"_total", c.help))
		}
		return ds
	}()
	gaugeDescs = func() (ds []*prometheus.Desc) {
		for _, g := range remoteGauges {
			ds = append(ds, desc(g.name, g.help))
		}
		return ds
	}()
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range counterDescs {
		ch <- d
	}
	for _, d := range gaugeDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	m := c.Manager()
	for i, s := range remoteCounters {
		var v int64
		if m != nil {
			v = s.get(m)
		}
		ch <- prometheus.MustNewConstMetric(counterDescs[i], prometheus.CounterValue, float64(v))
	}
	if m == nil || !m.ticked.Load() {
		return
	}
	for i, s := range remoteGauges {
		ch <- prometheus.MustNewConstMetric(gaugeDescs[i], prometheus.GaugeValue, float64(s.get(m)))
	}
}
