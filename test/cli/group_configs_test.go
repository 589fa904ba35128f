package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupConfigsCLI sets a consumer group's KIP-848 configs with
// kafka-configs.sh's --entity-type groups form, sees them described, sees
// an out-of-bounds value refused with Kafka's message, and sees franz-go's
// ConsumerGroupHeartbeat answered with the group's heartbeat interval.
func TestGroupConfigsCLI(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "gcli", "--partitions", "1")
	ok(t, b, "", "configs", "--alter", "--entity-type", "groups", "--entity-name", "gapp",
		"--add-config", "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000")
	got := decode[[]configEntry](t, ok(t, b, "", "configs", "--describe", "--entity-type", "groups", "--entity-name", "gapp", "--output", "json"))
	vals := map[string]configEntry{}
	for _, c := range got {
		vals[c.Name] = c
	}
	if len(got) != 2 || vals["consumer.session.timeout.ms"].Value != "50000" || vals["consumer.heartbeat.interval.ms"].Value != "6000" ||
		vals["consumer.session.timeout.ms"].Source != "GROUP_CONFIG" {
		t.Fatalf("group configs after --add-config: %+v", got)
	}
	if stderr := fails(t, b, "", "configs", "alter", "--group", "gapp", "--set", "consumer.session.timeout.ms=1000"); !strings.Contains(stderr, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms") {
		t.Errorf("out-of-bounds session timeout: %q", stderr)
	}
	if stderr := fails(t, b, "", "configs", "alter", "--group", "gapp", "--set", "share.heartbeat.interval.ms=5000"); !strings.Contains(stderr, "share groups (KIP-932) are not supported") {
		t.Errorf("share-group key: %q", stderr)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	heartbeat := func(group string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			// v1 clients choose their member id (KIP-1082).
			req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, group+"-member", 30000
			req.SubscribedTopicNames, req.Topics = []string{"gcli"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := req.RequestWith(ctx, cl)
			cancel()
			if err == nil && resp.ErrorCode == 0 {
				return resp
			}
			// The coordinator is ready once __consumer_offsets is.
			if err == nil && !kerr.IsRetriable(kerr.ErrorForCode(resp.ErrorCode)) {
				t.Fatalf("heartbeat of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
			}
			if time.Now().After(deadline) {
				t.Fatalf("heartbeat of %s: %v %+v", group, err, resp)
			}
			time.Sleep(100 * time.Millisecond) // poll interval, bounded by deadline
		}
	}
	if r := heartbeat("gapp"); r.HeartbeatIntervalMillis != 6000 {
		t.Errorf("group gapp heartbeat interval %d, want its config's 6000", r.HeartbeatIntervalMillis)
	}
	if r := heartbeat("gother"); r.HeartbeatIntervalMillis != 5000 {
		t.Errorf("group gother heartbeat interval %d, want the broker's 5000", r.HeartbeatIntervalMillis)
	}

	ok(t, b, "", "configs", "alter", "--entity-type", "groups", "--entity-name", "gapp", "--delete-config", "consumer.heartbeat.interval.ms")
	if got := decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--group", "gapp", "--output", "json")); len(got) != 1 || got[0].Name != "consumer.session.timeout.ms" {
		t.Errorf("after --delete-config: %+v", got)
	}
}
