package cli

// The metadata quorum part of `vltava cluster describe` (the equivalent of
// kafka-metadata-quorum.sh describe --status --replication), from
// DescribeQuorum.

import (
	"context"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type quorumDescription struct {
	LeaderID      int32           `json:"leader_id"`
	LeaderEpoch   int32           `json:"leader_epoch"`
	HighWatermark int64           `json:"high_watermark"`
	Replicas      []quorumReplica `json:"replicas"`
}

type quorumReplica struct {
	ID                    int32  `json:"id"`
	Status                string `json:"status"` // Leader, Follower or Observer
	LogEndOffset          int64  `json:"log_end_offset"`
	Lag                   int64  `json:"lag"`
	LastFetchTimestamp    int64  `json:"last_fetch_timestamp"`
	LastCaughtUpTimestamp int64  `json:"last_caught_up_timestamp"`
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
			q.Replicas = append(q.Replicas, quorumReplica{ID: r.ReplicaID, Status: status, LogEndOffset: r.LogEndOffset, Lag: lag,
				LastFetchTimestamp: r.LastFetchTimestamp, LastCaughtUpTimestamp: r.LastCaughtUpTimestamp})
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
