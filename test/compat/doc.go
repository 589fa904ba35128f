// Package compat is Vltava's real-client compatibility suite.
//
// Every test starts a broker process (the vltava binary built from
// ./cmd/vltava, or $VLTAVA_BIN) on a free loopback port with a fresh data
// directory and drives it with unmodified Kafka clients: franz-go (kgo, kadm
// and raw kmsg requests), kafka-python and librdkafka (through
// python3-confluent-kafka) from Debian, and kcat. The tests assert the data
// that comes back (counts, keys, values, headers, order, offsets) and the
// exact Kafka error codes, never only the absence of an error.
//
// Run one suite with, e.g.,
//
//	go test -count=1 ./test/compat -run Kcat
//
// Set VLTAVA_COMPAT_IMPL=kfake to run the same suites against franz-go's
// kfake (built from ./bench/kfake) as a reference peer; tests that only make
// sense for Vltava skip in that mode, and only in that mode. The Debian client
// packages are installed by scripts/install-test-deps.sh; a test whose client
// is missing fails and says so.
package compat
