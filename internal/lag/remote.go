package lag

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Remote reads what a group's coordinator cannot see locally: the end
// offsets and record timestamps of partitions it does not host. Without
// it, those partitions are left out.
type Remote interface {
	// EndOffsets returns the high watermark and last stable offset of
	// each partition it could read both of, keyed by topic and partition.
	EndOffsets(ctx context.Context, tps map[string][]int32) map[string]map[int32]Ends
	// Batches returns the record batches from offset on (at least the
	// one holding it), read from the partition's leader.
	Batches(ctx context.Context, topic string, partition int32, offset int64) ([]byte, bool)
}

// Ends are a partition's end offsets: High, the high watermark (ListOffsets
// latest, read_uncommitted), and Stable, the last stable offset (the same
// with read_committed).
type Ends struct{ High, Stable int64 }

// remoteTimeout bounds the remote reads of one computation: a scrape
// waits at most this long for partitions led elsewhere.
const remoteTimeout = 2 * time.Second

// ClusterClient is Remote through a Kafka client of the cluster, seeded
// with this broker's own listener, as any client would read end offsets
// (ListOffsets) and a record (Fetch) from the leaders.
type ClusterClient struct {
	cl  *kgo.Client
	adm *kadm.Client
}

// NewClusterClient connects lazily to seeds.
func NewClusterClient(seeds []string) (*ClusterClient, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("vltava-consumer-lag"),
		kgo.RequestRetries(1), kgo.RetryTimeout(remoteTimeout), kgo.DisableClientMetrics())
	if err != nil {
		return nil, err
	}
	return &ClusterClient{cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the client.
func (c *ClusterClient) Close() { c.cl.Close() }

// EndOffsets implements Remote: ListOffsets for the latest offset with
// either isolation level.
func (c *ClusterClient) EndOffsets(ctx context.Context, tps map[string][]int32) map[string]map[int32]Ends {
	var topics []string
	for t := range tps {
		topics = append(topics, t)
	}
	out := map[string]map[int32]Ends{}
	high, err := c.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return out
	}
	stable, err := c.adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return out
	}
	high.Each(func(h kadm.ListedOffset) {
		st, ok := stable.Lookup(h.Topic, h.Partition)
		if h.Err != nil || !ok || st.Err != nil {
			return
		}
		if out[h.Topic] == nil {
			out[h.Topic] = map[int32]Ends{}
		}
		out[h.Topic][h.Partition] = Ends{High: h.Offset, Stable: st.Offset}
	})
	return out
}

// Batches implements Remote with one Fetch to the partition's leader.
func (c *ClusterClient) Batches(ctx context.Context, topic string, partition int32, offset int64) ([]byte, bool) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1
	req.IsolationLevel = 1
	leader, topicID, ok := c.leader(ctx, topic, partition)
	if !ok {
		return nil, false
	}
	// Both the name and the id: Fetch v13+ names topics by id.
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = partition, offset, 1, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.cl.Broker(int(leader)))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, false
	}
	p := resp.Topics[0].Partitions[0]
	return p.RecordBatches, p.ErrorCode == 0 && len(p.RecordBatches) > 0
}

func (c *ClusterClient) leader(ctx context.Context, topic string, partition int32) (int32, [16]byte, bool) {
	md, err := c.adm.Metadata(ctx, topic)
	if err != nil {
		return 0, [16]byte{}, false
	}
	t, ok := md.Topics[topic]
	if !ok {
		return 0, [16]byte{}, false
	}
	p, ok := t.Partitions[partition]
	return p.Leader, t.ID, ok && p.Leader >= 0
}
