// Package metrics is the broker's Prometheus metrics: the registry behind
// the admin listener's /metrics, and the counters the request paths add to.
//
// Series are named as the Prometheus JMX exporter's usual Kafka rules name
// Kafka's MBeans (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec
// → kafka_server_brokertopicmetrics_messagesin_total), so dashboards built
// for Kafka work unchanged; docs/METRICS.md lists every series.
//
// Two kinds of source:
//
//   - Hot-path counters (requests, bytes and messages in and out, failed
//     requests) are package-level atomics: the produce, fetch and dispatch
//     paths pay one atomic add per event and take no lock. They are read at
//     scrape time by this package's collector. They are process-wide, as a
//     JVM's MBeans are: one node per process.
//   - State (under-replicated partitions, log sizes, the active controller,
//     consumer lag) is never updated on the hot path: collectors registered
//     with Registry.Register read the partitions and the metadata image when
//     Prometheus scrapes.
//
// The event counters other subsystems report into (AuthenticationFailed,
// QuotaThrottled, IsrShrunk, IsrExpanded, LogFlushed) are plain functions,
// safe from any goroutine.
package metrics
