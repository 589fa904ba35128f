package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaPythonLegacyResult mirrors kafka_python_legacy.py's output.
type kafkaPythonLegacyResult struct {
	Sent      []int64  `json:"sent"`
	Received  [][3]any `json:"received"`
	Committed *int64   `json:"committed"`
	End       *int64   `json:"end"`
}

// TestKafkaPythonOldAPIVersions: kafka-python pinned to old Kafka releases
// sends the API versions Kafka 4 removed (KIP-896) and Kafka 3.9 served:
// Produce v1/v2 with message formats v0/v1, Fetch v1-v3 (down-converted),
// ListOffsets v0, the v0 group APIs. Each release produces, consumes in a
// group and commits.
func TestKafkaPythonOldAPIVersions(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "kafka", "python3-kafka")
	b := StartBroker(t)
	adm := newAdmin(t, b)
	const n = 20
	for _, tc := range []struct{ api, compression string }{
		{"0.9", "none"}, {"0.9", "gzip"}, {"0.10", "gzip"}, {"0.10.1", "none"}, {"1.0", "gzip"},
	} {
		t.Run(tc.api+"-"+tc.compression, func(t *testing.T) {
			topic := uniqueTopic(t)
			createTopic(t, adm, topic, 1, nil)
			var res kafkaPythonLegacyResult
			runPythonScript(t, 120*time.Second, &res, "kafka_python_legacy.py", b.Addr(), topic, strconv.Itoa(n), tc.api, tc.compression)
			if len(res.Sent) != n || res.Sent[0] != 0 || res.Sent[n-1] != n-1 {
				t.Fatalf("sent offsets %v, want 0..%d", res.Sent, n-1)
			}
			if len(res.Received) != n {
				t.Fatalf("consumed %d records, want %d", len(res.Received), n)
			}
			for i, r := range res.Received {
				if fmt.Sprint(r[0]) != strconv.Itoa(i) || r[1] != fmt.Sprintf("k%d", i) || r[2] != fmt.Sprintf("v%d", i) {
					t.Fatalf("record %d: %v", i, r)
				}
			}
			if res.Committed == nil || *res.Committed != n {
				t.Errorf("committed %v, want %d", res.Committed, n)
			}
			if res.End != nil && *res.End != n {
				t.Errorf("end offset %d, want %d", *res.End, n)
			}
			checkStoredCodec(t, b, topic, n, tc.compression)
		})
	}
}

// TestLibrdkafkaOldAPIVersions: librdkafka told not to ask ApiVersions
// (api.version.request=false) sends the versions of its
// broker.version.fallback release, as it does against brokers before 0.10.
func TestLibrdkafkaOldAPIVersions(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	b := StartBroker(t)
	adm := newAdmin(t, b)
	const n = 20
	for _, tc := range []struct{ fallback, compression string }{
		{"0.9.0", "none"}, {"0.9.0", "gzip"}, {"0.9.0", "lz4"}, {"0.9.0", "snappy"}, {"0.10.0", "gzip"}, {"0.10.0", "snappy"},
	} {
		t.Run(tc.fallback+"-"+tc.compression, func(t *testing.T) {
			topic := uniqueTopic(t)
			createTopic(t, adm, topic, 1, nil)
			var res struct {
				Delivered []int64  `json:"delivered"`
				Received  [][3]any `json:"received"`
				Committed int64    `json:"committed"`
			}
			runPythonScript(t, 120*time.Second, &res, "librdkafka_legacy.py", b.Addr(), topic, strconv.Itoa(n), tc.fallback, tc.compression)
			if len(res.Delivered) != n || res.Delivered[n-1] != n-1 {
				t.Fatalf("delivered offsets %v, want 0..%d", res.Delivered, n-1)
			}
			if len(res.Received) != n {
				t.Fatalf("consumed %d records, want %d", len(res.Received), n)
			}
			for i, r := range res.Received {
				if fmt.Sprint(r[0]) != strconv.Itoa(i) || r[1] != fmt.Sprintf("k%d", i) || r[2] != fmt.Sprintf("v%d", i) {
					t.Fatalf("record %d: %v", i, r)
				}
			}
			if res.Committed != n {
				t.Errorf("committed %d, want %d", res.Committed, n)
			}
			checkStoredCodec(t, b, topic, n, tc.compression)
		})
	}
}

// checkStoredCodec reads partition 0 of topic with franz-go and checks that
// its n records are stored with the producer's codec, which the conversion
// of legacy message sets keeps.
func checkStoredCodec(t *testing.T, b *Broker, topic string, n int, compression string) {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	codec := map[string]uint8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}[compression]
	for _, r := range consume(t, cl, n, 30*time.Second) {
		if got := r.Attrs.CompressionType(); got != codec {
			t.Fatalf("offset %d stored with codec %d, want %d (%s)", r.Offset, got, codec, compression)
		}
	}
}
