// Package connect holds the Connect suites: standalone and distributed
// workers (the built binary, or the runtime in-process where a test needs
// its own plugins) against real Vltava brokers on loopback, driven through
// the REST API with net/http and checked with franz-go.
package connect
