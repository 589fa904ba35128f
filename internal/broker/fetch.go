package broker

// Fetch (key 1), v0-v16.
//
// v4 is the first version whose responses carry v2 record batches (with
// last stable offset and aborted transactions), which is how we store them;
// v0-v3, which Kafka 4 dropped (KIP-896), get the records down-converted to
// message format v0/v1 as Kafka 3.9 did (fetch_downconvert.go). v7+ adds
// incremental fetch sessions (KIP-227, fetch_session.go), v9+ the client's
// current leader epoch (KIP-320: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH),
// v12+ flexible encoding, v13+ topic ids instead of names (KIP-516:
// UNKNOWN_TOPIC_ID). Below v10 zstd data is UNSUPPORTED_COMPRESSION_TYPE
// (KIP-110, fetch_zstd.go).
//
// Limits (KIP-74): the response holds at most max_bytes and each partition
// at most its partition_max_bytes, but the first batch of the first
// partition with data is returned whole even when larger, so a consumer
// always makes progress. Only committed data (below the high watermark, or
// the last stable offset for read_committed) is returned. read_committed
// (isolation_level 1, KIP-98) also gets aborted_transactions: the producer
// and first offset of each aborted transaction the records returned may
// hold, from the segments' transaction indexes (storage.AbortedTxn), which
// the client uses to drop their records.
//
// Replica fetches (replica id >= 0: ReplicaState from v15, ReplicaID
// before) come from followers: the fetching broker must be a replica of the
// partition and this broker its leader (NOT_LEADER_OR_FOLLOWER otherwise).
// They read up to the log end offset rather than the high watermark, and
// their fetch offset is the follower's log end offset, which moves the high
// watermark and the ISR (partition.UpdateFollowerFetch). A follower whose
// last fetched epoch ends earlier in this log than its fetch offset gets no
// records but a diverging epoch (KIP-320) to truncate to.
// Consumers fetch from the leader only (no KIP-392 follower fetching); from
// v16 an error naming a stale leader carries the current one and its
// endpoint (KIP-951).
//
// Long-poll: when fewer than min_bytes are available the request parks on
// its partitions (partition.Waiter) until an append moves a high watermark,
// max_wait_ms passes or the connection closes. No polling loop: each wake-up
// comes from an append. A fetch in a session parks without the session's
// lock (fetchPlan copies what it reads; fetchSession.finish records what
// was sent), so a parked fetch stalls neither its cache nor other sessions.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
)

func init() { register(kmsg.Fetch, 0, 16, (*Broker).handleFetch) }

// fetchItem is one partition to read in this request.
type fetchItem struct {
	key                fetchSessionKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	session            *sessionPartition // nil for sessionless fetches
	// What the session last sent of the partition, copied under the
	// session's lock so the read needs no lock.
	sentHighWatermark, sentLastStableOffset, sentLogStartOffset int64
}

// sessionItem copies a session partition into a fetch item; the session's
// lock is held.
func sessionItem(sp *sessionPartition) fetchItem {
	return fetchItem{
		key: sp.key, fetchOffset: sp.fetchOffset, maxBytes: sp.maxBytes,
		currentLeaderEpoch: sp.currentLeaderEpoch, lastFetchedEpoch: sp.lastFetchedEpoch,
		session:           sp,
		sentHighWatermark: sp.sentHighWatermark, sentLastStableOffset: sp.sentLastStableOffset, sentLogStartOffset: sp.sentLogStartOffset,
	}
}

// fetchReader is what one Fetch request reads with: who asks and how.
type fetchReader struct {
	replicaID     int32 // >= 0 for a follower's fetch
	readCommitted bool
	useIDs        bool
	version       int16
	// mayRead is the consumer's READ on a topic (authorize.go); nil when
	// every topic may be read.
	mayRead func(topic string) bool
}

