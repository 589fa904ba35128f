// Package state holds the collectors that read broker state when Prometheus
// scrapes, rather than counting on the hot path: the hosted partitions
// (ReplicaManager gauges, log sizes and offsets), the metadata image and
// quorum (KafkaController gauges, raft metrics). Each reads lock-free
// snapshots (the image, the partitions' atomic offsets and settings), so a
// scrape never holds a lock a produce or fetch needs.
package state
