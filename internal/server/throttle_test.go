package server

import (
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
