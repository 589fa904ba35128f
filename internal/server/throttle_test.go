package server

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestThrottleMutesConnection is KIP-219's order: the throttled request is
// answered at once, and the next request of the connection is handled only
// once the throttle time has passed.
func TestThrottleMutesConnection(t *testing.T) {
	_, h, addr := startTestServer(t, Config{})
	c := dial(t, addr)
	throttled := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("throttle")
	throttled.Topics = append(throttled.Topics, topic)
	throttled.SetVersion(4)
	next := kmsg.NewPtrMetadataRequest()
	next.SetVersion(4)
	start := time.Now()
	if _, err := c.Write(append(encodeRequest(throttled, 1, "c"), encodeRequest(next, 2, "c")...)); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(4)
	if corr := readResponse(t, c, resp); corr != 1 {
		t.Fatalf("first response has correlation id %d", corr)
	}
	if n := h.handled.Load(); n != 1 {
		t.Fatalf("%d requests handled while the connection is muted, want 1", n)
	}
	if corr := readResponse(t, c, resp); corr != 2 {
		t.Fatalf("second response has correlation id %d", corr)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("the next request was answered after %v, within the 1 s throttle", waited)
	}
}

// TestConnectionRateClosesThrottledConnections: a connection whose address
// is over connection_creation_rate is never served and is closed after the
// throttle time; the others are served.
func TestConnectionRateClosesThrottledConnections(t *testing.T) {
	var accepted atomic.Int32
	_, _, addr := startTestServer(t, Config{ConnectionRate: func(ip string) time.Duration {
		if ip != "127.0.0.1" {
			t.Errorf("asked about %q", ip)
		}
		if accepted.Add(1) > 1 {
			return 100 * time.Millisecond
		}
		return 0
	}})
	first := dial(t, addr)
	if err := roundTrip(t, first, 1, 5*time.Second); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	over := dial(t, addr)
	over.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 2, "limits"))
	expectClosed(t, over)
}
