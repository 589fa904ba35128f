package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// The offset-preserving mode (vltava.preserve.offsets): every record is
// written to its remote partition at its source offset, so a consumer's
// committed offset means the same record on both clusters and failover
// needs no translation. The remote topics carry the topic config of the
// same name, which makes the Vltava target append each produced batch at
// its own base offset (gaps kept) and refuse one that starts below its log
// end offset. The mirror therefore resumes each partition at the target's
// end offset, not at a stored one: a record already on the target cannot
// be written again, whatever the mirror remembers, which makes the mode
// exactly-once without transactions.

// preserveBatchBytes bounds the batches the copier builds: a batch of the
// topic's default max.message.bytes (1 MiB + 12) on the source fits in one.
// A target that refuses one as too large gets it in halves.
const preserveBatchBytes = 1<<20 - record.BatchHeaderSize

// PreserveOffsetsConfig is the topic config of an offset-preserving
// mirror's remote topics.
const PreserveOffsetsConfig = "vltava.preserve.offsets"

// leader is where a remote partition is written.
type leader struct {
	broker int32
	id     [16]byte // topic ID, for Produce v13+
}

// targetEnds is the resume position of an offset-preserving flow: the last
// offset on the remote partition (its end offset - 1), -1 when it is empty.
// A failure to ask stops the run, which restarts and asks again.
func (s *Source) targetEnds(ctx context.Context, adm *kadm.Client) func(partitionKey) (int64, bool) {
	return func(k partitionKey) (int64, bool) {
		remote := s.flow.Policy.FormatRemoteTopic(s.flow.Source, k.topic)
		var o kadm.ListedOffset
		var err error
		for try := 0; try < 10; try++ { // a topic just created may not be known everywhere yet
			var ends kadm.ListedOffsets
			ends, err = adm.ListEndOffsets(ctx, remote)
			if err == nil {
				err = ends.Error()
			}
			var ok bool
			if o, ok = ends.Lookup(remote, k.partition); err == nil && !ok {
				err = fmt.Errorf("no end offset for %s[%d]", remote, k.partition)
			}
			if err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			s.fail(fmt.Errorf("reading the end offset of %s[%d]: %w", remote, k.partition, err))
			return 0, false
		}
		return o.Offset - 1, true
	}
}

// fail records an error that ends the current run.
func (s *Source) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = err
	}
}

// preserving reports whether an existing remote topic may be written at
// source offsets: it must carry vltava.preserve.offsets=true, or its log
// assigns its own offsets.
func preserving(ctx context.Context, adm *kadm.Client, topic string) (bool, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return false, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return false, err
	}
	if rc.Err != nil {
		return false, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key == PreserveOffsetsConfig {
			return c.Value != nil && *c.Value == "true", nil
		}
	}
	return false, nil
}

// run is records of consecutive offsets from base, their deltas relative
// to the first (timestamp first, in ms).
type run struct {
	base, first int64
	recs        []record.Record
}

// split halves a run (the target found its batch too large).
func (r run) split() (run, run) {
	mid := len(r.recs) / 2
	second := run{base: r.base + int64(mid), first: r.first + r.recs[mid].TimestampDelta, recs: slices.Clone(r.recs[mid:])}
	for i := range second.recs {
		second.recs[i].OffsetDelta = int32(i)
		second.recs[i].TimestampDelta = r.first + r.recs[mid+i].TimestampDelta - second.first
	}
	return run{base: r.base, first: r.first, recs: r.recs[:mid]}, second
}

