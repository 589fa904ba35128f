package rules

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// TestAlterClientQuotasCommitsOnlyChanges: a value set again or a key
// removed that is not set writes no record; a refused entity writes none of
// its keys while the others' are committed; validate_only commits nothing.
func TestAlterClientQuotasCommitsOnlyChanges(t *testing.T) {
	l := openTestLog(t, t.TempDir(), metadata.LocalLogOptions{})
	defer l.Close()
	c := NewController(l, ControllerConfig{})
	ctx := context.Background()
	alice := metadata.QuotaEntity{User: metadata.QuotaName("alice")}
	bob := metadata.QuotaEntity{User: metadata.QuotaName("bob")}
	v := func(f float64) *float64 { return &f }
	alter := func(validateOnly bool, alts ...QuotaAlteration) []error {
		t.Helper()
		errs, err := c.AlterClientQuotas(ctx, alts, validateOnly)
		if err != nil {
			t.Fatal(err)
		}
		return errs
	}
	errs := alter(false,
		QuotaAlteration{Entity: alice.Data(), Ops: []QuotaOp{{Key: "producer_byte_rate", Value: v(100)}}},
		QuotaAlteration{Entity: bob.Data(), Ops: []QuotaOp{{Key: "consumer_byte_rate", Value: v(1)}, {Key: "nonsense", Value: v(1)}}},
	)
	if errs[0] != nil || !errors.Is(errs[1], kerr.InvalidRequest) {
		t.Fatalf("errors %v", errs)
	}
	if l.Image().ClientQuotas().Get(bob) != nil {
		t.Fatal("a refused entity's valid key was written")
	}
	offset := l.Image().Offset()
	alter(false, QuotaAlteration{Entity: alice.Data(), Ops: []QuotaOp{{Key: "producer_byte_rate", Value: v(100)}, {Key: "consumer_byte_rate"}}})
	alter(true, QuotaAlteration{Entity: alice.Data(), Ops: []QuotaOp{{Key: "producer_byte_rate", Value: v(5)}}})
	if got := l.Image().Offset(); got != offset {
		t.Fatalf("no-op and validate-only alterations committed records: offset %d → %d", offset, got)
	}
	if got := l.Image().ClientQuotas().Get(alice)["producer_byte_rate"]; got != 100 {
		t.Fatalf("producer_byte_rate %v", got)
	}
}
