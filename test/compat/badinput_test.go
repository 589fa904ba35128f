package compat

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// socketRequestMaxBytes is the limit the bad-input broker runs with, small
// enough that an oversized frame is cheap to announce.
const socketRequestMaxBytes = 1 << 20

// TestBadInput sends what no well-behaved client sends and checks that the
// broker answers as Kafka does (an error code, or closing the connection)
// and keeps serving other clients.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := StartBroker(t,
		WithOverride("auto.create.topics.enable", "false"),
		WithOverride("socket.request.max.bytes", strconv.Itoa(socketRequestMaxBytes)),
	)
	adm := newAdmin(t, b)
	healthy := uniqueTopic(t)
	createTopic(t, adm, healthy, 1, nil)

	// stillServing checks, after each case, that a new client can still
	// produce and read back through the broker.
	var served int
	stillServing := func(t *testing.T) {
		t.Helper()
		if !b.running() {
			t.Fatalf("broker process exited")
		}
		if err := probeAPIVersions(b.Addr()); err != nil {
			t.Fatalf("broker no longer answers ApiVersions: %v", err)
		}
		cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{healthy: {0: kgo.NewOffset().At(int64(served))}}))
		produceSync(t, cl, &kgo.Record{Topic: healthy, Value: []byte("still serving " + t.Name())})
		if r := consume(t, cl, 1, 20*time.Second)[0]; string(r.Value) != "still serving "+t.Name() {
			t.Fatalf("read back %q", r.Value)
		}
		served++
	}

	// These run in sequence: stillServing counts the healthy topic's offsets.
	t.Run("OversizedFrame", func(t *testing.T) {
		skipOnKfake(t, "kfake does not enforce socket.request.max.bytes")
		c := dialRaw(t, b.Addr())
		const size = 2 * socketRequestMaxBytes
		frame := binary.BigEndian.AppendUint32(nil, size)
		frame = append(frame, make([]byte, 64)...) // the start of a body
		if err := c.writeRaw(frame); err != nil {
			t.Fatal(err)
		}
		// Kafka refuses the receive (InvalidReceiveException) and closes.
		if closed, got := c.waitClosed(10 * time.Second); !closed || len(got) > 0 {
			t.Fatalf("frame of %d bytes over socket.request.max.bytes=%d: closed=%v, response bytes %d; want closed without a response", size, socketRequestMaxBytes, closed, len(got))
		}
		eventually(t, 10*time.Second, func() error {
			if !strings.Contains(b.Output(), strconv.Itoa(size)) {
				return fmt.Errorf("no log line naming the rejected size %d", size)
			}
			return nil
		})
		stillServing(t)
	})

	t.Run("UnknownAPIKey", func(t *testing.T) {
		skipOnKfake(t, "kfake's connection reader dereferences a nil request for unknown API keys and the process panics")
		c := dialRaw(t, b.Addr())
		// Header v1: api key 9999, version 0, correlation id 1, client id.
		body := binary.BigEndian.AppendUint16(nil, 9999)
		body = binary.BigEndian.AppendUint16(body, 0)
		body = binary.BigEndian.AppendUint32(body, 1)
		body = binary.BigEndian.AppendUint16(body, 3)
		body = append(body, "bad"...)
		if err := c.writeRaw(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
			t.Fatal(err)
		}
		// Kafka cannot even parse the header of an unknown API and closes
		// the connection without a response.
		if closed, got := c.waitClosed(10 * time.Second); !closed || len(got) > 0 {
			t.Fatalf("unknown API key: closed=%v, response bytes %d; want closed without a response", closed, len(got))
		}
		stillServing(t)
	})

	t.Run("UnsupportedApiVersionsVersion", func(t *testing.T) {
		skipOnKfake(t, "kfake closes the connection instead of answering with UNSUPPORTED_VERSION (KIP-511)")
		c := dialRaw(t, b.Addr())
		// ApiVersions v99 from a client newer than the broker. KIP-511:
		// the broker answers in the v0 format with UNSUPPORTED_VERSION and
		// its version ranges, so the client can retry with a version it has.
		body := binary.BigEndian.AppendUint16(nil, uint16(kmsg.ApiVersions))
		body = binary.BigEndian.AppendUint16(body, 99)
		body = binary.BigEndian.AppendUint32(body, 7)
		body = binary.BigEndian.AppendUint16(body, 3)
		body = append(body, "new"...)
		body = append(body, 0, 0, 0, 0) // unknown-format body bytes
		if err := c.writeRaw(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
			t.Fatal(err)
		}
		frame, err := c.readFrame()
		if err != nil {
			t.Fatalf("no response to ApiVersions v99: %v", err)
		}
		if corr := int32(binary.BigEndian.Uint32(frame)); corr != 7 {
			t.Fatalf("correlation id %d, want 7", corr)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(frame[4:]); err != nil {
			t.Fatalf("response is not in the ApiVersions v0 format: %v", err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("error %s, want %s", errName(resp.ErrorCode), errName(kerr.UnsupportedVersion.Code))
		}
		var av *kmsg.ApiVersionsResponseApiKey
		for i := range resp.ApiKeys {
			if resp.ApiKeys[i].ApiKey == kmsg.ApiVersions.Int16() {
				av = &resp.ApiKeys[i]
			}
		}
		if av == nil || av.MinVersion != 0 || av.MaxVersion < 3 {
			t.Fatalf("ApiVersions range in the error response: %+v, want 0..>=3 (of %d keys)", av, len(resp.ApiKeys))
		}
		stillServing(t)
	})

	t.Run("BadCRC", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		c.waitLeaderReady(t, healthy, 0)
		batch := encodeBatch(batchSpec{producerID: -1, producerEpoch: -1, baseSequence: -1,
			timestamp: time.Now().UnixMilli(), records: []rawRecord{{value: []byte("corrupted in flight")}}})
		batch[len(batch)-1] ^= 0xff // flip a byte the CRC covers
		resp, err := c.roundTrip(produceRequest(healthy, 0, -1, batch))
		if err != nil {
			t.Fatal(err)
		}
		if p := singlePartitionResponse(t, resp); p.ErrorCode != kerr.CorruptMessage.Code {
			t.Fatalf("batch with a bad CRC: %s, want %s", errName(p.ErrorCode), errName(kerr.CorruptMessage.Code))
		}
		stillServing(t) // also proves nothing was appended: offsets stay dense
	})

	t.Run("RecordOverMaxMessageBytes", func(t *testing.T) {
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, map[string]*string{"max.message.bytes": ptr("1000")})
		c := dialRaw(t, b.Addr())
		c.waitLeaderReady(t, topic, 0)
		batch := encodeBatch(batchSpec{producerID: -1, producerEpoch: -1, baseSequence: -1,
			timestamp: time.Now().UnixMilli(), records: []rawRecord{{value: make([]byte, 2000)}}})
		resp, err := c.roundTrip(produceRequest(topic, 0, -1, batch))
		if err != nil {
			t.Fatal(err)
		}
		if p := singlePartitionResponse(t, resp); p.ErrorCode != kerr.MessageTooLarge.Code {
			t.Fatalf("2000-byte record into max.message.bytes=1000: %s, want %s", errName(p.ErrorCode), errName(kerr.MessageTooLarge.Code))
		}
		// A batch under the limit is accepted at offset 0.
		small := encodeBatch(batchSpec{producerID: -1, producerEpoch: -1, baseSequence: -1,
			timestamp: time.Now().UnixMilli(), records: []rawRecord{{value: make([]byte, 100)}}})
		resp, err = c.roundTrip(produceRequest(topic, 0, -1, small))
		if err != nil {
			t.Fatal(err)
		}
		if p := singlePartitionResponse(t, resp); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("100-byte record: %s at %d, want NONE at 0", errName(p.ErrorCode), p.BaseOffset)
		}
		stillServing(t)
	})

	t.Run("UnknownTopicWithAutoCreateOff", func(t *testing.T) {
		topic := uniqueTopic(t)
		c := dialRaw(t, b.Addr())
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		md.AllowAutoTopicCreation = true
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		md.Topics = append(md.Topics, mt)
		for range 2 { // the second answer proves the first did not create it
			resp, err := c.roundTrip(md)
			if err != nil {
				t.Fatal(err)
			}
			mr := resp.(*kmsg.MetadataResponse)
			if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("metadata for %s with auto.create.topics.enable=false: %+v, want UNKNOWN_TOPIC_OR_PARTITION", topic, mr.Topics)
			}
		}
		batch := encodeBatch(batchSpec{producerID: -1, producerEpoch: -1, baseSequence: -1,
			timestamp: time.Now().UnixMilli(), records: []rawRecord{{value: []byte("nowhere")}}})
		resp, err := c.roundTrip(produceRequest(topic, 0, -1, batch))
		if err != nil {
			t.Fatal(err)
		}
		if p := singlePartitionResponse(t, resp); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("produce to unknown topic: %s, want %s", errName(p.ErrorCode), errName(kerr.UnknownTopicOrPartition.Code))
		}
		stillServing(t)
	})

	t.Run("InvalidCreateTopics", func(t *testing.T) {
		c := dialRaw(t, b.Addr())
		maxLen := strings.Repeat("a", 249) + "-" // 250: one over Kafka's limit
		legal := uniqueTopic(t)
		legal += strings.Repeat("x", 249-len(legal))
		for _, tc := range []struct {
			name       string
			topic      string
			partitions int32
			want       int16
		}{
			{"249CharsIsLegal", legal, 1, 0},
			{"SpaceAndBang", "bad name!", 1, kerr.InvalidTopicException.Code},
			{"Dot", ".", 1, kerr.InvalidTopicException.Code},
			{"DotDot", "..", 1, kerr.InvalidTopicException.Code},
			{"Empty", "", 1, kerr.InvalidTopicException.Code},
			{"250Chars", maxLen, 1, kerr.InvalidTopicException.Code},
			{"NegativePartitions", uniqueTopic(t), -5, kerr.InvalidPartitions.Code},
			{"ZeroPartitions", uniqueTopic(t), 0, kerr.InvalidPartitions.Code},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.want != 0 {
					skipOnKfake(t, "kfake creates topics without validating names or partition counts")
				}
				req := kmsg.NewPtrCreateTopicsRequest()
				req.Version = 4
				req.TimeoutMillis = 15000
				rt := kmsg.NewCreateTopicsRequestTopic()
				rt.Topic = tc.topic
				rt.NumPartitions = tc.partitions
				rt.ReplicationFactor = 1
				req.Topics = append(req.Topics, rt)
				resp, err := c.roundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				ct := resp.(*kmsg.CreateTopicsResponse)
				if len(ct.Topics) != 1 || ct.Topics[0].ErrorCode != tc.want {
					t.Fatalf("CreateTopics(%.20q..., %d partitions) = %+v, want %s", tc.topic, tc.partitions, ct.Topics, errName(tc.want))
				}
			})
		}
		stillServing(t)
	})

	t.Run("GarbageBytes", func(t *testing.T) {
		skipOnKfake(t, "kfake waits for a 1.2 GB frame and panics on a frame with an unknown API key")
		for _, garbage := range [][]byte{
			[]byte("GET / HTTP/1.1\r\nHost: kafka\r\n\r\n"),                                   // a size of ~1.2 GB
			append(binary.BigEndian.AppendUint32(nil, 6), 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01), // a frame too short for a header
			binary.BigEndian.AppendUint32(nil, 0xffffffff),                                    // a negative size
		} {
			c := dialRaw(t, b.Addr())
			if err := c.writeRaw(garbage); err != nil {
				t.Fatal(err)
			}
			if closed, got := c.waitClosed(10 * time.Second); !closed || len(got) > 0 {
				t.Errorf("garbage %q: closed=%v, response bytes %d; want closed without a response", garbage, closed, len(got))
			}
		}
		stillServing(t)
	})
}

func ptr(s string) *string { return &s }
