package quorum

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// The join RPC lets a node that is not a voter (a broker-only node, or in a
// dynamic quorum a controller formatted with --no-initial-controllers or
// removed from the voters) enter the quorum as a raft non-voter without the
// voters knowing its address in advance, as a KRaft observer finds the
// leader from controller.quorum.voters or controller.quorum.bootstrap.servers
// alone. It runs on the controller listener port, multiplexed with raft's
// own RPCs (see raftStreamLayer):
//
//	request:  joinRPCByte, then one JSON line {"node_id": 7, "addr": "host:port",
//	          "directory_id": "...", "cluster_id": "..."} (the last two in a
//	          dynamic quorum)
//	response: one JSON line {"error": "...", "leader_addr": "host:port"}
//
// A voter that is the leader adds the node with raft.AddNonvoter (a no-op
// when it is already a member at that address) and answers with no error. A
// voter that is not the leader answers "not leader" with the leader's raft
// address when it knows it, and the joiner asks there next. The joiner
// retries, cycling through the voters (static) or the bootstrap servers
// (dynamic), until a leader accepts; it rejoins on every start, so a
// non-voter whose data was wiped comes back too. In a dynamic quorum a
// voter whose address changed joins as well, and the leader records its new
// address; a joiner formatted for another cluster is refused.
//
// hashicorp/raft pushes entries to non-voters, so unlike a Kafka broker
// (which fetches from the controller) a broker-only node needs a listener
// reachable by the controllers: RaftConfig.BindAddr.

type joinRequest struct {
	NodeID int32  `json:"node_id"`
	Addr   string `json:"addr"`
	// DirectoryID is the joiner's metadata directory id in a dynamic
	// quorum (part of its replica key, raft_voters.go); absent in a static
	// one.
	DirectoryID string `json:"directory_id,omitempty"`
	// ClusterID is the joiner's meta.properties cluster.id in a dynamic
	// quorum: a node formatted for another cluster is refused
	// (INCONSISTENT_CLUSTER_ID, as a KRaft leader answers its fetches)
	// rather than merged into this one.
	ClusterID string `json:"cluster_id,omitempty"`
	// Probe asks only who leads, adding nothing (ProbeLeader).
	Probe bool `json:"probe,omitempty"`
}

type joinResponse struct {
	Error      string `json:"error,omitempty"`
	LeaderAddr string `json:"leader_addr,omitempty"`
}

const (
	joinRPCTimeout   = 10 * time.Second
	joinRetryBackoff = 250 * time.Millisecond
	errJoinNotLeader = "not leader"
)

// serveJoin answers one join request on conn and closes it.
func (l *RaftLog) serveJoin(conn net.Conn, r *bufio.Reader) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(joinRPCTimeout))
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	out, _ := json.Marshal(l.answerJoin(line))
	conn.Write(append(out, '\n'))
}

func (l *RaftLog) answerJoin(line []byte) joinResponse {
	select {
	case <-l.ready:
	default:
		return joinResponse{Error: errJoinNotLeader} // raft still starting
	}
	var req joinRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return joinResponse{Error: "malformed join request: " + err.Error()}
	}
	if req.Probe {
		if _, id := l.raft.LeaderWithID(); id != "" {
			return joinResponse{LeaderAddr: l.leaderAddr()}
		}
		return joinResponse{}
	}
	key := ReplicaKey{ID: req.NodeID}
	if req.DirectoryID != "" {
		dir, err := metadata.ParseUuid(req.DirectoryID)
		if err != nil {
			return joinResponse{Error: "malformed join request: directory id: " + err.Error()}
		}
		key.DirectoryID = dir
	}
	if req.ClusterID != "" && l.cfg.dynamic() {
		cur := l.pub.Image().ClusterID()
		if cur == "" {
			cur = l.cfg.ClusterID
		}
		if cur != "" && cur != req.ClusterID {
			return joinResponse{Error: fmt.Sprintf("%s: node %d was formatted with cluster id %s, but this cluster's id is %s",
				kerr.InconsistentClusterID.Message, req.NodeID, req.ClusterID, cur)}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), joinRPCTimeout/2)
	defer cancel()
	err := l.addObserver(ctx, key, req.Addr)
	switch {
	case err == nil:
		return joinResponse{}
	case !l.IsLeader():
		return joinResponse{Error: errJoinNotLeader, LeaderAddr: l.leaderAddr()}
	default:
		return joinResponse{Error: err.Error()}
	}
}

// callJoin sends one join request to addr; ctx ending aborts it.
func callJoin(ctx context.Context, addr string, req joinRequest, tlsc *QuorumTLS) (joinResponse, error) {
	conn, err := tlsc.dial(ctx, addr, joinRPCTimeout)
	if err != nil {
		return joinResponse{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetDeadline(time.Now().Add(joinRPCTimeout))
	body, _ := json.Marshal(req)
	if _, err := conn.Write(append(append([]byte{joinRPCByte}, body...), '\n')); err != nil {
		return joinResponse{}, err
	}
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return joinResponse{}, err
	}
	var resp joinResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return joinResponse{}, fmt.Errorf("malformed join response: %w", err)
	}
	return resp, nil
}

