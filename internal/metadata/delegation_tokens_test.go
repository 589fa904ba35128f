package metadata

import (
	"slices"
	"testing"
)

// Delegation token records create, renew (a second record for the id) and
// remove tokens; an image's records rebuild them, the codec round-trips
// them, and impossible records are refused.
func TestDelegationTokenRecords(t *testing.T) {
	tok := &DelegationTokenRecord{Owner: "User:alice", Requester: "User:admin", Renewers: []string{"User:bob"},
		IssueTimestamp: 1000, MaxTimestamp: 9000, ExpirationTimestamp: 5000, TokenID: "tok-1"}
	img := mustApply(t, EmptyImage(), tok)
	got, ok := img.DelegationToken("tok-1")
	if !ok || got.Owner != "User:alice" || got.ExpirationTimestamp != 5000 || !slices.Equal(got.Renewers, []string{"User:bob"}) {
		t.Fatalf("token %+v %v", got, ok)
	}
	renewed := *tok
	renewed.ExpirationTimestamp = 8000
	img2 := mustApply(t, img, &renewed)
	if got, _ := img2.DelegationToken("tok-1"); got.ExpirationTimestamp != 8000 {
		t.Errorf("renewed expiry %d", got.ExpirationTimestamp)
	}
	if got, _ := img.DelegationToken("tok-1"); got.ExpirationTimestamp != 5000 {
		t.Errorf("the older image changed: %d", got.ExpirationTimestamp)
	}
	rebuilt := mustApply(t, EmptyImage(), img2.Records()...)
	if !slices.EqualFunc(rebuilt.DelegationTokens(), img2.DelegationTokens(), func(a, b DelegationToken) bool {
		return a.TokenID == b.TokenID && a.ExpirationTimestamp == b.ExpirationTimestamp && slices.Equal(a.Renewers, b.Renewers)
	}) {
		t.Errorf("rebuilt %+v, want %+v", rebuilt.DelegationTokens(), img2.DelegationTokens())
	}
	for _, r := range []Record{tok, &RemoveDelegationTokenRecord{TokenID: "tok-1"}} {
		b, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(b)
		if err != nil || back.Type() != r.Type() {
			t.Fatalf("round trip of %T: %T %v", r, back, err)
		}
	}
	gone := mustApply(t, img2, &RemoveDelegationTokenRecord{TokenID: "tok-1"})
	if _, ok := gone.DelegationToken("tok-1"); ok || len(gone.DelegationTokens()) != 0 {
		t.Error("removed token still in the image")
	}
	bad := *tok
	bad.ExpirationTimestamp = 10000
	for _, r := range []Record{&RemoveDelegationTokenRecord{TokenID: "nope"}, &bad, &DelegationTokenRecord{TokenID: "x"}} {
		if _, err := EmptyImage().Apply(1, []Record{r}); err == nil {
			t.Errorf("%+v applied", r)
		}
	}
}