// batch encodes the run as an uncompressed batch at its base offset, with
// its records' timestamps (CreateTime) and no producer: the target's log
// keeps the base offset.
func (r run) batch() ([]byte, error) {
	maxTS := r.first
	for i := range r.recs {
		maxTS = max(maxTS, r.first+r.recs[i].TimestampDelta)
	}
	h := record.Header{
		BaseOffset:           r.base,
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(len(r.recs) - 1),
		FirstTimestamp:       r.first,
		MaxTimestamp:         maxTS,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
	return record.BuildBatch(h, r.recs, record.CodecNone)
}

// runsOf cuts a partition's fetched records into runs of consecutive
// offsets (a gap in the source, left by compaction or by aborted and
// control records, ends a run) of at most preserveBatchBytes.
func runsOf(recs []*kgo.Record) []run {
	var out []run
	var cur run
	size := record.BatchHeaderSize
	for _, r := range recs {
		ts := r.Timestamp.UnixMilli()
		if len(cur.recs) > 0 && r.Offset != cur.base+int64(len(cur.recs)) {
			out, cur = append(out, cur), run{}
		}
		rec := record.Record{Key: r.Key, Value: r.Value}
		if len(r.Headers) > 0 {
			rec.Headers = make([]record.RecordHeader, len(r.Headers))
			for j, h := range r.Headers {
				rec.Headers[j] = record.RecordHeader{Key: h.Key, Value: h.Value}
			}
		}
		for {
			if len(cur.recs) == 0 {
				cur.base, cur.first, size = r.Offset, ts, record.BatchHeaderSize
			}
			rec.OffsetDelta, rec.TimestampDelta = int32(len(cur.recs)), ts-cur.first
			n := record.EncodedLen(&rec)
			if len(cur.recs) > 0 && size+n > preserveBatchBytes {
				out, cur = append(out, cur), run{}
				continue
			}
			cur.recs = append(cur.recs, rec)
			size += n
			break
		}
	}
	if len(cur.recs) > 0 {
		out = append(out, cur)
	}
	return out
}

// copyPreserving writes a poll's records at their source offsets, each
// run (runsOf) as one batch whose base offset is its first record's. Each
// partition sends its runs in order with one Produce (acks=all) in flight,
// the partitions side by side, so that building one partition's batch and
// sending another's overlap with the leader's append. A partition whose
// leader moved is retried after a metadata refresh, a batch too large in
// halves. Any other refusal, such as OFFSET_OUT_OF_RANGE for a batch the
// target already has, ends the run: Run restarts it from the target's end
// offsets.
func (s *Source) copyPreserving(ctx context.Context, cl *kgo.Client, fs kgo.Fetches) error {
	runs := map[partitionKey][]run{} // by source partition
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) > 0 {
			k := partitionKey{p.Topic, p.Partition}
			runs[k] = append(runs[k], runsOf(p.Records)...)
		}
	})
	for retries := 0; len(runs) > 0; retries++ {
		if retries > 0 {
			// Leaders unknown or moved: ask again after a pause.
			if retries > 20 {
				return errors.New("the target's partition leaders did not settle")
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(time.Duration(retries)*100*time.Millisecond, time.Second)):
			}
			s.leaders = nil
		}
		if s.leaders == nil || s.missingLeaders(runs) {
			if err := s.refreshLeaders(ctx, cl, runs); err != nil {
				return err
			}
		}
		var mu sync.Mutex
		var firstErr error
		left := map[partitionKey][]run{}
		var wg sync.WaitGroup
		for k, rs := range runs {
			remote := s.flow.Policy.FormatRemoteTopic(s.flow.Source, k.topic)
			l, ok := s.leaders[partitionKey{remote, k.partition}]
			if !ok {
				left[k] = rs // no leader yet: the next round asks again
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rest, err := s.writeRuns(ctx, cl, l, k, remote, rs)
				mu.Lock()
				defer mu.Unlock()
				if len(rest) > 0 {
					left[k] = rest
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		runs = left
	}
	return nil
}

// writeRuns writes one partition's runs in order to its leader l. It
// returns the runs not written: all of them after a leader move (with no
// error), or with the error that stopped it.
func (s *Source) writeRuns(ctx context.Context, cl *kgo.Client, l leader, k partitionKey, remote string, rs []run) ([]run, error) {
	for len(rs) > 0 {
		r := rs[0]
		batch, err := r.batch()
		if err != nil {
			return rs, fmt.Errorf("encoding %s[%d] at offset %d: %w", remote, k.partition, r.base, err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30000
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = remote, l.id
		pt := kmsg.NewProduceRequestTopicPartition()
		pt.Partition, pt.Records = k.partition, batch
		t.Partitions = append(t.Partitions, pt)
		req.Topics = append(req.Topics, t)
		kresp, err := cl.Broker(int(l.broker)).Request(ctx, req)
		if err == nil {
			err = fmt.Errorf("the leader did not answer for %s[%d]", remote, k.partition)
			for _, rt := range kresp.(*kmsg.ProduceResponse).Topics {
				for _, p := range rt.Partitions {
					if p.Partition == k.partition && (rt.Topic == remote || rt.TopicID == l.id) {
						err = kerr.ErrorForCode(p.ErrorCode)
					}
				}
			}
		}
		switch {
		case err == nil:
			for j := range r.recs {
				off := r.base + int64(j)
				s.acked(k.topic, off)(&kgo.Record{Topic: remote, Partition: k.partition, Offset: off}, nil)
			}
			rs = rs[1:]
		case (errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)) && len(r.recs) > 1:
			a, b := r.split()
			rs = append([]run{a, b}, rs[1:]...)
		case isMoved(err):
			return rs, nil
		default:
			return rs, fmt.Errorf("writing %s[%d] at offset %d: %w", remote, k.partition, r.base, err)
		}
	}
	return nil, nil
}

// isMoved reports the Produce errors cured by finding the leader again.
func isMoved(err error) bool {
	return errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownTopicOrPartition) ||
		errors.Is(err, kerr.LeaderNotAvailable) || errors.Is(err, kerr.UnknownTopicID) ||
		errors.Is(err, kerr.NotEnoughReplicas) || errors.Is(err, kerr.RequestTimedOut) ||
		errors.Is(err, kerr.KafkaStorageError)
}

// missingLeaders reports whether a partition to write has no known leader.
func (s *Source) missingLeaders(runs map[partitionKey][]run) bool {
	for k := range runs {
		if _, ok := s.leaders[partitionKey{s.flow.Policy.FormatRemoteTopic(s.flow.Source, k.topic), k.partition}]; !ok {
			return true
		}
	}
	return false
}

// refreshLeaders asks the target where the remote partitions of runs live.
func (s *Source) refreshLeaders(ctx context.Context, cl *kgo.Client, runs map[partitionKey][]run) error {
	req := kmsg.NewPtrMetadataRequest()
	seen := map[string]bool{}
	for k := range runs {
		remote := s.flow.Policy.FormatRemoteTopic(s.flow.Source, k.topic)
		if !seen[remote] {
			seen[remote] = true
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(remote)
			req.Topics = append(req.Topics, t)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("target metadata: %w", err)
	}
	s.leaders = map[partitionKey]leader{}
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Leader >= 0 {
				s.leaders[partitionKey{*t.Topic, p.Partition}] = leader{broker: p.Leader, id: t.TopicID}
			}
		}
	}
	return nil
}
