package cli

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

func TestPlanReset(t *testing.T) {
	offs := partitionOffsets{start: 10, end: 100, committed: 50, atTime: 70}
	for _, tc := range []struct {
		name string
		s    resetStrategy
		o    partitionOffsets
		want int64
		err  bool
	}{
		{"earliest is log start", resetStrategy{kind: "earliest"}, offs, 10, false},
		{"latest is log end", resetStrategy{kind: "latest"}, offs, 100, false},
		{"offset inside range", resetStrategy{kind: "offset", offset: 42}, offs, 42, false},
		{"offset below start clamps up", resetStrategy{kind: "offset", offset: 3}, offs, 10, false},
		{"offset past end clamps down", resetStrategy{kind: "offset", offset: 500}, offs, 100, false},
		{"shift forward from committed", resetStrategy{kind: "shift", shift: 5}, offs, 55, false},
		{"shift back past start clamps", resetStrategy{kind: "shift", shift: -100}, offs, 10, false},
		{"shift without commit fails", resetStrategy{kind: "shift", shift: 1}, partitionOffsets{start: 0, end: 5, committed: -1}, 0, true},
		{"datetime uses first offset at time", resetStrategy{kind: "datetime"}, offs, 70, false},
		{"datetime after last record is log end", resetStrategy{kind: "duration"}, partitionOffsets{start: 0, end: 9, atTime: -1}, 9, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planReset(tc.s, tc.o)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("planReset = %d, %v; want %d, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestTopicPartitionsFlag(t *testing.T) {
	for _, tc := range []struct {
		in    string
		topic string
		parts []int32
		err   bool
	}{
		{"orders", "orders", nil, false},
		{"orders:0,2", "orders", []int32{0, 2}, false},
		{"orders:x", "", nil, true},
		{":1", "", nil, true},
	} {
		topic, parts, err := topicPartitionsFlag(tc.in)
		if (err != nil) != tc.err || topic != tc.topic || len(parts) != len(tc.parts) {
			t.Errorf("%q: %q %v %v", tc.in, topic, parts, err)
			continue
		}
		for i := range parts {
			if parts[i] != tc.parts[i] {
				t.Errorf("%q: partitions %v, want %v", tc.in, parts, tc.parts)
			}
		}
	}
}

func TestClientProps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string
		err      string
		warnings int
		check    func(clientProps) bool
	}{
		{"defaults", "", "", 0, func(p clientProps) bool { return p.clientID == "vltava-cli" && p.requestTimeout == 30*time.Second }},
		{"known keys, both separators, comments", "# c\n! c\nclient.id = me\nrequest.timeout.ms: 1500\n", "", 0,
			func(p clientProps) bool { return p.clientID == "me" && p.requestTimeout == 1500*time.Millisecond }},
		{"plaintext is fine", "security.protocol=PLAINTEXT\n", "", 0, nil},
		{"sasl settings", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"s\";\n", "", 0,
			func(p clientProps) bool {
				s, err := p.securitySettings()
				return err == nil && s.Mechanism == "SCRAM-SHA-512" && s.Username == "alice" && s.Password == "s"
			}},
		{"ssl keys", "ssl.truststore.location=/x\n", "", 0, func(p clientProps) bool { return p.security["ssl.truststore.location"] == "/x" }},
		{"unsupported sasl settings rejected", "sasl.client.callback.handler.class=x\n", "not supported by the vltava CLI", 0, nil},
		{"unknown keys warn", "linger.ms=5\nretries=3\n", "", 1, nil},
		{"bad timeout", "request.timeout.ms=soon\n", "positive number", 0, nil},
		{"malformed line", "just words\n", "expected key=value", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kvs, err := parseProperties(bufio.NewScanner(strings.NewReader(tc.file)))
			var p clientProps
			var warnings []string
			if err == nil {
				p, warnings, err = applyClientProps(kvs)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(warnings) != tc.warnings || (tc.check != nil && !tc.check(p)) {
				t.Fatalf("props %+v warnings %v err %v", p, warnings, err)
			}
		})
	}
}

func TestRecordParser(t *testing.T) {
	p := &recordParser{topic: "t", keySep: "::", partition: -1}
	r, err := p.parse("k::v::w")
	if err != nil || string(r.Key) != "k" || string(r.Value) != "v::w" || r.Partition != -1 {
		t.Fatalf("keyed: %+v %v", r, err)
	}
	if _, err := p.parse("novalue"); err == nil {
		t.Fatal("line without separator must fail when key parsing is on")
	}
	p = &recordParser{topic: "t", partition: 2}
	r, err = p.parse("k::v")
	if err != nil || r.Key != nil || string(r.Value) != "k::v" || r.Partition != 2 {
		t.Fatalf("unkeyed: %+v %v", r, err)
	}
}

func TestProducerSettings(t *testing.T) {
	for _, tc := range []struct {
		s  producerSettings
		ok bool
	}{
		{producerSettings{acks: "all", compression: "zstd"}, true},
		{producerSettings{acks: "-1", compression: "gzip"}, true},
		{producerSettings{acks: "0", compression: "snappy"}, true},
		{producerSettings{acks: "1", compression: "lz4", linger: time.Millisecond, batchMax: 1 << 20}, true},
		{producerSettings{acks: "2", compression: "none"}, false},
		{producerSettings{acks: "all", compression: "brotli"}, false},
		{producerSettings{acks: "all", compression: "none", linger: -1}, false},
	} {
		if _, err := tc.s.opts(); (err == nil) != tc.ok {
			t.Errorf("%+v: err %v, want ok=%v", tc.s, err, tc.ok)
		}
	}
}