// ProbeLeader asks the quorum member at addr (a controller endpoint) which
// node it knows as leader, without joining: the raft address of the leader,
// "" when it knows none. Start-up uses it to refuse a second quorum.
func ProbeLeader(ctx context.Context, addr string, tlsc *QuorumTLS) (string, error) {
	resp, err := callJoin(ctx, addr, joinRequest{Probe: true}, tlsc)
	if err != nil {
		return "", err
	}
	if resp.Error != "" {
		return "", errors.New(resp.Error)
	}
	return resp.LeaderAddr, nil
}

// joinLoop runs on a non-voter until a leader has added it or the log
// closes.
func (l *RaftLog) joinLoop() {
	defer close(l.joinDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	req := joinRequest{NodeID: l.cfg.NodeID, Addr: l.advertiseAddr}
	if l.localKey.DirectoryID != metadata.ZeroUuid {
		req.DirectoryID = l.localKey.DirectoryID.String()
		req.ClusterID = l.cfg.ClusterID
	}
	// A static quorum's voters, or a dynamic quorum's bootstrap servers
	// (KIP-853: the controller endpoints a node finds the leader through).
	targets := l.cfg.BootstrapServers
	if !l.cfg.dynamic() {
		targets = nil
		for _, id := range slices.Sorted(maps.Keys(l.cfg.Voters)) {
			targets = append(targets, l.cfg.Voters[id])
		}
	}
	next, hint := 0, ""
	for attempt := 0; ; attempt++ {
		target := hint
		if target == "" || target == l.advertiseAddr {
			target = targets[next%len(targets)]
			next++
		}
		hint = ""
		resp, err := callJoin(ctx, target, req, l.cfg.TLS)
		switch {
		case err == nil && resp.Error == "":
			l.logger.Info("joined metadata quorum as observer", "via", target)
			return
		case err == nil && resp.Error == errJoinNotLeader:
			hint = resp.LeaderAddr
		case err == nil:
			err = errors.New(resp.Error)
		}
		if err != nil && attempt%20 == 19 {
			l.logger.Warn("still trying to join metadata quorum", "target", target, "err", err)
		}
		select {
		case <-l.closing:
			return
		case <-time.After(joinRetryBackoff):
		}
	}
}

// AddNonvoter adds node id, reachable for raft at addr, to the quorum as a
// non-voter (a KRaft observer) that replicates and applies the metadata log
// without voting. It must be called on the leader (otherwise the error wraps
// kerr.NotController); it is a no-op if the node is already a member at that
// address, and fails if id is a voter.
func (l *RaftLog) AddNonvoter(ctx context.Context, id int32, addr string) error {
	return l.addObserver(ctx, ReplicaKey{ID: id}, addr)
}

// addObserver is AddNonvoter for a replica key. A voter of a dynamic quorum
// that rejoins (its log missed its own promotion) is already a member: no
// error.
func (l *RaftLog) addObserver(ctx context.Context, key ReplicaKey, addr string) error {
	id := key.ID
	if id < 0 || addr == "" {
		return fmt.Errorf("metadata: invalid non-voter %d at %q", id, addr)
	}
	if !l.IsLeader() {
		return l.notController()
	}
	sid := key.serverID()
	cf := l.raft.GetConfiguration()
	if err := waitRaft(ctx, cf); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if other, ok := parseReplicaKey(s.ID); ok && s.ID != sid && other.ID == id {
			// The same node with another metadata directory (KIP-853: a
			// replaced disk is a new replica). An old observer is
			// dropped; an old voter must be removed by the operator.
			if s.Suffrage == raft.Voter {
				return fmt.Errorf("metadata: node %d is a voter as replica %s; remove that voter before replica %s joins", id, other, key)
			}
			if err := waitRaft(ctx, l.raft.RemoveServer(s.ID, 0, timeoutOf(ctx))); err != nil {
				return l.raftError(err)
			}
			continue
		}
		if s.ID != sid {
			continue
		}
		if s.Suffrage == raft.Voter && key.DirectoryID != metadata.ZeroUuid {
			if string(s.Address) == addr {
				return nil
			}
			// A voter whose controller endpoint changed (KIP-853's
			// UpdateRaftVoter at start-up): raft must dial it there.
			return l.UpdateVoter(ctx, key, addr)
		}
		if s.Suffrage == raft.Voter {
			return fmt.Errorf("metadata: node %d is a voter; it cannot join as an observer", id)
		}
		if string(s.Address) == addr {
			return nil
		}
	}
	if err := waitRaft(ctx, l.raft.AddNonvoter(sid, raft.ServerAddress(addr), 0, timeoutOf(ctx))); err != nil {
		return l.raftError(err)
	}
	l.logger.Info("added metadata observer", "replica", key.String(), "addr", addr)
	return nil
}
