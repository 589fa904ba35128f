// Package streams is a stream-processing library in Kafka Streams' model,
// for Go programs, against any Kafka-compatible cluster (through
// franz-go).
//
// A Builder declares a topology with the DSL: streams (NewStream), tables
// (NewTable) and global tables (NewGlobalTable) read from topics with
// serdes, stateless operators (Filter, Map, FlatMap, Split, Merge, To,
// ...), groupings of streams and of tables (TableGroupBy, with
// subtractors) with Count, Reduce and Aggregate, windows (tumbling,
// hopping, sliding, session) with grace and Suppress, and joins
// (stream-stream windowed, stream-table, stream-globaltable, table-table,
// and the foreign-key table-table join).
// Process runs a Processor for what the DSL cannot say. Serdes: String,
// Bytes, Int64, Int32, JSON, and RegistrySerde for Avro, JSON Schema and
// Protobuf in a schema registry's wire format. Event time comes
// from a TimestampExtractor (default.timestamp.extractor, or per source
// with WithTimestampExtractor).
//
// Operators that keep the record types are methods (s.Filter(pred));
// operators producing new types are package functions taking their input
// first (streams.MapValues(s, fn), streams.Join(left, right, joiner, w)),
// because Go methods cannot declare type parameters. Where an operator
// needs a serde for a new type and none is given (WithKeySerde,
// WithValueSerde), it uses String, Bytes, Int64 or Int32 for those types
// and JSON for any other.
//
// Build yields a Topology. NewTestDriver runs it in-process with no broker
// (Kafka Streams' TopologyTestDriver); New and App.Start run it against a
// cluster under application.id, with Kafka Streams' internal topic names
// (<application.id>-<store>-changelog, <application.id>-<name>-repartition),
// processing guarantees (at_least_once, exactly_once_v2) and standby
// replicas (num.standby.replicas).
// StoreHandler serves a store's interactive queries over HTTP. See
// README.md in this directory for the mapping of Kafka Streams concepts.
package streams