func (b *Broker) handleFetch(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	useIDs := r.Version >= 13
	// Kafka: a follower's fetch needs CLUSTER_ACTION, else every partition
	// is TOPIC_AUTHORIZATION_FAILED; a consumer's needs READ on each topic.
	if isReplicaFetch(r) && !b.allowedCluster(r, acl.OpClusterAction) {
		return refusedReplicaFetch(r), nil
	}

	items, session, epoch, full, errCode := b.fetchPlan(req, r.Received)
	if errCode != 0 {
		resp.ErrorCode = errCode
		return resp, nil
	}
	if session != nil {
		resp.SessionID = session.id
	}

	maxBytes := req.MaxBytes
	if maxBytes <= 0 || maxBytes > b.cfg.FetchMaxBytes {
		maxBytes = b.cfg.FetchMaxBytes
	}
	reader := fetchReader{replicaID: req.ReplicaID, readCommitted: req.IsolationLevel == 1, useIDs: useIDs, version: r.Version}
	if r.Version >= 15 {
		reader.replicaID = req.ReplicaState.ID
	}
	maxBytes = b.fetchQuotaBytes(r, reader, maxBytes)
	if !b.trusted(r) && reader.replicaID < 0 {
		// The subject once per request: a fetch names many partitions,
		// and is re-read after every wake-up.
		s := subject(r)
		reader.mayRead = func(topic string) bool { return b.authz.Authorize(s, acl.ResourceTopic, topic, acl.OpRead) }
	}
	deadline := r.Received.Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)

	var waiter *partition.Waiter
	var watched []*partition.Partition
	defer func() {
		for _, p := range watched {
			p.Unwatch(waiter)
		}
	}()
	for {
		img := b.meta.Image()
		out, regions, sent, size, anyError := b.readFetch(img, items, maxBytes, reader, full)
		done := anyError || size >= int(req.MinBytes) || req.MaxWaitMillis <= 0
		wait := time.Until(deadline)
		if done || wait <= 0 || ctx.Err() != nil {
			if d := b.throttleFetch(r, reader, size); d > 0 {
				// Over consumer_byte_rate: answered empty with the
				// throttle time, as Kafka's getThrottledResponse; the
				// session records nothing as sent.
				if session != nil && !session.finish(epoch, nil) {
					resp.ErrorCode, resp.SessionID = kerr.InvalidFetchSessionEpoch.Code, 0
				}
				resp.ThrottleMillis = throttleMillis(d)
				return resp, nil
			}
			// Only the read that is answered updates what the session
			// has sent: a change seen by a read before parking must
			// still count as a change for the read after it.
			if session != nil && !session.finish(epoch, sent) {
				resp.ErrorCode, resp.SessionID = kerr.InvalidFetchSessionEpoch.Code, 0
				return resp, nil
			}
			resp.Topics = out
			countFetched(img, out, regions, reader.replicaID >= 0)
			if r.Version >= 16 {
				b.addFetchLeaderHints(img, resp, listenerOf(r))
			}
			return &fetchResponse{FetchResponse: resp, regions: regions}, nil
		}
		if waiter == nil {
			// Register, then loop to re-read: an append between the
			// read above and Watch is seen by that re-read.
			waiter = partition.NewWaiter()
			for _, it := range items {
				if p := b.partitions.Get(b.topicName(img, it.key), it.key.partition); p != nil {
					p.Watch(waiter)
					watched = append(watched, p)
				}
			}
			continue
		}
		timer := time.NewTimer(wait)
		parkedFrom := time.Now()
		metrics.FetchParked()
		select {
		case <-waiter.C:
		case <-timer.C:
		case <-ctx.Done():
		}
		metrics.FetchUnparked()
		timer.Stop()
		parked(ctx, parkedFrom)
	}
}

