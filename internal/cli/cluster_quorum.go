package cli

// The metadata quorum part of `vltava cluster describe` (the equivalent of
// kafka-metadata-quorum.sh describe --status --replication), from
// DescribeQuorum; add-controller and remove-controller are in
// cluster_controllers.go.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type quorumDescription struct {
	ClusterID     string          `json:"cluster_id,omitempty"`
	LeaderID      int32           `json:"leader_id"`
	LeaderEpoch   int32           `json:"leader_epoch"`
	HighWatermark int64           `json:"high_watermark"`
	Replicas      []quorumReplica `json:"replicas"`
}

type quorumReplica struct {
	ID int32 `json:"id"`
	// DirectoryID is the replica's metadata directory id (KIP-853; the
	// zero id in a static quorum), Endpoints a voter's controller
	// endpoints (DescribeQuorum v2).
	DirectoryID           string   `json:"directory_id"`
	Endpoints             []string `json:"endpoints,omitempty"`
	Status                string   `json:"status"` // Leader, Follower or Observer
	LogEndOffset          int64    `json:"log_end_offset"`
	Lag                   int64    `json:"lag"`
	LastFetchTimestamp    int64    `json:"last_fetch_timestamp"`
	LastCaughtUpTimestamp int64    `json:"last_caught_up_timestamp"`
}

// describeQuorum asks for the state of the __cluster_metadata quorum; a
// cluster that does not support DescribeQuorum yields nil, nil.
func describeQuorum(ctx context.Context, cl *kgo.Client) (*quorumDescription, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, nil //nolint:nilerr // a broker without the API: nothing to show
	}
	return quorumFromResponse(resp)
}

// quorumFromResponse reads the metadata partition's quorum from resp.
func quorumFromResponse(resp *kmsg.DescribeQuorumResponse) (*quorumDescription, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describing the metadata quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("describing the metadata quorum: malformed answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, fmt.Errorf("describing the metadata quorum: %w", err)
	}
	q := &quorumDescription{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Replicas: []quorumReplica{}}
	endpoints := map[int32][]string{}
	for _, n := range resp.Nodes {
		for _, l := range n.Listeners {
			endpoints[n.NodeID] = append(endpoints[n.NodeID], fmt.Sprintf("%s://%s", l.Name, net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))))
		}
	}
	add := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, voter bool) {
		for _, r := range rs {
			status := "Observer"
			if voter {
				status = "Follower"
				if r.ReplicaID == p.LeaderID {
					status = "Leader"
				}
			}
			lag := max(p.HighWatermark-r.LogEndOffset, 0)
			if r.LogEndOffset < 0 {
				lag = -1
			}
			rep := quorumReplica{ID: r.ReplicaID, DirectoryID: uuidString(r.ReplicaDirectoryID), Status: status,
				LogEndOffset: r.LogEndOffset, Lag: lag,
				LastFetchTimestamp: r.LastFetchTimestamp, LastCaughtUpTimestamp: r.LastCaughtUpTimestamp}
			if voter {
				rep.Endpoints = endpoints[r.ReplicaID]
			}
			q.Replicas = append(q.Replicas, rep)
		}
	}
	add(p.CurrentVoters, true)
	add(p.Observers, false)
	return q, nil
}

// printQuorum writes the quorum section of cluster describe.
func printQuorum(w io.Writer, q *quorumDescription) error {
	if q == nil {
		return nil
	}
	fmt.Fprintf(w, "\nMetadata quorum: leader %d, epoch %d, high watermark %d\n", q.LeaderID, q.LeaderEpoch, q.HighWatermark)
	t := newTable(w, "NODE", "STATUS", "LOG-END-OFFSET", "LAG")
	for _, r := range q.Replicas {
		t.row(r.ID, r.Status, r.LogEndOffset, r.Lag)
	}
	return t.flush()
}

// uuidString is a Kafka uuid in its 22-character form.
func uuidString(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// printQuorumStatus writes kafka-metadata-quorum.sh describe --status.
func printQuorumStatus(w io.Writer, q *quorumDescription) error {
	var maxLag, maxLagMs int64
	now := time.Now().UnixMilli()
	type replicaJSON struct {
		ID          int32    `json:"id"`
		DirectoryID string   `json:"directoryId"`
		Endpoints   []string `json:"endpoints,omitempty"`
	}
	var voters, observers []replicaJSON
	for _, r := range q.Replicas {
		rj := replicaJSON{ID: r.ID, DirectoryID: r.DirectoryID, Endpoints: r.Endpoints}
		if r.Status == "Observer" {
			observers = append(observers, rj)
			continue
		}
		voters = append(voters, rj)
		if r.Status == "Follower" {
			maxLag = max(maxLag, r.Lag)
			if r.LastCaughtUpTimestamp >= 0 {
				maxLagMs = max(maxLagMs, now-r.LastCaughtUpTimestamp)
			}
		}
	}
	vj, _ := json.Marshal(voters)
	oj, _ := json.Marshal(observers)
	if voters == nil {
		vj = []byte("[]")
	}
	if observers == nil {
		oj = []byte("[]")
	}
	_, err := fmt.Fprintf(w, "ClusterId:              %s\nLeaderId:               %d\nLeaderEpoch:            %d\nHighWatermark:          %d\nMaxFollowerLag:         %d\nMaxFollowerLagTimeMs:   %d\nCurrentVoters:          %s\nCurrentObservers:       %s\n",
		q.ClusterID, q.LeaderID, q.LeaderEpoch, q.HighWatermark, maxLag, maxLagMs, vj, oj)
	return err
}

// printQuorumReplication writes kafka-metadata-quorum.sh describe
// --replication.
func printQuorumReplication(w io.Writer, q *quorumDescription) error {
	now := time.Now().UnixMilli()
	ago := func(ts int64) string {
		if ts < 0 {
			return "-1"
		}
		return strconv.FormatInt(now-ts, 10) + " ms ago"
	}
	t := newTable(w, "NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status")
	for _, r := range q.Replicas {
		t.row(r.ID, r.DirectoryID, r.LogEndOffset, r.Lag, ago(r.LastFetchTimestamp), ago(r.LastCaughtUpTimestamp), r.Status)
	}
	return t.flush()
}
