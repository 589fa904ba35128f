package config

// REST Proxy keys: the embedded REST Proxy's settings, Confluent's REST
// Proxy names under the rest. prefix (its standalone form, vltava rest
// serve, takes them without it).
var restDefs = []Def{
	def("rest.listeners", List, "http://127.0.0.1:8082", "Endpoints of the embedded REST Proxy (Confluent REST Proxy v2 and v3 API), as http://host:port entries. Empty: no REST Proxy. An endpoint that cannot be bound stops start-up. The proxy is a Kafka client of this node's PLAINTEXT listener (rest.authentication.method=NONE, acting as User:ANONYMOUS) or of its first SASL listener offering rest.client.sasl.mechanism (BASIC).", custom("http://host:port,...", validateHTTPListeners), vltavaOnly()),
	def("rest.authentication.method", String, "NONE", "How REST callers authenticate (Confluent's authentication.method): NONE, or BASIC (HTTP basic auth; the proxy's Kafka connection for the request authenticates with the same user and password over SASL, so the broker's ACLs decide what the caller may do, and a refusal is 401 or 403 with Confluent's error codes 40101 and 40301).", oneOf("NONE", "BASIC"), vltavaOnly()),
	def("rest.client.sasl.mechanism", String, "PLAIN", "The SASL mechanism the REST Proxy uses with each request's basic-auth credentials (rest.authentication.method=BASIC).", oneOf("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), vltavaOnly()),
	def("rest.consumer.instance.timeout.ms", Long, "300000", "A v2 consumer instance not used for this long is closed and leaves its group (Confluent's consumer.instance.timeout.ms).", atLeast(1), vltavaOnly()),
	def("rest.consumer.request.timeout.ms", Long, "1000", "The longest a v2 records GET waits for records when it gives no timeout (Confluent's consumer.request.timeout.ms).", atLeast(1), vltavaOnly()),
	def("rest.consumer.request.max.bytes", Long, "67108864", "The default and upper bound of a v2 records GET's max_bytes (Confluent's consumer.request.max.bytes).", atLeast(1), vltavaOnly()),
	def("rest.max.request.bytes", Long, "67108864", "The largest request body the REST Proxy reads, and the largest single record of a v3 streaming produce; larger ones are refused with 413 (error code 41301).", atLeast(1), vltavaOnly()),
	def("rest.schema.registry.url", String, "http://127.0.0.1:8081", "The schema registry the REST Proxy looks AVRO, JSONSCHEMA and PROTOBUF schemas up in (Confluent's schema.registry.url). Not set while the node runs its own registry (schema.registry.listeners): that registry, at the address it is bound to. A registry with HTTP Basic takes the credentials in the URL's user info (http://user:password@host:8081, Confluent's basic.auth.credentials.source=URL). Empty: those formats are refused.", vltavaOnly()),
}

// fillRest sets the REST Proxy fields from the parsed keys.
func (b *Broker) fillRest(str func(string) string) {
	b.RestListeners, _ = ParseHTTPListeners(str("rest.listeners")) // validated already
	b.RestAuthenticationMethod = str("rest.authentication.method")
	b.RestClientSASLMechanism = str("rest.client.sasl.mechanism")
	b.RestConsumerInstanceTimeoutMs = parseInt(str("rest.consumer.instance.timeout.ms"))
	b.RestConsumerRequestTimeoutMs = parseInt(str("rest.consumer.request.timeout.ms"))
	b.RestConsumerRequestMaxBytes = parseInt(str("rest.consumer.request.max.bytes"))
	b.RestMaxRequestBytes = parseInt(str("rest.max.request.bytes"))
	b.RestSchemaRegistryURL = str("rest.schema.registry.url")
}