// fetchPlan works out which partitions to read from the request and its
// session (KIP-227), updating the session under its lock and releasing it:
// the items are copies, and epoch is the session epoch this request owns,
// which the answer checks again (fetchSession.finish). full reports
// whether every partition goes into the response (a full fetch) rather
// than only the changed ones.
func (b *Broker) fetchPlan(req *kmsg.FetchRequest, now time.Time) (items []fetchItem, s *fetchSession, epoch int32, full bool, errCode int16) {
	listed := func() []sessionPartition {
		var ps []sessionPartition
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				ps = append(ps, sessionPartition{
					key:                fetchSessionKey{topicID: t.TopicID, topic: t.Topic, partition: p.Partition},
					fetchOffset:        p.FetchOffset,
					maxBytes:           p.PartitionMaxBytes,
					currentLeaderEpoch: p.CurrentLeaderEpoch,
					lastFetchedEpoch:   p.LastFetchedEpoch,
				})
			}
		}
		return ps
	}
	toItems := func(ps []sessionPartition) []fetchItem {
		out := make([]fetchItem, len(ps))
		for i, p := range ps {
			out[i] = fetchItem{key: p.key, fetchOffset: p.fetchOffset, maxBytes: p.maxBytes, currentLeaderEpoch: p.currentLeaderEpoch, lastFetchedEpoch: p.lastFetchedEpoch}
		}
		return out
	}

	switch {
	case req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == fetchFinalEpoch):
		return toItems(listed()), nil, 0, true, 0

	case req.SessionEpoch == fetchFinalEpoch:
		// Close the session; this request is a sessionless full fetch.
		b.fetchSessions.remove(req.SessionID)
		return toItems(listed()), nil, 0, true, 0

	case req.SessionEpoch == fetchInitialEpoch:
		if req.SessionID != 0 {
			b.fetchSessions.remove(req.SessionID)
		}
		s = b.fetchSessions.create(now)
		ps := listed()
		if s == nil {
			return toItems(ps), nil, 0, true, 0
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range ps {
			items = append(items, sessionItem(s.upsertLocked(p)))
		}
		return items, s, s.epoch, true, 0

	default:
		s = b.fetchSessions.get(req.SessionID, now)
		if s == nil {
			return nil, nil, 0, false, kerr.FetchSessionIDNotFound.Code
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if req.SessionEpoch != s.epoch {
			return nil, nil, 0, false, kerr.InvalidFetchSessionEpoch.Code
		}
		s.epoch++
		if s.epoch < 0 {
			s.epoch = 1
		}
		for _, p := range listed() {
			s.upsertLocked(p)
		}
		for _, t := range req.ForgottenTopics {
			for _, p := range t.Partitions {
				s.forgetLocked(fetchSessionKey{topicID: t.TopicID, topic: t.Topic, partition: p})
			}
		}
		for _, k := range s.order {
			items = append(items, sessionItem(s.parts[k]))
		}
		return items, s, s.epoch, false, 0
	}
}

// topicName resolves a session key's topic name (v13+ keys carry ids).
func (b *Broker) topicName(img *metadata.Image, k fetchSessionKey) string {
	if k.topic != "" {
		return k.topic
	}
	if t, ok := img.TopicByID(metadata.Uuid(k.topicID)); ok {
		return t.Name
	}
	return ""
}

// sentUpdate records, for a session partition, the offsets a response
// carries, applied only when that response is the one sent.
type sentUpdate struct {
	sp                *sessionPartition
	hw, lso, logStart int64
}

func (u sentUpdate) apply() {
	u.sp.sentHighWatermark, u.sp.sentLastStableOffset, u.sp.sentLogStartOffset = u.hw, u.lso, u.logStart
}

// readFetch reads every item once. It returns the response topics, the file
// regions holding their records (regions[t][p] for Topics[t].Partitions[p]),
// the session updates to apply if this read is answered, the number of
// record bytes and whether any partition has an error.
func (b *Broker) readFetch(img *metadata.Image, items []fetchItem, maxBytes int32, reader fetchReader, full bool) ([]kmsg.FetchResponseTopic, [][]fileRegion, []sentUpdate, int, bool) {
	var topics []kmsg.FetchResponseTopic
	var regions [][]fileRegion
	var sent []sentUpdate
	topicIndex := make(map[fetchSessionKey]int) // keyed by topic (partition -1)
	remaining := int(maxBytes)
	size := 0
	anyError := false
	for _, it := range items {
		rp, region := b.readFetchPartition(img, it, &remaining, size == 0, reader)
		if rp.ErrorCode != 0 {
			anyError = true
		}
		size += int(region.length) + len(rp.RecordBatches) // down-converted records are not a region
		if sp := it.session; sp != nil {
			// Records count whether in a region or in bytes (read from
			// the remote tier, or down-converted): an incremental answer
			// that left them out would stall the consumer on them.
			changed := region.length > 0 || len(rp.RecordBatches) > 0 || rp.ErrorCode != 0 || rp.DivergingEpoch.EndOffset >= 0 ||
				rp.HighWatermark != it.sentHighWatermark || rp.LastStableOffset != it.sentLastStableOffset ||
				rp.LogStartOffset != it.sentLogStartOffset
			if !full && !changed {
				continue
			}
			sent = append(sent, sentUpdate{sp: sp, hw: rp.HighWatermark, lso: rp.LastStableOffset, logStart: rp.LogStartOffset})
		}
		tk := fetchSessionKey{topicID: it.key.topicID, topic: it.key.topic, partition: -1}
		i, ok := topicIndex[tk]
		if !ok {
			t := kmsg.NewFetchResponseTopic()
			t.Topic = it.key.topic
			t.TopicID = it.key.topicID
			topics = append(topics, t)
			regions = append(regions, nil)
			i = len(topics) - 1
			topicIndex[tk] = i
		}
		topics[i].Partitions = append(topics[i].Partitions, rp)
		regions[i] = append(regions[i], region)
	}
	return topics, regions, sent, size, anyError
}

