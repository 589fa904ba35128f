package quorum

// Dynamic voter changes (KIP-853) on hashicorp/raft's membership changes.
//
// KIP-853 names a replica of the quorum by its replica key: node id plus
// the directory id of its metadata log dir (meta.properties directory.id),
// so a node whose disk was replaced comes back as a new replica that must be
// added again, not as the old voter with an empty log. Raft's server id
// carries that key: "<id>@<directory id>" for nodes of a dynamic quorum
// (controller.quorum.bootstrap.servers), plain "<id>" for nodes of a static
// one (controller.quorum.voters, whose voters have no directory ids, as in
// Kafka's kraft.version 0). The raft configuration, replicated and
// snapshotted by raft itself, is then the voter set with its directory ids
// and endpoints (each server's address is its controller listener), the
// counterpart of KRaft's VotersRecord.
//
// The changes map onto raft's single-server changes, which raft applies one
// at a time, as KRaft does:
//   - AddRaftVoter: the replica must already be an observer (a non-voter
//     that joined through the bootstrap servers and replicates the log),
//     then raft.AddVoter promotes it; raft counts it for the quorum once
//     the entry is committed.
//   - RemoveRaftVoter: raft.DemoteVoter keeps the replica in the
//     configuration as a non-voter, so a removed voter that still runs goes
//     on replicating the log as an observer (a combined node keeps serving
//     as a broker), as KIP-853's removed voters keep fetching; a leader that
//     removes itself steps down once the change commits.
//   - UpdateRaftVoter: a voter's new endpoint replaces its address
//     (raft.AddVoter with the same id and another address).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// ReplicaKey names one replica of the quorum (KIP-853): a node id and the
// directory id of its metadata log dir; ZeroUuid in a static quorum.
type ReplicaKey struct {
	ID          int32
	DirectoryID metadata.Uuid
}

func (k ReplicaKey) String() string {
	if k.DirectoryID == metadata.ZeroUuid {
		return strconv.FormatInt(int64(k.ID), 10)
	}
	return strconv.FormatInt(int64(k.ID), 10) + "@" + k.DirectoryID.String()
}

// serverID is k as a raft server id.
func (k ReplicaKey) serverID() raft.ServerID { return raft.ServerID(k.String()) }

// parseReplicaKey parses a raft server id ("7" or "7@<directory id>").
func parseReplicaKey(id raft.ServerID) (ReplicaKey, bool) {
	s, dir, hasDir := strings.Cut(string(id), "@")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return ReplicaKey{}, false
	}
	k := ReplicaKey{ID: int32(n)}
	if hasDir {
		u, err := metadata.ParseUuid(dir)
		if err != nil {
			return ReplicaKey{}, false
		}
		k.DirectoryID = u
	}
	return k, true
}

// Member is one server of the raft configuration.
type Member struct {
	Key   ReplicaKey
	Addr  string // raft address: the node's controller listener
	Voter bool
}

