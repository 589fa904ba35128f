package broker_test

import (
	"strings"
	"testing"
	"time"

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
