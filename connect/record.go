package connect

import "time"

// Header is one record header in Connect's form: a key and a schema'd value.
type Header struct {
	Key    string
	Schema *Schema
	Value  any
}

// Record is the part of a record that sources, sinks, converters and
// transformations share (Kafka Connect's ConnectRecord). Partition is nil
// when the producer's partitioner chooses it.
type Record struct {
	Topic       string
	Partition   *int32
	KeySchema   *Schema
	Key         any
	ValueSchema *Schema
	Value       any
	Timestamp   time.Time // zero: none
	Headers     []Header
}

// Header returns the last header with the key, or nil.
func (r *Record) Header(key string) *Header {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return &r.Headers[i]
		}
	}
	return nil
}

// Clone returns a copy that can be changed without changing r (the headers
// slice is copied; keys and values are shared, as transformations build new
// values rather than change old ones).
func (r *Record) Clone() *Record {
	c := *r
	c.Headers = append([]Header(nil), r.Headers...)
	return &c
}

// SourceRecord is what a source task returns: a record and the position in
// the source system it came from. SourcePartition and SourceOffset are
// schemaless maps (string keys; values string, number, bool or nil) stored in
// the offset storage under the connector's name.
type SourceRecord struct {
	Record
	SourcePartition map[string]any
	SourceOffset    map[string]any
}

// TimestampType is the Kafka timestamp type of a consumed record.
type TimestampType int8

// The timestamp types.
const (
	NoTimestampType TimestampType = -1
	CreateTime      TimestampType = 0
	LogAppendTime   TimestampType = 1
)

// SinkRecord is what a sink task receives: a record read from Kafka, with its
// offset. The Original* fields keep the Kafka coordinates before any
// transformation renamed the topic or partition (KIP-793).
type SinkRecord struct {
	Record
	KafkaOffset       int64
	TimestampType     TimestampType
	OriginalTopic     string
	OriginalPartition int32
	OriginalOffset    int64
}

// TopicPartition names one Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}
