// Package cluster is Vltava's cluster robustness suite: it starts several
// nodes of the binary built from ./cmd/vltava (each a broker and a Raft
// controller voter, as Kafka's combined KRaft mode) on one machine, then
// kills, pauses, partitions and reassigns them, and fails one of a node's log
// dirs (through the storage fault test hook), under load from real clients
// (franz-go and librdkafka) and checks Kafka's replication guarantees on the
// data itself: no acknowledged acks=all record is lost, duplicated or
// reordered, leaders and controllers fail over, ISRs shrink and expand.
//
// Run it with `go test -count=1 ./test/cluster` (one test: add -run).
// VLTAVA_BIN selects a prebuilt binary; VLTAVA_CLUSTER_LOGS names a
// directory where every node's full output is kept when a test fails
// (default: a directory under os.TempDir, printed in the test log).
//
// The network-partition test needs root and `ip netns`: the nodes then run
// in network namespaces the test creates and removes; without them that one
// test is skipped and says why.
package cluster
