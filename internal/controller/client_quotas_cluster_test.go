package controller_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
)

// TestAlterClientQuotasForwarded: AlterClientQuotas sent to a broker that
// is not the active controller is forwarded (KIP-590), answered once that
// broker's image shows it, and every node's image holds the quota; an
// invalid entry is refused there as on the controller.
func TestAlterClientQuotasForwarded(t *testing.T) {
	c := startCluster(t, 2, nil)
	c.awaitConverged()
	other := c.other()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	for _, kv := range []struct {
		key string
		val float64
	}{{"producer_byte_rate", 4096}, {"nonsense", 1}} {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		name := "alice-" + kv.key
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = "user", &name
		e.Entity = append(e.Entity, ec)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = kv.key, kv.val
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
	}
	resp := c.request(other, req).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 2 || resp.Entries[0].ErrorCode != 0 || resp.Entries[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("forwarded AlterClientQuotas: %+v", resp.Entries)
	}
	alice := metadata.QuotaEntity{User: metadata.QuotaName("alice-producer_byte_rate")}
	if v := c.nodes[other].Metadata().Image().ClientQuotas().Get(alice)["producer_byte_rate"]; v != 4096 {
		t.Fatalf("the forwarding broker's image has %v right after the answer", v)
	}
	eventually(t, 5*time.Second, "every image has the quota", func() bool {
		for _, n := range c.nodes {
			if n.Metadata().Image().ClientQuotas().Get(alice)["producer_byte_rate"] != 4096 {
				return false
			}
		}
		return true
	})
	d := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType = "user", 2
	d.Components = append(d.Components, comp)
	if dr := c.request(other, d).(*kmsg.DescribeClientQuotasResponse); dr.ErrorCode != 0 || len(dr.Entries) != 1 {
		t.Fatalf("describe on the forwarding broker: %+v", dr)
	}
}
