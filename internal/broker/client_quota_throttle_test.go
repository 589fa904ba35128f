package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// TestProduceOverQuotaIsThrottled: a producer over producer_byte_rate gets
// its answer at once with throttle_time_ms (KIP-219), its records
// appended, and its connection's next request waits out the throttle.
func TestProduceOverQuotaIsThrottled(t *testing.T) {
	tn := startNode(t, nil)
	admin := tn.dial()
	createTopic(admin, "q", 1, nil)
	// 1000 B/s over a 10 s window: a 30 KB request is 3000 B/s, a
	// throttle of (3000-1000)/1000 × 10 s, capped at the 11 s window.
	if codes := alterQuotas(admin, false, quotaEntry([]string{"client-id=<default>"}, quotaOp{key: "producer_byte_rate", value: 1000})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	c := tn.dial()
	resp := do[*kmsg.ProduceResponse](c, 9, produceReq("q", 0, 1, batch(t, record.CodecNone, strings.Repeat("x", 30000))))
	if ec := resp.Topics[0].Partitions[0].ErrorCode; ec != 0 {
		t.Fatalf("produce error %d", ec)
	}
	if resp.ThrottleMillis < 10000 {
		t.Fatalf("throttle_time_ms %d, want about 11000", resp.ThrottleMillis)
	}
	// The muted connection does not answer its next request meanwhile.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(4)
	corr := c.send(req)
	if _, err := c.recv(req, corr, 500*time.Millisecond); err == nil {
		t.Fatal("a muted connection answered within its throttle")
	}
	// Another client id has a quota of its own (the default applies per
	// client id).
	other := tn.dial()
	other.fmter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("other"))
	resp = do[*kmsg.ProduceResponse](other, 9, produceReq("q", 0, 1, batch(t, record.CodecNone, "small")))
	if resp.ThrottleMillis != 0 {
		t.Fatalf("another client id throttled %d ms", resp.ThrottleMillis)
	}
}

// TestFetchOverQuotaIsAnsweredEmpty: a consumer over consumer_byte_rate
// gets an empty response with throttle_time_ms, as Kafka's throttled
// fetch; until then it gets its records.
func TestFetchOverQuotaIsAnsweredEmpty(t *testing.T) {
	tn := startNode(t, nil)
	admin := tn.dial()
	id := createTopic(admin, "q", 1, nil)
	produce(admin, "q", 0, strings.Repeat("y", 4000))
	if codes := alterQuotas(admin, false, quotaEntry([]string{"user=ANONYMOUS"}, quotaOp{key: "consumer_byte_rate", value: 1000})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	c := tn.dial()
	// Each fetch returns the 4 KB batch: 400 B/s more over the 10 s
	// window; the third would make 1200 B/s.
	for i := 1; ; i++ {
		resp := do[*kmsg.FetchResponse](c, 12, fetchReq("q", id, 0, 0))
		if resp.ThrottleMillis == 0 {
			if i > 2 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
				t.Fatalf("fetch %d: no throttle and %d topics", i, len(resp.Topics))
			}
			continue
		}
		if i != 3 {
			t.Fatalf("throttled at fetch %d, want 3", i)
		}
		if len(resp.Topics) != 0 {
			t.Fatalf("a throttled fetch returned %d topics, want none", len(resp.Topics))
		}
		break
	}
}

