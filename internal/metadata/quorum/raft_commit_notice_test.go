package quorum

import (
	"fmt"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// TestPublishCommitReachesFollowersAtOnce: hashicorp/raft tells followers
// the commit index only with the next append (or after CommitTimeout idle);
// heartbeats do not carry it. With CommitTimeout far beyond the test's
// patience, a commit reaches the followers' images only because
// PublishCommit appended the barrier that carries it.
func TestPublishCommitReachesFollowersAtOnce(t *testing.T) {
	cfg := testRaftConfig()
	cfg.CommitTimeout = time.Minute
	c := newRaftTestCluster(t, 3, cfg)
	for i := range 3 {
		img := c.commit(topicRecords(fmt.Sprintf("t%d", i), metadata.NewUuid(), 1, 1, 2, 3)...)
		_, leader := c.leader()
		leader.PublishCommit()
		waitFor(t, 10*time.Second, fmt.Sprintf("every node at offset %d", img.Offset()), func() bool {
			for _, l := range c.openNodes() {
				if l.Image().Offset() < img.Offset() {
					return false
				}
			}
			return true
		})
	}
}