// Members returns the latest raft configuration this node knows.
func (l *RaftLog) Members(ctx context.Context) ([]Member, error) {
	cf := l.raft.GetConfiguration()
	if err := waitRaft(ctx, cf); err != nil {
		return nil, l.raftError(err)
	}
	var out []Member
	for _, s := range cf.Configuration().Servers {
		k, ok := parseReplicaKey(s.ID)
		if !ok {
			continue
		}
		out = append(out, Member{Key: k, Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// member returns the server of key in ms.
func member(ms []Member, key ReplicaKey) (Member, bool) {
	for _, m := range ms {
		if m.Key == key {
			return m, true
		}
	}
	return Member{}, false
}

// leaderMembers checks that this node leads a dynamic quorum and returns
// the configuration. A static quorum's voters are controller.quorum.voters
// on every node, so changing them at run time would contradict the
// configs: UNSUPPORTED_VERSION, as Kafka answers with kraft.version 0.
func (l *RaftLog) leaderMembers(ctx context.Context) ([]Member, error) {
	if !l.cfg.dynamic() {
		return nil, fmt.Errorf("%w: the metadata quorum is static (controller.quorum.voters); its voters change only with the config of every node; a dynamic quorum (controller.quorum.bootstrap.servers, formatted with vltava storage format) supports voter changes", kerr.UnsupportedVersion)
	}
	if !l.IsLeader() {
		return nil, l.notController()
	}
	return l.Members(ctx)
}

// AddVoter makes the observer key, reachable at addr (its controller
// listener; "" keeps the address it joined with), a voter (AddRaftVoter).
// Errors wrap Kafka's codes: DUPLICATE_VOTER when the node is already a
// voter, REQUEST_TIMED_OUT when the replica has not joined the quorum as an
// observer or has not caught up with the log before ctx ends (it must run
// and replicate the log first, so that adding it cannot cost the quorum its
// majority), NOT_CONTROLLER off the leader.
func (l *RaftLog) AddVoter(ctx context.Context, key ReplicaKey, addr string) error {
	if key.ID < 0 {
		return fmt.Errorf("%w: invalid voter id %d", kerr.InvalidRequest, key.ID)
	}
	ms, err := l.leaderMembers(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Voter && m.Key.ID == key.ID {
			return fmt.Errorf("%w: node %d is already a voter (replica %s)", kerr.DuplicateVoter, key.ID, m.Key)
		}
	}
	m, ok := member(ms, key)
	if !ok {
		return fmt.Errorf("%w: replica %s is not an observer of the metadata quorum; start it (formatted with --no-initial-controllers) so it replicates the log, then add it", kerr.RequestTimedOut, key)
	}
	if addr == "" {
		addr = m.Addr
	}
	if err := l.awaitCaughtUp(ctx, key); err != nil {
		return err
	}
	if err := waitRaft(ctx, l.raft.AddVoter(key.serverID(), raft.ServerAddress(addr), 0, timeoutOf(ctx))); err != nil {
		return l.raftError(err)
	}
	l.logger.Info("added metadata quorum voter", "replica", key.String(), "addr", addr)
	return nil
}

// catchUpPoll is how often AddVoter looks at an observer's progress.
const catchUpPoll = 20 * time.Millisecond

// awaitCaughtUp waits until the observer key holds the log up to the
// commit index as of the call, as KIP-853's leader adds a voter only once
// it has caught up: a lagging new voter would count towards the majority
// before it could acknowledge anything. REQUEST_TIMED_OUT when ctx ends
// first.
func (l *RaftLog) awaitCaughtUp(ctx context.Context, key ReplicaKey) error {
	target := l.raft.CommitIndex()
	tick := time.NewTicker(catchUpPoll)
	defer tick.Stop()
	for {
		p, ok := l.transport.progress(key.serverID())
		if ok && p.lastIndex >= target {
			return nil
		}
		select {
		case <-ctx.Done():
			at := uint64(0)
			if ok {
				at = p.lastIndex
			}
			return fmt.Errorf("%w: replica %s has not caught up with the metadata log (at %d of %d)", kerr.RequestTimedOut, key, at, target)
		case <-l.closing:
			return metadata.ErrLogClosed
		case <-tick.C:
		}
	}
}

// RemoveVoter turns voter key into an observer (RemoveRaftVoter). Errors:
// VOTER_NOT_FOUND when key is not a voter (an unknown directory id
// included), INVALID_REQUEST when it is the only voter, NOT_CONTROLLER off
// the leader.
func (l *RaftLog) RemoveVoter(ctx context.Context, key ReplicaKey) error {
	ms, err := l.leaderMembers(ctx)
	if err != nil {
		return err
	}
	m, ok := member(ms, key)
	if !ok || !m.Voter {
		return fmt.Errorf("%w: replica %s is not a voter of the metadata quorum", kerr.VoterNotFound, key)
	}
	voters := 0
	for _, m := range ms {
		if m.Voter {
			voters++
		}
	}
	if voters == 1 {
		return fmt.Errorf("%w: replica %s is the only voter; add another voter before removing it", kerr.InvalidRequest, key)
	}
	if err := waitRaft(ctx, l.raft.DemoteVoter(key.serverID(), 0, timeoutOf(ctx))); err != nil {
		return l.raftError(err)
	}
	l.logger.Info("removed metadata quorum voter (now an observer)", "replica", key.String())
	return nil
}

// UpdateVoter records voter key's new controller endpoint addr
// (UpdateRaftVoter). Errors: VOTER_NOT_FOUND when key is not a voter,
// NOT_CONTROLLER off the leader.
func (l *RaftLog) UpdateVoter(ctx context.Context, key ReplicaKey, addr string) error {
	if addr == "" {
		return fmt.Errorf("%w: voter %s has no endpoint", kerr.InvalidRequest, key)
	}
	ms, err := l.leaderMembers(ctx)
	if err != nil {
		return err
	}
	m, ok := member(ms, key)
	if !ok || !m.Voter {
		return fmt.Errorf("%w: replica %s is not a voter of the metadata quorum", kerr.VoterNotFound, key)
	}
	if m.Addr == addr {
		return nil
	}
	if err := waitRaft(ctx, l.raft.AddVoter(key.serverID(), raft.ServerAddress(addr), 0, timeoutOf(ctx))); err != nil {
		return l.raftError(err)
	}
	l.logger.Info("updated metadata quorum voter endpoint", "replica", key.String(), "addr", addr)
	return nil
}

// LocalKey is this node's replica key.
func (l *RaftLog) LocalKey() ReplicaKey { return l.localKey }
