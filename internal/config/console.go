package config

// Web console keys (Vltava's own): the console the node serves
// (internal/console), with the TLS and authentication keys every HTTP
// service has under its prefix.
var consoleDefs = append([]Def{
	def("console.listeners", List, "http://127.0.0.1:8080", "Endpoints of the web console (overview, topics, messages, consumer groups: docs/CONSOLE.md), as http://host:port or https://host:port entries. Empty: no console. The console is a Kafka client of this node's own listener, as the embedded schema registry is. If the default endpoint is already in use (another node on the machine), the node starts without it and logs a warning; an endpoint set explicitly that cannot be bound stops start-up.", custom("http://host:port,...", validateHTTPListeners), vltavaOnly()),
	def("console.read.only", Boolean, "false", "Refuse every change made through the web console (creating and deleting topics) with 403; its pages still show everything.", vltavaOnly()),
}, httpServiceDefs("console.", "the web console", "vltava-console")...)

// fillConsole sets the console fields from the parsed keys.
func (b *Broker) fillConsole(str func(string) string) {
	b.ConsoleListeners, _ = ParseHTTPListeners(str("console.listeners")) // validated already
	b.ConsoleReadOnly = parseBool(str("console.read.only"))
}
