package quorum

import "time"

// PublishCommit sends the followers the leader's commit index now, rather
// than with raft's next idle AppendEntries (hashicorp/raft sends one only
// every CommitTimeout, 50-100 ms, when nothing new is appended): a change
// just committed then reaches every node's image within a round trip, which
// admin requests waiting for all brokers to apply it rely on. It appends a
// barrier entry, whose AppendEntries carries the commit index and which
// applies nothing to the image, and does not wait for it. Only the leader
// does anything.
func (l *RaftLog) PublishCommit() {
	if !l.IsLeader() {
		return
	}
	// The timeout bounds only handing the entry to raft's leader loop.
	l.raft.Barrier(100 * time.Millisecond)
}
