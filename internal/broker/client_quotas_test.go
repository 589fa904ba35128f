package broker_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

type quotaOp struct {
	key    string
	value  float64
	remove bool
}

// quotaEntry builds an AlterClientQuotas entry; entity is type=name pairs,
// "<default>" meaning the default entity.
func quotaEntry(entity []string, ops ...quotaOp) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range entity {
		typ, name, _ := strings.Cut(c, "=")
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type = typ
		if name != "<default>" {
			ec.Name = strp(name)
		}
		e.Entity = append(e.Entity, ec)
	}
	for _, o := range ops {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value, op.Remove = o.key, o.value, o.remove
		e.Ops = append(e.Ops, op)
	}
	return e
}

func alterQuotas(c *conn, validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []int16 {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries, req.ValidateOnly = entries, validateOnly
	resp := do[*kmsg.AlterClientQuotasResponse](c, 1, req)
	var codes []int16
	for _, e := range resp.Entries {
		codes = append(codes, e.ErrorCode)
	}
	return codes
}

// describeQuotas returns the error code and the matched entities, each as
// "type=name,..." sorted.
func describeQuotas(c *conn, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) (int16, []string) {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components, req.Strict = comps, strict
	resp := do[*kmsg.DescribeClientQuotasResponse](c, 1, req)
	var out []string
	for _, e := range resp.Entries {
		var parts []string
		for _, ec := range e.Entity {
			n := "<default>"
			if ec.Name != nil {
				n = *ec.Name
			}
			parts = append(parts, ec.Type+"="+n)
		}
		out = append(out, strings.Join(parts, ","))
	}
	slices.Sort(out)
	return resp.ErrorCode, out
}

func component(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
	return c
}

// TestClientQuotasAlterDescribe: AlterClientQuotas validates as Kafka's
// controller (INVALID_REQUEST per entry, the other entries committed),
// validate_only commits nothing, and DescribeClientQuotas filters by exact
// name, default and any, strict or not, as Kafka's ClientQuotasImage.
func TestClientQuotasAlterDescribe(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	ok := kerr.InvalidRequest.Code
	codes := alterQuotas(c, false,
		quotaEntry([]string{"user=alice"}, quotaOp{key: "producer_byte_rate", value: 1024}),
		quotaEntry([]string{"user=alice", "client-id=app"}, quotaOp{key: "request_percentage", value: 12.5}),
		quotaEntry([]string{"user=<default>"}, quotaOp{key: "consumer_byte_rate", value: 2048}),
		quotaEntry([]string{"user=<default>", "client-id=<default>"}, quotaOp{key: "controller_mutation_rate", value: 3}),
		quotaEntry([]string{"client-id=app"}, quotaOp{key: "producer_byte_rate", value: 4096}),
		quotaEntry([]string{"ip=127.0.0.1"}, quotaOp{key: "connection_creation_rate", value: 5}),
		// Refused, each alone:
		quotaEntry([]string{"user=bob"}, quotaOp{key: "nonsense", value: 1}),
		quotaEntry([]string{"user=bob"}, quotaOp{key: "producer_byte_rate", value: 1.5}),
		quotaEntry([]string{"user=carol"}, quotaOp{key: "producer_byte_rate", value: 1}, quotaOp{key: "producer_byte_rate", value: 2}),
		quotaEntry([]string{"ip=127.0.0.2", "user=dave"}, quotaOp{key: "connection_creation_rate", value: 1}),
		quotaEntry([]string{"ip=not-an-address"}, quotaOp{key: "connection_creation_rate", value: 1}),
		quotaEntry([]string{"ip=127.0.0.3"}, quotaOp{key: "producer_byte_rate", value: 1}),
		quotaEntry([]string{"group=g"}, quotaOp{key: "producer_byte_rate", value: 1}),
		quotaEntry([]string{"user="}, quotaOp{key: "producer_byte_rate", value: 1}),
		quotaEntry(nil, quotaOp{key: "producer_byte_rate", value: 1}),
		quotaEntry([]string{"user=frank"}, quotaOp{key: "producer_byte_rate", value: 0}),
		quotaEntry([]string{"user=frank"}, quotaOp{key: "SCRAM-SHA-256", value: 4096}),
		quotaEntry([]string{"client-id=app"}, quotaOp{key: "consumer_byte_rate", value: 1}), // the entity again
	)
	want := []int16{0, 0, 0, 0, 0, 0, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok, ok}
	if !slices.Equal(codes, want) {
		t.Fatalf("alter codes %v, want %v", codes, want)
	}
	if codes := alterQuotas(c, true, quotaEntry([]string{"user=erin"}, quotaOp{key: "producer_byte_rate", value: 1})); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("validate_only: %v", codes)
	}

	all := []string{
		"client-id=app", "ip=127.0.0.1", "user=<default>", "user=<default>,client-id=<default>",
		"user=alice", "user=alice,client-id=app",
	}
	for _, c2 := range []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []string
	}{
		{"everything", false, nil, all},
		{"strict nothing", true, nil, nil},
		{"exact user", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 0, strp("alice"))}, []string{"user=alice", "user=alice,client-id=app"}},
		{"exact user strict", true, []kmsg.DescribeClientQuotasRequestComponent{component("user", 0, strp("alice"))}, []string{"user=alice"}},
		{"default user", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 1, nil)}, []string{"user=<default>", "user=<default>,client-id=<default>"}},
		{"default user strict", true, []kmsg.DescribeClientQuotasRequestComponent{component("user", 1, nil)}, []string{"user=<default>"}},
		{"any user", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 2, nil)}, []string{"user=<default>", "user=<default>,client-id=<default>", "user=alice", "user=alice,client-id=app"}},
		{"any user and any client strict", true, []kmsg.DescribeClientQuotasRequestComponent{component("user", 2, nil), component("client-id", 2, nil)}, []string{"user=<default>,client-id=<default>", "user=alice,client-id=app"}},
		{"exact client any user", false, []kmsg.DescribeClientQuotasRequestComponent{component("client-id", 0, strp("app")), component("user", 2, nil)}, []string{"user=alice,client-id=app"}},
		{"any ip", false, []kmsg.DescribeClientQuotasRequestComponent{component("ip", 2, nil)}, []string{"ip=127.0.0.1"}},
		{"unknown user", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 0, strp("nobody"))}, nil},
		{"validate_only wrote nothing", false, []kmsg.DescribeClientQuotasRequestComponent{component("user", 0, strp("erin"))}, nil},
	} {
		code, got := describeQuotas(c, c2.strict, c2.comps...)
		if code != 0 || !slices.Equal(got, c2.want) {
			t.Errorf("%s: code %d entities %q, want %q", c2.name, code, got, c2.want)
		}
	}
	for _, bad := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{component("user", 0, nil)}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("user", 1, strp("x"))}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("user", 2, strp("x"))}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("user", 7, nil)}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("user", 2, nil), component("user", 1, nil)}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("ip", 2, nil), component("user", 2, nil)}, kerr.InvalidRequest.Code},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("group", 2, nil)}, kerr.UnsupportedVersion.Code},
	} {
		if code, _ := describeQuotas(c, false, bad.comps...); code != bad.code {
			t.Errorf("filter %+v: code %d, want %d", bad.comps, code, bad.code)
		}
	}

	// Removing the last key removes the entity.
	if codes := alterQuotas(c, false, quotaEntry([]string{"user=alice"}, quotaOp{key: "producer_byte_rate", remove: true})); !slices.Equal(codes, []int16{0}) {
		t.Fatalf("remove: %v", codes)
	}
	if _, got := describeQuotas(c, true, component("user", 0, strp("alice"))); got != nil {
		t.Fatalf("after removal: %q", got)
	}
}
