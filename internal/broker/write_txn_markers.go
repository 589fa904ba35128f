package broker

// WriteTxnMarkers (key 27), v0-v2: a transaction coordinator ends a
// transaction on the partitions it touched (KIP-98). Brokers send it; as
// in Kafka it is answered on every broker listener, to principals with
// CLUSTER_ACTION when an authorizer is set (authorize_cluster.go).
//
// For each marker and each partition led here, a control batch (commit or
// abort, with the coordinator's epoch; storage/record.BuildMarkerBatch) is
// appended and waited for as an acks=all produce, within
// request.timeout.ms, as Kafka's handleWriteTxnMarkersRequest does. The
// append closes the producer's transaction in the partition's producer
// state, adds an aborted transaction to the segment's transaction index and
// lets the last stable offset move once the marker is replicated. A marker
// with a producer epoch older than the partition knows is
// INVALID_PRODUCER_EPOCH, one from an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED; nothing is appended then. For a
// __consumer_offsets partition the group coordinator then makes the
// producer's pending transactional offsets visible (commit) or drops them
// (abort). v2's transaction_version 2 (KIP-890 part 2) marks a marker
// whose producer epoch is the transaction's bumped one: a marker at the
// epoch of the open transaction's data is INVALID_PRODUCER_EPOCH, as Kafka
// refuses it, while one at the epoch a previous marker already bumped to
// (no transaction open) is that marker again, from a coordinator that took
// over, and is accepted.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.WriteTxnMarkers, 0, 2, (*Broker).handleWriteTxnMarkers) }

// markerWrite is one marker appended to one partition, waiting for
// replication.
type markerWrite struct {
	p              *partition.Partition
	required       int64
	marker         int // index into the request's markers
	topic, partIdx int // indexes into the response
}

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	img := b.meta.Image()
	var writes []markerWrite
	for mi, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			for _, idx := range mt.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = idx
				p, required, err := b.appendMarker(img, m, mt.Topic, idx)
				if err != nil {
					rp.ErrorCode = b.errCode(err)
				} else {
					writes = append(writes, markerWrite{p: p, required: required, marker: mi, topic: len(rm.Topics), partIdx: len(rt.Partitions)})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if len(writes) == 0 {
		return resp, nil
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(b.cfg.RequestTimeoutMs)*time.Millisecond)
	defer cancel()
	for _, w := range writes {
		err := w.p.AwaitReplication(wctx, w.required)
		m := req.Markers[w.marker]
		if err == nil && w.p.Topic == metadata.ConsumerOffsetsTopic {
			err = b.completeGroupTransaction(w.p.Index, m.ProducerID, m.Committed)
		}
		resp.Markers[w.marker].Topics[w.topic].Partitions[w.partIdx].ErrorCode = b.errCode(err)
	}
	return resp, nil
}

// appendMarker writes one marker to a partition led here.
func (b *Broker) appendMarker(img *metadata.Image, m kmsg.WriteTxnMarkersRequestMarker, topic string, idx int32) (*partition.Partition, int64, error) {
	t, ok := img.Topic(topic)
	if !ok {
		return nil, 0, kerr.UnknownTopicOrPartition
	}
	p, err := b.hostedPartition(img, t, idx, true)
	if err != nil {
		return nil, 0, err
	}
	typ := record.ControlAbort
	if m.Committed {
		typ = record.ControlCommit
	}
	info, err := p.AppendMarker(m.ProducerID, m.ProducerEpoch, record.Marker{Type: typ, CoordinatorEpoch: m.CoordinatorEpoch}, m.TransactionVersion >= 2)
	if err != nil {
		return nil, 0, err
	}
	return p, info.LastOffset + 1, nil
}

// completeGroupTransaction hands a replicated marker on an offsets
// partition to the group coordinator.
func (b *Broker) completeGroupTransaction(offsetsPartition int32, producerID int64, commit bool) error {
	if b.groups == nil {
		return nil
	}
	return b.groups.CompleteTransaction(offsetsPartition, producerID, commit)
}
