package config

import "strings"

// Schema registry keys: the embedded registry's listener and store (the
// listener key is Vltava's; the rest are Confluent Schema Registry's names
// under schema.registry.) and confluent.schema.registry.url, Confluent
// Server's key for where broker-side schema validation looks ids up.
var schemaRegistryDefs = append([]Def{
	def("schema.registry.listeners", List, "", "Endpoints of the embedded schema registry (Confluent Schema Registry's REST API), as http://host:port entries. Empty: none. Vltava default on a single-node cluster: http://127.0.0.1:8081; if that endpoint is already in use the node starts without the registry and logs a warning, while an endpoint set explicitly that cannot be bound stops start-up.", custom("http://host:port,...", validateHTTPListeners), vltavaOnly()),
	def("schema.registry.kafkastore.topic", String, "_schemas", "Compacted topic the embedded registry keeps its schemas, configs and modes in (Confluent's kafkastore.topic).", nonEmpty(), vltavaOnly()),
	def("schema.registry.kafkastore.topic.replication.factor", Int, "3", "Replication factor the registry creates its topic with (Confluent's kafkastore.topic.replication.factor); a cluster with fewer brokers gets one replica per broker.", atLeast(1), vltavaOnly()),
	def("schema.registry.schema.compatibility.level", String, "backward", "The registry's global compatibility level until one is set through /config (Confluent's schema.compatibility.level).", oneOfFold("none", "backward", "backward_transitive", "forward", "forward_transitive", "full", "full_transitive"), vltavaOnly()),
	def("schema.registry.group.id", String, "schema-registry", "Consumer group the registry nodes sharing a kafkastore topic elect their leader in, which alone writes; the others forward writes to it (Confluent's schema.registry.group.id).", nonEmpty(), vltavaOnly()),
	def("schema.registry.request.max.bytes", Int, "16777216", "Largest request body the registry reads; larger ones are answered 413.", atLeast(1), vltavaOnly()),
	def("confluent.schema.registry.url", String, "", "URL of the schema registry broker-side schema validation (confluent.key.schema.validation, confluent.value.schema.validation) looks schema ids up in. Empty: the node's embedded registry (schema.registry.listeners)."),
}, httpServiceDefs("schema.registry.", "the schema registry", "SchemaRegistry")...)

// fillSchemaRegistry sets the registry fields from the parsed keys.
func (b *Broker) fillSchemaRegistry(str func(string) string) {
	b.SchemaRegistryListeners, _ = ParseHTTPListeners(str("schema.registry.listeners")) // validated already
	b.SchemaRegistryTopic = str("schema.registry.kafkastore.topic")
	b.SchemaRegistryReplicationFactor = int(parseInt(str("schema.registry.kafkastore.topic.replication.factor")))
	b.SchemaRegistryCompatibilityLevel = strings.ToUpper(str("schema.registry.schema.compatibility.level"))
	b.SchemaRegistryRequestMaxBytes = parseInt(str("schema.registry.request.max.bytes"))
	b.SchemaRegistryGroupID = str("schema.registry.group.id")
	b.SchemaRegistryURL = strings.TrimSpace(str("confluent.schema.registry.url"))
}

// Topic names of the schema validation keys.
const (
	TopicNameStrategy = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
	whySubjectNaming  = "only TopicNameStrategy (subject <topic>-key / <topic>-value) is supported"
)

// schemaValidationTopicDefs are Confluent Server's topic keys for
// broker-side schema validation, and Vltava's own names for the same.
var schemaValidationTopicDefs = []Def{
	def("confluent.key.schema.validation", Boolean, "false", "Refuse records whose key is not in the schema registry's wire format (magic byte 0 and a 4-byte schema id) with an id registered under the subject <topic>-key: INVALID_RECORD with a per-record error."),
	def("confluent.value.schema.validation", Boolean, "false", "Refuse records whose value is not in the schema registry's wire format with an id registered under the subject <topic>-value: INVALID_RECORD with a per-record error."),
	def("vltava.key.schema.validation", Boolean, "false", "Vltava's name for confluent.key.schema.validation; either set enables the check.", vltavaOnly()),
	def("vltava.value.schema.validation", Boolean, "false", "Vltava's name for confluent.value.schema.validation; either set enables the check.", vltavaOnly()),
	def("confluent.key.subject.name.strategy", String, TopicNameStrategy, "How the subject a key's schema id must be registered under is named."),
	def("confluent.value.subject.name.strategy", String, TopicNameStrategy, "How the subject a value's schema id must be registered under is named."),
}
