package rules

// SCRAM credentials (KIP-554), as Kafka's ScramControlManager: upsertions
// and deletions per user and mechanism, validated one user at a time; a
// user's alterations succeed or fail together, and the records of every
// user that passed are committed in one batch.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/sasl/scram"
)

// ScramUpsertion sets a user's credential for a mechanism from the salted
// password the client derived (the password never reaches the broker).
type ScramUpsertion struct {
	User           string
	Mechanism      int8
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// ScramDeletion removes a user's credential for a mechanism.
type ScramDeletion struct {
	User      string
	Mechanism int8
}

// AlterUserScramCredentials validates and commits credential changes. It
// returns each named user's error (nil for success), in the order users
// first appear (deletions, then upsertions).
func (c *Controller) AlterUserScramCredentials(ctx context.Context, deletions []ScramDeletion, upsertions []ScramUpsertion) (users []string, errs map[string]error, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	errs = map[string]error{}
	count := map[string]int{}
	note := func(u string) {
		if _, ok := count[u]; !ok {
			users = append(users, u)
		}
		count[u]++
	}
	for _, d := range deletions {
		note(d.User)
	}
	for _, u := range upsertions {
		note(u.User)
	}
	fail := func(user string, e error) {
		if errs[user] == nil {
			errs[user] = e
		}
	}
	seen := map[metadata.ScramKey]bool{}
	perUser := map[string][]metadata.Record{}
	check := func(user string, mech int8) bool {
		if user == "" {
			fail(user, fmt.Errorf("%w: Username must not be empty", kerr.UnacceptableCredential))
			return false
		}
		if _, ok := scram.MechanismName(mech); !ok {
			fail(user, fmt.Errorf("%w: Unknown SCRAM mechanism", kerr.UnsupportedSaslMechanism))
			return false
		}
		k := metadata.ScramKey{User: user, Mechanism: mech}
		if seen[k] {
			fail(user, fmt.Errorf("%w: A user credential cannot be altered twice in the same request", kerr.DuplicateResource))
			return false
		}
		seen[k] = true
		return true
	}
	for _, d := range deletions {
		if !check(d.User, d.Mechanism) {
			continue
		}
		if _, ok := img.ScramCredential(d.User, d.Mechanism); !ok {
			fail(d.User, fmt.Errorf("%w: Attempt to delete a user credential that does not exist", kerr.ResourceNotFound))
			continue
		}
		perUser[d.User] = append(perUser[d.User], &metadata.RemoveUserScramCredentialRecord{Name: d.User, Mechanism: d.Mechanism})
	}
	for _, u := range upsertions {
		if !check(u.User, u.Mechanism) {
			continue
		}
		switch {
		case u.Iterations < scram.MinIterations:
			fail(u.User, fmt.Errorf("%w: Too few iterations", kerr.UnacceptableCredential))
			continue
		case u.Iterations > scram.MaxIterations:
			fail(u.User, fmt.Errorf("%w: Too many iterations", kerr.UnacceptableCredential))
			continue
		case len(u.Salt) == 0 || len(u.SaltedPassword) == 0:
			fail(u.User, fmt.Errorf("%w: Salt and salted password must not be empty", kerr.UnacceptableCredential))
			continue
		}
		cred := scram.FromSaltedPassword(u.Mechanism, u.SaltedPassword, u.Salt, u.Iterations)
		perUser[u.User] = append(perUser[u.User], &metadata.UserScramCredentialRecord{
			Name: u.User, Mechanism: u.Mechanism, Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations,
		})
	}
	var recs []metadata.Record
	for _, u := range users {
		if errs[u] == nil {
			recs = append(recs, perUser[u]...)
		}
	}
	if len(recs) > 0 {
		if _, err := c.log.Commit(ctx, recs); err != nil {
			return nil, nil, err
		}
	}
	return users, errs, nil
}
