package group

import "unicode/utf16"

// javaStringHashCode is Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over the string's UTF-16 code units, in wrapping 32-bit arithmetic. Kafka
// places a group with it, so a group id outside the BMP (a surrogate pair in
// Java) must be hashed as two code units, not one rune.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// kafkaAbs is Kafka's Utils.abs: the absolute value, except that
// math.MinInt32 maps to 0 (n & 0x7fffffff), so the result is never negative.
func kafkaAbs(n int32) int32 {
	if n == -1<<31 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}

// PartitionFor is the __consumer_offsets partition that owns groupID when
// the topic has numPartitions partitions, computed as Kafka's
// GroupCoordinator.partitionFor does: abs(groupId.hashCode) % numPartitions.
func PartitionFor(groupID string, numPartitions int32) int32 {
	return kafkaAbs(javaStringHashCode(groupID)) % numPartitions
}