// fetchTopicName is the name of a fetched topic: from the image when it
// exists, else as the request named it.
func fetchTopicName(t *metadata.TopicImage, it fetchItem) string {
	if t != nil {
		return t.Name
	}
	return it.key.topic
}

// readFetchPartition reads one partition: the response entry (offsets,
// error) and the file region holding its records, if any.
func (b *Broker) readFetchPartition(img *metadata.Image, it fetchItem, remaining *int, first bool, reader fetchReader) (rp kmsg.FetchResponseTopicPartition, region fileRegion) {
	useIDs := reader.useIDs
	rp = kmsg.NewFetchResponseTopicPartition()
	rp.Partition = it.key.partition
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
	// Kafka always sends a record set, empty when there is no data; a
	// null one breaks librdkafka and kafka-python.
	rp.RecordBatches = []byte{}

	var t *metadata.TopicImage
	var ok bool
	if useIDs {
		t, ok = img.TopicByID(metadata.Uuid(it.key.topicID))
	} else {
		t, ok = img.Topic(it.key.topic)
	}
	// Unauthorized topics are TOPIC_AUTHORIZATION_FAILED whether or not
	// they exist (by name); an unknown id stays UNKNOWN_TOPIC_ID, as Kafka.
	if reader.mayRead != nil && (ok || !useIDs) && !reader.mayRead(fetchTopicName(t, it)) {
		rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		return rp, region
	}
	if !ok {
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if useIDs {
			rp.ErrorCode = kerr.UnknownTopicID.Code
		}
		return rp, region
	}
	p, err := b.hostedPartition(img, t, it.key.partition, true)
	if err == nil {
		err = checkLeaderEpoch(it.currentLeaderEpoch, p.LeaderEpoch())
	}
	if err != nil {
		rp.ErrorCode = b.errCode(err)
		return rp, region
	}
	if reader.replicaID >= 0 {
		return b.readReplicaFetch(p, it, remaining, first, reader.replicaID)
	}
	// read_committed (KIP-98) reads below the last stable offset, with the
	// aborted transactions of the range from the transaction indexes so
	// the client drops their records; the region is still sent with
	// sendfile, the records are never looked at here.
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.HighWatermark(), p.LastStableOffset(), p.Log().EarliestOffset()
	if reader.readCommitted {
		rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	limit := min(int(it.maxBytes), *remaining)
	if limit <= 0 && !first {
		return rp, region
	}
	if b.servesRemote(p, it.fetchOffset) {
		// Below the local log start of a tiered partition: from the
		// remote tier (remote_tier.go).
		b.readRemoteFetch(p, &rp, it.fetchOffset, limit, first, reader.readCommitted)
		*remaining -= len(rp.RecordBatches)
		return rp, region
	}
	var res storage.ReadResult
	if reader.readCommitted {
		res, err = p.Log().ReadRegion(it.fetchOffset, max(limit, 0), rp.LastStableOffset, first)
		if err == nil && res.Size > 0 {
			upTo := rp.LastStableOffset
			if res.SegmentEnd > 0 {
				upTo = min(upTo, res.SegmentEnd)
			}
			for _, a := range p.Log().AbortedTransactions(it.fetchOffset, upTo) {
				at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
				rp.AbortedTransactions = append(rp.AbortedTransactions, at)
			}
		}
	} else {
		res, err = p.ReadRegion(it.fetchOffset, max(limit, 0), first)
	}
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			rp.ErrorCode = kerr.OffsetOutOfRange.Code
			return rp, region
		}
		rp.ErrorCode = b.errCode(err)
		return rp, region
	}
	if res.Size > 0 {
		region = fileRegion{file: res.File, offset: res.Position, length: res.Size}
	}
	if reader.version < firstZstdFetchVersion {
		var refused bool
		if region, refused = zstdForOldFetch(p, region); refused {
			rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.RecordBatches = it.key.partition, []byte{}
			rp.ErrorCode = kerr.UnsupportedCompressionType.Code
			return rp, fileRegion{}
		}
	}
	if reader.version < firstBatchFetchVersion {
		records, code := b.downConvertFetch(p, reader.version, it.fetchOffset, region, min(int(it.maxBytes), *remaining))
		if code != 0 {
			rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.RecordBatches, rp.ErrorCode = it.key.partition, []byte{}, code
			return rp, fileRegion{}
		}
		rp.RecordBatches, region = records, fileRegion{}
	}
	*remaining -= int(region.length) + len(rp.RecordBatches)
	return rp, region
}

