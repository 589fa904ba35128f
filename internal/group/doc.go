// Package group is the group coordinator for Kafka's classic group protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the KIP-848 consumer group
// protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe; see
// consumer_group.go) and for committed offsets
// (OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete), with the admin views
// (DescribeGroups, ListGroups, DeleteGroups).
//
// # Ownership and concurrency
//
// A group is owned by one partition of __consumer_offsets,
// PartitionFor(groupID, partitions); this broker coordinates the groups of
// the partitions it leads. Each group has its own mutex (Group.mu), not a
// goroutine: a group's work is short (validate, change state, maybe append a
// batch to its partition) and comes from request goroutines and timers that
// already exist, so a mutex keeps requests of different groups fully
// parallel without a goroutine and a mailbox per idle group (a broker may
// hold hundreds of thousands of groups, most idle). The coordinator's own
// lock (Coordinator.mu) guards only the group map and the partition table.
// Lock order: a group's lock, then the coordinator's; never the reverse.
//
// A JoinGroup or SyncGroup that must wait for the rest of the group parks
// its connection's goroutine on a one-slot channel owned by the member; the
// rebalance that completes it sends the response there. Closing the
// connection cancels the request's context and the goroutine returns; the
// member stays in the group until its session expires, as in Kafka.
//
// Timers are time.AfterFunc: one per member for its session (reset by every
// heartbeat), one per group for the current rebalance phase (the initial
// rebalance delay, the rebalance timeout, or the wait for SyncGroup), one per
// pending member (KIP-394), and one per coordinator for offset expiry. A timer
// that fires late checks a sequence number under the group lock and does
// nothing if it was superseded.
//
// # Persistence
//
// Group metadata and offsets are records in __consumer_offsets (see
// records.go), appended through the partition while the group's lock is held
// so that the log's order is the order the state changed in; the append is a
// page-cache write, as for any produce. A commit or a completed rebalance is
// acknowledged only once its append succeeded. When this broker becomes
// leader of a partition it replays the partition from its log start to its
// high watermark (the last record per key wins; null values delete) and
// answers COORDINATOR_LOAD_IN_PROGRESS for its groups until then.
//
// Transactional offsets (TxnOffsetCommit, txn_offsets.go) are appended as a
// transactional batch of the producer and held pending per (group,
// producer) until the transaction's marker reaches the partition
// (CompleteTransaction: applied on commit, dropped on abort); the replay
// holds a transactional batch's records until its marker likewise, so the
// offsets of an aborted transaction are never applied.
package group
