// Package registry is a schema registry speaking Confluent Schema
// Registry's REST API: subjects and their versions, schemas by global id,
// compatibility levels and checks, modes, soft and permanent deletes, for
// Avro, JSON Schema and Protobuf schemas with references.
//
// Its state lives in the compacted _schemas topic in the registry's record
// format (records.go), read to the end at start and followed afterwards,
// so ids are global and stable across restarts and several registry nodes
// share one state. It is a Kafka client of the cluster (franz-go kgo/kadm),
// embedded in `vltava server` or standalone (`vltava registry serve`).
//
// Ownership: the State is written only by the Store's reader goroutine
// (one owner), as records come back from the topic; handlers read it under
// its read lock. Writes run on one node of those sharing the topic, the
// leader they elect in the consumer group schema.registry.group.id
// (leader.go; the others forward writes to it), where the Service's write
// mutex serialises id and version allocation.
package registry