// readReplicaFetch serves a follower's fetch of a partition led here, in
// Kafka's order: a diverging epoch first (nothing else is done: the
// follower truncates and fetches again), then an out-of-range offset, then
// the follower's position is recorded — which may move the high watermark
// and grow the ISR — and the log is read up to its end.
func (b *Broker) readReplicaFetch(p *partition.Partition, it fetchItem, remaining *int, first bool, replicaID int32) (rp kmsg.FetchResponseTopicPartition, region fileRegion) {
	rp = kmsg.NewFetchResponseTopicPartition()
	rp.Partition = it.key.partition
	rp.RecordBatches = []byte{}
	// log_start_offset is the start over both tiers, as Kafka's: a tiered
	// follower keeps its own local log by local retention, and follows only
	// the start records were deleted up to.
	fill := func() {
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.HighWatermark(), p.LastStableOffset(), p.Log().EarliestOffset()
	}
	if !slices.Contains(p.Replicas(), replicaID) {
		fill()
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return rp, region
	}
	if epoch, end, diverged := p.DivergingEpoch(it.lastFetchedEpoch, it.fetchOffset); diverged {
		fill()
		rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = epoch, end
		return rp, region
	}
	if b.servesRemote(p, it.fetchOffset) {
		// KIP-405: the follower restarts at this leader's local log start
		// (carried in log_start_offset in this answer alone) and learns the
		// remote tier from __remote_log_metadata.
		fill()
		rp.LogStartOffset = p.LogStartOffset()
		rp.ErrorCode = kerr.OffsetMovedToTieredStorage.Code
		return rp, region
	}
	if it.fetchOffset < p.LogStartOffset() || it.fetchOffset > p.LogEndOffset() {
		// The follower learns the log start offset from this answer and
		// restarts there, or truncates if it is ahead of the leader.
		fill()
		rp.ErrorCode = kerr.OffsetOutOfRange.Code
		return rp, region
	}
	if err := p.UpdateFollowerFetch(replicaID, it.fetchOffset); err != nil {
		fill()
		rp.ErrorCode = b.errCode(err)
		return rp, region
	}
	fill()
	throttled := b.leaderThrottled(p, replicaID)
	if throttled && b.leaderQuota.Exceeded() {
		return rp, region // no records this time (fetch_throttle.go)
	}
	limit := min(int(it.maxBytes), *remaining)
	if limit <= 0 && !first {
		return rp, region
	}
	res, err := p.ReadReplica(it.fetchOffset, max(limit, 0), first)
	if err != nil {
		rp.ErrorCode = b.errCode(err)
		return rp, region
	}
	if throttled {
		b.leaderQuota.Record(int(res.Size))
	}
	if res.Size > 0 {
		region = fileRegion{file: res.File, offset: res.Position, length: res.Size}
	}
	*remaining -= int(res.Size)
	return rp, region
}

// addFetchLeaderHints fills KIP-951's current leader of every partition
// answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, and the
// endpoints of those leaders (fetch v16+).
func (b *Broker) addFetchLeaderHints(img *metadata.Image, resp *kmsg.FetchResponse, listener string) {
	var leaders map[int32]bool
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		name := t.Topic
		if name == "" {
			if ti, ok := img.TopicByID(metadata.Uuid(t.TopicID)); ok {
				name = ti.Name
			}
		}
		for pi := range t.Partitions {
			rp := &t.Partitions[pi]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code && rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			if id, epoch, ok := currentLeader(img, name, rp.Partition); ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = id, epoch
				if leaders == nil {
					leaders = make(map[int32]bool)
				}
				leaders[id] = true
			}
		}
	}
	for _, ep := range leaderEndpoints(img, leaders, listener) {
		resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: ep.NodeID, Host: ep.Host, Port: ep.Port, Rack: ep.Rack})
	}
}
