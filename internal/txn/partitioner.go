package txn

import "unicode/utf16"

// PartitionFor is the __transaction_state partition that owns a
// transactional id: abs(javaHashCode(id)) % partitions, Kafka's
// TransactionStateManager.partitionFor (Utils.abs maps MinInt32 to 0).
func PartitionFor(transactionalID string, numPartitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(transactionalID)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % numPartitions
}
