package broker

// DescribeProducers (key 61), v0 (KIP-664).
//
// Lists the active producers of partitions led here from their producer
// state: id, epoch, last sequence, last timestamp, the coordinator epoch
// of their last marker and the first offset of their open transaction (-1
// with none), which is how kafka-transactions.sh find-hanging spots a
// transaction holding the last stable offset back. A partition not led
// here is NOT_LEADER_OR_FOLLOWER, an unknown one UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeProducers, 0, 0, (*Broker).handleDescribeProducers) }

func (b *Broker) handleDescribeProducers(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	img := b.meta.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, topicOK := img.Topic(rt.Topic)
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			if !topicOK {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := b.hostedPartition(img, t, idx, true)
			if err != nil {
				sp.ErrorCode = b.errCode(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, ps := range p.Log().Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
