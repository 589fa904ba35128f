package streams

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumedRecord is an input record as a TimestampExtractor sees it: where
// it was read, its record timestamp, and its deserialized key and value
// (nil for null).
type ConsumedRecord struct {
	Topic     string             // the topic read from
	Partition int32              // its partition
	Offset    int64              // the record's offset
	Timestamp int64              // the record timestamp, ms since the epoch
	Key       any                // the deserialized key (nil for null)
	Value     any                // the deserialized value (nil for null)
	Headers   []kgo.RecordHeader // the record's headers
}

// TimestampExtractor gives an input record its event time (ms since the
// epoch), as Kafka Streams' TimestampExtractor. partitionTime is the
// highest timestamp the task has extracted so far from that topic
// partition, or -1 before the first. A negative result skips the record
// (logged and counted); an error fails the stream thread.
type TimestampExtractor func(r ConsumedRecord, partitionTime int64) (int64, error)

// FailOnInvalidTimestamp uses the record timestamp and fails on a negative
// one: Kafka Streams' default extractor.
func FailOnInvalidTimestamp(r ConsumedRecord, _ int64) (int64, error) {
	if r.Timestamp < 0 {
		return 0, fmt.Errorf("streams: record %s-%d@%d has invalid (negative) timestamp %d (default.timestamp.extractor=FailOnInvalidTimestamp)",
			r.Topic, r.Partition, r.Offset, r.Timestamp)
	}
	return r.Timestamp, nil
}

// LogAndSkipOnInvalidTimestamp uses the record timestamp and skips records
// whose timestamp is negative.
func LogAndSkipOnInvalidTimestamp(r ConsumedRecord, _ int64) (int64, error) {
	return r.Timestamp, nil
}

// UsePartitionTimeOnInvalidTimestamp uses the record timestamp, or the
// partition time for a record whose timestamp is negative; it fails if
// there is no partition time yet.
func UsePartitionTimeOnInvalidTimestamp(r ConsumedRecord, partitionTime int64) (int64, error) {
	if r.Timestamp >= 0 {
		return r.Timestamp, nil
	}
	if partitionTime < 0 {
		return 0, fmt.Errorf("streams: record %s-%d@%d has invalid timestamp %d and there is no partition time to use (default.timestamp.extractor=UsePartitionTimeOnInvalidTimestamp)",
			r.Topic, r.Partition, r.Offset, r.Timestamp)
	}
	return partitionTime, nil
}

// WallclockTimestampExtractor gives every record the current wall-clock
// time (processing-time semantics).
func WallclockTimestampExtractor(ConsumedRecord, int64) (int64, error) {
	return time.Now().UnixMilli(), nil
}

// extractorNames are the default.timestamp.extractor values ParseConfig
// accepts: Kafka Streams' built-in classes.
var extractorNames = map[string]TimestampExtractor{
	"FailOnInvalidTimestamp":             FailOnInvalidTimestamp,
	"LogAndSkipOnInvalidTimestamp":       LogAndSkipOnInvalidTimestamp,
	"UsePartitionTimeOnInvalidTimestamp": UsePartitionTimeOnInvalidTimestamp,
	"WallclockTimestampExtractor":        WallclockTimestampExtractor,
}

// WithTimestampExtractor sets the extractor of a source (NewStream,
// NewTable, NewGlobalTable), overriding the configured default, as Kafka
// Streams' Consumed.withTimestampExtractor.
func WithTimestampExtractor(x TimestampExtractor) Option {
	return optFunc(func(o *opts) { o.tsx = x; o.mark("WithTimestampExtractor") })
}
