package broker

// Leader-side replication throttling (Kafka's ReplicationQuotaManager as
// ReplicaManager applies it to follower fetches, KIP-73):
// leader.replication.throttled.rate bounds the bytes this leader returns for
// the replicas listed for it in the topic's
// leader.replication.throttled.replicas ("partition:broker" pairs naming
// this broker, or "*"), fetched by a follower outside the ISR. While the rate
// measured over the quota window is above the limit, such a partition is
// answered with its offsets and no records; the follower fetches again.
// Followers in the ISR are never throttled, so a throttle cannot hold back
// the high watermark or acks=all produces.
//
// The check reads the partition's atomically published settings and the
// quota's own small lock: no partition or log lock is taken.

import (
	"slices"

	"github.com/vltava/vltava/internal/partition"
)

// ReplicationQuota is the leader side of the replication quotas
// (*replication.Quota implements it).
type ReplicationQuota interface {
	// Limited reports whether a rate limit is set.
	Limited() bool
	// Exceeded reports whether the measured rate is above the limit.
	Exceeded() bool
	// Record counts bytes sent for throttled replicas.
	Record(n int)
}

// unlimitedQuota is the quota of a broker assembled without one.
type unlimitedQuota struct{}

func (unlimitedQuota) Limited() bool  { return false }
func (unlimitedQuota) Exceeded() bool { return false }
func (unlimitedQuota) Record(int)     {}

// leaderThrottled is Kafka's shouldLeaderThrottle without the rate check.
func (b *Broker) leaderThrottled(p *partition.Partition, replicaID int32) bool {
	return b.leaderQuota.Limited() &&
		p.Config().LeaderThrottledReplicas.Has(p.Index, b.nodeID) &&
		!slices.Contains(p.ISR(), replicaID)
}
