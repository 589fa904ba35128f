// Package quorum is the metadata quorum: a hashicorp/raft cluster of the
// controller nodes (voters) and broker-only nodes (observers) whose log is
// the metadata log. RaftLog implements metadata.Log on top of it; the rest
// of the package is raft's plumbing: the FSM applying batches to the image
// (raft_fsm.go), the bbolt log and stable store (raft_store.go), the stream
// layer sharing the controller port between raft, the join RPC and the
// Kafka-protocol controller endpoint (raft_transport.go), the observer join
// (raft_join.go), the hclog adapter and DescribeQuorum's state.
//
// It imports package metadata (records, image, codec) and nothing above it.
package quorum
