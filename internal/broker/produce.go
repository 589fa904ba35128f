package broker

// Produce (key 0), v0-v11, of which v3-v11 write.
//
// v3 is the first version carrying v2 record batches, which are the only
// batches we store. v0-v2 carry v0/v1 message sets: they are advertised, as
// Kafka 4 advertises them (librdkafka enables compression only when Produce
// v0 is listed, KAFKA-18659), and every partition of such a request is
// answered with UNSUPPORTED_VERSION, as Kafka 4 answers them (KIP-896).
// Each partition's payload
// must be exactly one v2 batch; it is validated (record.ValidateProduce),
// recompressed if the topic's compression.type says so, and appended. An
// idempotent retry of one of a producer's last five batches is answered
// with the original offsets and not appended again.
//
// acks=0 sends no response; as in Kafka, an error under acks=0 closes the
// connection so the client learns something went wrong. acks other than
// -1, 0 and 1 are INVALID_REQUIRED_ACKS. Internal topics cannot be written
// by clients (INVALID_TOPIC_EXCEPTION). Transactional produce needs the
// transaction coordinator, which is not built yet: TRANSACTIONAL_ID_NOT_FOUND.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.Produce, 0, 11, (*Broker).handleProduce) }

// firstWritingProduceVersion is the first Produce version with v2 batches.
const firstWritingProduceVersion = 3

func (b *Broker) handleProduce(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	img := b.meta.Image()

	var failed error
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			var err error
			if r.Version < firstWritingProduceVersion {
				err = fmt.Errorf("%w: produce v%d carries v0/v1 message sets, which are not supported; use produce v3 or newer (Kafka 0.11+ clients)",
					kerr.UnsupportedVersion, r.Version)
			} else {
				err = b.producePartition(img, req, rt.Topic, &rp, &sp)
			}
			if err != nil {
				failed = err
				sp.ErrorCode = b.errCode(err)
				var ke *kerr.Error
				if !errors.As(err, &ke) || err.Error() != ke.Error() {
					sp.ErrorMessage = errMessage(err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		if failed != nil {
			return nil, fmt.Errorf("produce with acks=0 failed: %w", failed)
		}
		return nil, nil
	}
	return resp, nil
}

func (b *Broker) producePartition(img *metadata.Image, req *kmsg.ProduceRequest, topic string,
	rp *kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition) error {
	switch {
	case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
		return kerr.InvalidRequiredAcks
	case req.TransactionID != nil:
		return fmt.Errorf("%w: transactions are not supported yet", kerr.TransactionalIDNotFound)
	}
	t, ok := img.Topic(topic)
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	if t.IsInternal {
		return fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, topic)
	}
	p := b.partitions.Get(topic, rp.Partition)
	if p == nil {
		if _, exists := img.Partition(t.Name, rp.Partition); exists {
			return kerr.NotLeaderForPartition
		}
		return kerr.UnknownTopicOrPartition
	}
	if p.Leader() != b.nodeID {
		return kerr.NotLeaderForPartition
	}
	info, err := p.Append(rp.Records, req.Acks, req.Version)
	if err != nil {
		return err
	}
	sp.BaseOffset = info.BaseOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = info.LogStartOffset
	return nil
}
