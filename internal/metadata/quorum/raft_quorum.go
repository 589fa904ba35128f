package quorum

import (
	"math"

	"github.com/vltava/vltava/internal/metadata"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// QuorumState is the content of a DescribeQuorum answer (KIP-595/KIP-836)
// for the metadata partition, as seen by this node. Offsets are raft log
// indexes (the unit of the quorum's log; image offsets count records).
// Timestamps are Unix milliseconds, -1 when unknown, as on the wire.
//
// Exact on the leader: LeaderID, LeaderEpoch (the raft term), HighWatermark
// (the commit index), the membership, the leader's own LogEndOffset, and each
// follower's LogEndOffset and LastFetchTimestamp, taken from its latest
// AppendEntries answer (heartbeats included; see trackingTransport).
// Approximated: LastCaughtUpTimestamp is the time of the latest answer that
// showed the follower holding everything the leader had when it sent the
// request; progress learned in an earlier leadership term is dropped on
// election, so right after an election followers report -1 until their first
// answer. Kafka answers DescribeQuorum only on the leader; on another node
// the follower entries are -1 except this node's own LogEndOffset.
type QuorumState struct {
	LeaderID      int32
	LeaderEpoch   int32
	HighWatermark int64
	Voters        []ReplicaState
	Observers     []ReplicaState
}

// ReplicaState is one voter or observer of the quorum.
type ReplicaState struct {
	ID int32
	// DirectoryID is the replica's metadata directory id in a dynamic
	// quorum (KIP-853), ZeroUuid in a static one.
	DirectoryID metadata.Uuid
	// Addr is the replica's raft address, its controller endpoint for a
	// voter.
	Addr                  string
	LogEndOffset          int64
	LastFetchTimestamp    int64
	LastCaughtUpTimestamp int64
}

// QuorumState describes the quorum as this node sees it.
func (l *RaftLog) QuorumState() (QuorumState, error) {
	cf := l.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return QuorumState{}, l.raftError(err)
	}
	qs := QuorumState{
		LeaderID:      -1,
		LeaderEpoch:   int32(min(l.raft.CurrentTerm(), math.MaxInt32)),
		HighWatermark: int64(l.raft.CommitIndex()),
	}
	if id, ok := l.LeaderID(); ok {
		qs.LeaderID = id
	}
	leader := l.IsLeader()
	self := l.localKey.serverID()
	nowMs := time.Now().UnixMilli()
	for _, s := range cf.Configuration().Servers {
		key, ok := parseReplicaKey(s.ID)
		if !ok {
			continue
		}
		rs := ReplicaState{ID: key.ID, DirectoryID: key.DirectoryID, Addr: string(s.Address),
			LogEndOffset: -1, LastFetchTimestamp: -1, LastCaughtUpTimestamp: -1}
		switch {
		case s.ID == self:
			rs.LogEndOffset = int64(l.raft.LastIndex())
			if leader {
				rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = nowMs, nowMs
			}
		case leader:
			if p, ok := l.transport.progress(s.ID); ok {
				rs.LogEndOffset = int64(p.lastIndex)
				rs.LastFetchTimestamp = unixMilliOrUnknown(p.lastFetch)
				rs.LastCaughtUpTimestamp = unixMilliOrUnknown(p.lastCaughtUp)
			}
		}
		if s.Suffrage == raft.Voter {
			qs.Voters = append(qs.Voters, rs)
		} else {
			qs.Observers = append(qs.Observers, rs)
		}
	}
	byID := func(a, b ReplicaState) int { return int(a.ID) - int(b.ID) }
	slices.SortFunc(qs.Voters, byID)
	slices.SortFunc(qs.Observers, byID)
	return qs, nil
}

func unixMilliOrUnknown(t time.Time) int64 {
	if t.IsZero() {
		return -1
	}
	return t.UnixMilli()
}
