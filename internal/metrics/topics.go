package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// TopicCounters are Kafka's BrokerTopicMetrics for one topic (or, for
// AllTopics, the whole broker). Every field is added to with one atomic
// add on the produce and fetch paths.
type TopicCounters struct {
	MessagesIn             atomic.Uint64
	BytesIn                atomic.Uint64
	BytesOut               atomic.Uint64
	TotalProduceRequests   atomic.Uint64
	FailedProduceRequests  atomic.Uint64
	TotalFetchRequests     atomic.Uint64
	FailedFetchRequests    atomic.Uint64
	ProduceMessageConvs    atomic.Uint64
	ReplicationBytesIn     atomic.Uint64
	ReplicationBytesOut    atomic.Uint64
	InvalidMessageCrcCount atomic.Uint64
}

var (
	// AllTopics is the broker-wide BrokerTopicMetrics (no topic tag).
	AllTopics TopicCounters
	// topics maps a topic name to its *TopicCounters; entries are added
	// on a topic's first produce or fetch and dropped when the topic is
	// no longer in the image (ForgetTopicsExcept).
	topics sync.Map
)

// Topic returns the counters of one topic. The common case is a sync.Map
// load: no lock on the produce and fetch paths.
func Topic(name string) *TopicCounters {
	if c, ok := topics.Load(name); ok {
		return c.(*TopicCounters)
	}
	c, _ := topics.LoadOrStore(name, new(TopicCounters))
	return c.(*TopicCounters)
}

// ForgetTopicsExcept drops the counters of topics for which exists is
// false (deleted topics), as Kafka removes a deleted topic's MBeans.
func ForgetTopicsExcept(exists func(topic string) bool) {
	topics.Range(func(k, _ any) bool {
		if !exists(k.(string)) {
			topics.Delete(k)
		}
		return true
	})
}

// brokerTopicSeries are the BrokerTopicMetrics meters, in the order the
// collector reads them.
var brokerTopicSeries = []struct {
	name, help string
	get        func(*TopicCounters) *atomic.Uint64
}{
	{"messagesin", "Records appended as leader (BrokerTopicMetrics MessagesInPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.MessagesIn }},
	{"bytesin", "Bytes of record batches produced to this broker as leader (BytesInPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.BytesIn }},
	{"bytesout", "Bytes of record batches sent to consumers (BytesOutPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.BytesOut }},
	{"totalproducerequests", "Produce requests per partition (TotalProduceRequestsPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.TotalProduceRequests }},
	{"failedproducerequests", "Produce requests per partition that failed (FailedProduceRequestsPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.FailedProduceRequests }},
	{"totalfetchrequests", "Consumer fetches per partition (TotalFetchRequestsPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.TotalFetchRequests }},
	{"failedfetchrequests", "Consumer fetches per partition that failed (FailedFetchRequestsPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.FailedFetchRequests }},
	{"producemessageconversions", "Produced batches converted from message format v0/v1 (ProduceMessageConversionsPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.ProduceMessageConvs }},
	{"replicationbytesin", "Bytes appended as follower (ReplicationBytesInPerSec; broker-wide only).", func(c *TopicCounters) *atomic.Uint64 { return &c.ReplicationBytesIn }},
	{"replicationbytesout", "Bytes sent to followers (ReplicationBytesOutPerSec; broker-wide only).", func(c *TopicCounters) *atomic.Uint64 { return &c.ReplicationBytesOut }},
	{"invalidmessagecrcrecordspersec", "Produced batches refused for a bad CRC (InvalidMessageCrcRecordsPerSec).", func(c *TopicCounters) *atomic.Uint64 { return &c.InvalidMessageCrcCount }},
}

// topicCollector exposes BrokerTopicMetrics: the broker-wide series with
// an empty topic label (which Prometheus stores as no label, as the JMX
// exporter's AllTopics series), and per-topic ones unless the level is
// "broker".
type topicCollector struct {
	perTopic bool
	descs    []*prometheus.Desc
}

func newTopicCollector(perTopic bool) *topicCollector {
	c := &topicCollector{perTopic: perTopic}
	for _, s := range brokerTopicSeries {
		name := "kafka_server_brokertopicmetrics_" + s.name + "_total"
		c.descs = append(c.descs, prometheus.NewDesc(name, s.help, []string{"topic"}, nil))
	}
	return c
}

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range c.descs {
		ch <- c.descs[i]
	}
}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	for i, s := range brokerTopicSeries {
		ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.CounterValue, float64(s.get(&AllTopics).Load()), "")
	}
	if !c.perTopic {
		return
	}
	topics.Range(func(k, v any) bool {
		tc := v.(*TopicCounters)
		for i, s := range brokerTopicSeries {
			if s.name == "replicationbytesin" || s.name == "replicationbytesout" {
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.CounterValue, float64(s.get(tc).Load()), k.(string))
		}
		return true
	})
}
