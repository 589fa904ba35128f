// Package connect is the SDK for Vltava Connect: the data model (schemas,
// structs and records, as Kafka Connect's org.apache.kafka.connect.data), the
// connector and task interfaces a source or sink implements, configuration
// definitions with validation, and the plugin registry through which the
// worker finds connectors, converters, transformations and predicates by the
// class names users put in their configs.
//
// A connector registers itself in an init function:
//
//	func init() {
//		connect.RegisterSource("com.example.MySourceConnector", "1.0", func() connect.SourceConnector { return &mySource{} })
//	}
//
// and a Go program that links it in (a blank import) runs it on a worker
// started with package connect/runtime.
package connect