// TestControllerMutationQuota is KIP-599: a burst of the window's worth of
// partitions passes, its debt is the throttle, and while in debt a strict
// CreateTopics (v6+) is THROTTLING_QUOTA_EXCEEDED and creates nothing,
// while an older version is only throttled.
func TestControllerMutationQuota(t *testing.T) {
	tn := startNode(t, nil)
	admin := tn.dial()
	admin.fmter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("admin"))
	// 1 partition/s: a burst of 11 (11 samples of 1 s).
	if codes := alterQuotas(admin, false, quotaEntry([]string{"client-id=creator"}, quotaOp{key: "controller_mutation_rate", value: 1})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	create := func(v int16, name string, partitions int32) *kmsg.CreateTopicsResponse {
		c := tn.dial() // a fresh connection: the last one may be muted
		c.fmter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("creator"))
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 5000
		return do[*kmsg.CreateTopicsResponse](c, v, req)
	}
	resp := create(7, "burst", 20)
	if resp.Topics[0].ErrorCode != 0 || resp.ThrottleMillis < 8000 || resp.ThrottleMillis > 9000 {
		t.Fatalf("burst: error %d throttle %d ms, want none and about 9000 (debt of 9 at 1/s)", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}
	resp = create(7, "refused", 1)
	if resp.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || resp.ThrottleMillis <= 0 {
		t.Fatalf("in debt, v7: error %d throttle %d", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}
	if md := do[*kmsg.MetadataResponse](admin, 4, metadataReq("refused")); md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("a refused topic was created: %d", md.Topics[0].ErrorCode)
	}
	resp = create(5, "permissive", 1)
	if resp.Topics[0].ErrorCode != 0 || resp.ThrottleMillis <= 0 {
		t.Fatalf("in debt, v5: error %d throttle %d, want created and throttled", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}
	// Topic by topic: a strict request whose first topic takes the
	// bucket into debt has its later topics refused.
	if codes := alterQuotas(admin, false, quotaEntry([]string{"client-id=<default>"}, quotaOp{key: "controller_mutation_rate", value: 1})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	createAs := func(clientID string, v int16, topics map[string]int32, order ...string) *kmsg.CreateTopicsResponse {
		c := tn.dial()
		c.fmter = kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
		req := kmsg.NewPtrCreateTopicsRequest()
		for _, name := range order {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, topics[name], 1
			req.Topics = append(req.Topics, rt)
		}
		req.TimeoutMillis = 5000
		return do[*kmsg.CreateTopicsResponse](c, v, req)
	}
	resp = createAs("split", 7, map[string]int32{"first": 12, "second": 1}, "first", "second")
	if len(resp.Topics) != 2 || resp.Topics[0].Topic != "first" || resp.Topics[0].ErrorCode != 0 ||
		resp.Topics[1].Topic != "second" || resp.Topics[1].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || resp.ThrottleMillis <= 0 {
		t.Fatalf("split request: %+v throttle %d", resp.Topics, resp.ThrottleMillis)
	}
	// A topic that fails gives its partitions back: after a refused
	// create of 5, the whole burst of 11 is still there.
	if resp := createAs("giveback", 7, map[string]int32{"first": 5}, "first"); resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("existing topic: %d", resp.Topics[0].ErrorCode)
	}
	if resp := createAs("giveback", 7, map[string]int32{"eleven": 11}, "eleven"); resp.Topics[0].ErrorCode != 0 || resp.ThrottleMillis != 0 {
		t.Fatalf("after a failed create: error %d throttle %d, want the whole burst left", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}

	// A client id with a quota of its own is not limited by the default.
	if codes := alterQuotas(admin, false, quotaEntry([]string{"client-id=admin"}, quotaOp{key: "controller_mutation_rate", value: 1000})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	if resp := do[*kmsg.CreateTopicsResponse](admin, 7, func() kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "free", 30, 1
		req.Topics = append(req.Topics, rt)
		return req
	}()); resp.Topics[0].ErrorCode != 0 || resp.ThrottleMillis != 0 {
		t.Fatalf("unlimited client: error %d throttle %d", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}
}

// TestRequestPercentageThrottles: with a request_percentage too small for
// any handler time, a client's requests come back with throttle_time_ms,
// and other clients' do not.
func TestRequestPercentageThrottles(t *testing.T) {
	tn := startNode(t, nil)
	admin := tn.dial()
	if codes := alterQuotas(admin, false, quotaEntry([]string{"client-id=busy"}, quotaOp{key: "request_percentage", value: 1e-9})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	c := tn.dial()
	c.fmter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("busy"))
	if resp := do[*kmsg.MetadataResponse](c, 4, metadataReq()); resp.ThrottleMillis <= 0 {
		t.Fatalf("metadata of a client over request_percentage: throttle %d", resp.ThrottleMillis)
	}
	if resp := do[*kmsg.MetadataResponse](admin, 4, metadataReq()); resp.ThrottleMillis != 0 {
		t.Fatalf("another client throttled %d", resp.ThrottleMillis)
	}
}

// TestConnectionCreationRatePerIP: past its ip's connection_creation_rate
// (1/s over the 10 s minimum window: ten at once), a new connection is
// closed unserved; the connections already open keep working.
func TestConnectionCreationRatePerIP(t *testing.T) {
	tn := startNode(t, nil)
	admin := tn.dial()
	if codes := alterQuotas(admin, false, quotaEntry([]string{"ip=127.0.0.1"}, quotaOp{key: "connection_creation_rate", value: 1})); codes[0] != 0 {
		t.Fatalf("alter: %v", codes)
	}
	refused := 0
	for range 12 {
		c := tn.dial()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(0)
		corr := c.send(req)
		if _, err := c.recv(req, corr, 5*time.Second); err != nil {
			refused++
		}
	}
	if refused < 2 {
		t.Fatalf("%d of 12 connections refused, want at least 2", refused)
	}
	if resp := do[*kmsg.MetadataResponse](admin, 4, metadataReq()); len(resp.Brokers) == 0 {
		t.Fatal("the open connection stopped working")
	}
}
