package rules

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// TestAlterUserScramCredentials: Kafka's ScramControlManager rules, user by
// user: the users that pass are committed, the others get their error.
func TestAlterUserScramCredentials(t *testing.T) {
	c, l := newTestController(t, 1, ControllerConfig{})
	ctx := context.Background()
	up := func(user string, mech int8, iters int32) ScramUpsertion {
		return ScramUpsertion{User: user, Mechanism: mech, Iterations: iters, Salt: []byte("salt"), SaltedPassword: []byte("0123456789abcdef0123456789abcdef")}
	}
	users, errs, err := c.AlterUserScramCredentials(ctx,
		[]ScramDeletion{{User: "ghost", Mechanism: 1}},
		[]ScramUpsertion{up("alice", 1, 8192), up("alice", 2, 4096), up("bob", 1, 100), up("carol", 3, 4096), up("dave", 1, 4096), up("dave", 1, 4096), up("", 1, 4096)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{
		"ghost": kerr.ResourceNotFound, "alice": nil, "bob": kerr.UnacceptableCredential,
		"carol": kerr.UnsupportedSaslMechanism, "dave": kerr.DuplicateResource, "": kerr.UnacceptableCredential,
	}
	if len(users) != len(want) {
		t.Fatalf("users %v", users)
	}
	for u, w := range want {
		if w == nil && errs[u] != nil || w != nil && !errors.Is(errs[u], w) {
			t.Errorf("%q: %v, want %v", u, errs[u], w)
		}
	}
	img := l.Image()
	if c, ok := img.ScramCredential("alice", 1); !ok || c.Iterations != 8192 {
		t.Errorf("alice SCRAM-SHA-256: %+v %v", c, ok)
	}
	if _, ok := img.ScramCredential("alice", 2); !ok {
		t.Error("alice SCRAM-SHA-512 missing")
	}
	if _, ok := img.ScramCredential("dave", 1); ok {
		t.Error("dave's duplicated alteration was committed")
	}
	// Deleting, and the credentials survive a snapshot (Records).
	if _, errs, _ := c.AlterUserScramCredentials(ctx, []ScramDeletion{{User: "alice", Mechanism: 2}}, nil); errs["alice"] != nil {
		t.Fatal(errs["alice"])
	}
	rebuilt, err := metadata.EmptyImage().Apply(1, l.Image().Records())
	if err != nil {
		t.Fatal(err)
	}
	if got := rebuilt.ScramCredentials(); len(got) != 1 {
		t.Errorf("credentials after a snapshot: %v", got)
	}
}

// TestBootstrapRecordsCommittedOnce: `storage format --add-scram` records
// are committed with the cluster id, and never again.
func TestBootstrapRecordsCommittedOnce(t *testing.T) {
	calls := 0
	boot := func() ([]metadata.Record, error) {
		calls++
		return []metadata.Record{&metadata.UserScramCredentialRecord{Name: "admin", Mechanism: 2, Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}}, nil
	}
	c, l := newTestController(t, 1, ControllerConfig{BootstrapRecords: boot})
	ctx := context.Background()
	id := metadata.NewUuid().String()
	if _, err := c.EnsureClusterID(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Image().ScramCredential("admin", 2); !ok {
		t.Fatal("bootstrap credential not committed")
	}
	if _, err := c.EnsureClusterID(ctx, id); err != nil || calls != 1 {
		t.Errorf("second EnsureClusterID: %v, bootstrap read %d times", err, calls)
	}
}
