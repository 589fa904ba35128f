// Package txn is the transaction coordinator (KIP-98): it owns the
// transactional ids whose __transaction_state partition is led by this
// broker, keeps one state machine per id, persists every transition in
// that partition in Kafka's TransactionLog schemas, and completes
// transactions by writing WriteTxnMarkers to the leaders of the partitions
// they touched.
//
// A transactional id lives in partition abs(javaHashCode(id)) %
// transaction.state.log.num.partitions, as Kafka places it. When this
// broker becomes the leader of such a partition, the partition is replayed
// (last record per key wins, tombstones delete); transactions found in
// PrepareCommit or PrepareAbort get their markers sent again and are then
// completed, so a coordinator that died in the middle of a commit leaves
// every transaction fully committed or fully aborted.
//
// States and the transitions between them (Kafka's TransactionState):
//
//	Empty             ← Empty, CompleteCommit, CompleteAbort        (InitProducerId)
//	Ongoing           ← Empty, Ongoing, CompleteCommit, CompleteAbort (AddPartitionsToTxn)
//	PrepareCommit     ← Ongoing                                      (EndTxn commit)
//	PrepareAbort      ← Ongoing, PrepareEpochFence                   (EndTxn abort, timeout, fencing)
//	                    Empty, CompleteCommit, CompleteAbort         (KIP-890 TV2: abort of nothing, to bump the epoch)
//	CompleteCommit    ← PrepareCommit                                (markers written)
//	CompleteAbort     ← PrepareAbort                                 (markers written)
//	PrepareEpochFence ← Ongoing                                      (InitProducerId or timeout fencing an open transaction; never written)
//	Dead              ← Empty, CompleteCommit, CompleteAbort         (transactional.id.expiration.ms)
//
// Locking. Each transactional id has its own mutex (txnEntry.mu), held for
// a whole transition: the checks, the append of its record to
// __transaction_state and the wait for the in-sync replicas (acks=all), so
// the log's order is the order the state changed in. Lock order: a
// transaction's lock, then the coordinator's lock (the id map and the
// partition table), then the partition's log locks; the marker sender's
// lock is a leaf, and no lock is held across a WriteTxnMarkers call.
//
// Goroutines: the marker sender (one per coordinator; it sends one
// WriteTxnMarkers request per destination broker per round, in parallel,
// and retries what failed), one short-lived load goroutine per partition
// that becomes led here, and two tickers: the timed-out transaction abort
// (transaction.abort.timed.out.transaction.cleanup.interval.ms) and the
// expired transactional id removal
// (transaction.remove.expired.transaction.cleanup.interval.ms).
package txn
