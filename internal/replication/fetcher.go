package replication

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// fetchVersion is the Fetch version followers send: v15 carries the
// replica id in ReplicaState (KIP-903) and topics by id (KIP-516). Every
// node runs this binary, whose broker serves it.
const fetchVersion = 15

// throttleRecheck is how soon a fetcher whose partitions are all held back
// by follower.replication.throttled.rate looks at the rate again.
const throttleRecheck = 100 * time.Millisecond

// fetcher is one replica fetcher goroutine (Kafka's ReplicaFetcherThread):
// it fetches every partition in its set from one leader, in a loop of
// sessionless full fetches over one connection.
//
// Thread-safety: the Manager changes the set through setTargets; mu guards
// it. Everything else belongs to the fetcher's goroutine.
type fetcher struct {
	m      *Manager
	key    fetcherKey
	addr   string
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // the set changed: stop idling

	mu struct {
		sync.Mutex
		parts map[storage.TopicPartition]*fetchState
	}
}

// fetchState is a partition's place in the fetcher's set.
type fetchState struct {
	followTarget
	// delayedUntil parks the partition after an error (replica.fetch.
	// backoff.ms) until the image names a new leader or epoch.
	delayedUntil time.Time
}

func newFetcher(m *Manager, k fetcherKey, addr string) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fetcher{m: m, key: k, addr: addr, ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	f.mu.parts = make(map[storage.TopicPartition]*fetchState)
	return f
}

// setTargets replaces the partition set. A partition whose leader epoch is
// unchanged keeps its state (and any backoff); a new epoch clears it.
func (f *fetcher) setTargets(targets map[storage.TopicPartition]followTarget) {
	f.mu.Lock()
	for tp := range f.mu.parts {
		if _, ok := targets[tp]; !ok {
			delete(f.mu.parts, tp)
		}
	}
	for tp, t := range targets {
		if st, ok := f.mu.parts[tp]; ok && st.leaderEpoch == t.leaderEpoch && st.topicID == t.topicID {
			continue
		}
		f.mu.parts[tp] = &fetchState{followTarget: t}
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) start() { go f.run() }

// shutdown stops the goroutine and waits for it; an in-flight fetch is cut
// off by closing its connection.
func (f *fetcher) shutdown() {
	f.cancel()
	<-f.done
}

func (f *fetcher) backoff() time.Duration {
	return time.Duration(max(f.m.cfg.ReplicaFetchBackoffMs, 1)) * time.Millisecond
}

// sleep waits d, or less if the set changes or the fetcher stops; it
// reports whether the fetcher should go on.
func (f *fetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
		return false
	case <-f.wake:
		return true
	case <-t.C:
		return true
	}
}

func (f *fetcher) run() {
	defer close(f.done)
	log := f.m.log.With("leader", f.key.leader, "fetcher", f.key.id, "addr", f.addr)
	var conn *brokerConn
	defer func() {
		if conn != nil {
			conn.close()
		}
	}()
	// Closing the connection is what interrupts a fetch parked on the
	// leader when the fetcher is stopped.
	stopWatch := context.AfterFunc(f.ctx, func() {
		f.mu.Lock()
		c := conn
		f.mu.Unlock()
		if c != nil {
			c.close()
		}
	})
	defer stopWatch()
	socketTimeout := time.Duration(max(f.m.cfg.ReplicaSocketTimeoutMs, 1000)) * time.Millisecond

	for f.ctx.Err() == nil {
		req, sent, nextWake := f.buildRequest()
		if req == nil {
			if !f.sleep(nextWake) {
				return
			}
			continue
		}
		if conn == nil {
			c, err := dialBroker(f.m.security, f.addr, fmt.Sprintf("vltava-replica-fetcher-%d-%d", f.m.nodeID, f.key.id), socketTimeout)
			if err != nil {
				log.Debug("connecting to leader", "err", err)
				if !f.sleep(f.backoff()) {
					return
				}
				continue
			}
			// replica.socket.receive.buffer.bytes (-1: the OS's).
			if tc, ok := c.c.Raw.(*net.TCPConn); ok && f.m.cfg.ReplicaSocketReceiveBufferBytes > 0 {
				tc.SetReadBuffer(int(f.m.cfg.ReplicaSocketReceiveBufferBytes))
			}
			f.mu.Lock()
			conn = c
			f.mu.Unlock()
			if f.ctx.Err() != nil {
				return
			}
		}
		resp := kmsg.NewPtrFetchResponse()
		deadline := time.Now().Add(time.Duration(req.MaxWaitMillis)*time.Millisecond + socketTimeout)
		if err := conn.roundTrip(req, resp, deadline); err != nil {
			if f.ctx.Err() != nil {
				return
			}
			log.Info("fetch from leader failed; reconnecting", "err", err)
			f.mu.Lock()
			conn.close()
			conn = nil
			f.mu.Unlock()
			if !f.sleep(f.backoff()) {
				return
			}
			continue
		}
		if resp.ErrorCode != 0 {
			log.Warn("leader rejected fetch", "err", kerr.ErrorForCode(resp.ErrorCode))
			if !f.sleep(f.backoff()) {
				return
			}
			continue
		}
		f.handleResponse(resp, sent, log)
	}
}

// sentPartition is what a request asked for one partition, to check the
// answer against the fetcher's state when it arrives.
type sentPartition struct {
	p           *partition.Partition
	state       *fetchState
	fetchOffset int64
	// throttled: follower.replication.throttled.replicas lists this
	// replica and it is outside the ISR, so its bytes count against
	// follower.replication.throttled.rate.
	throttled bool
}

// followerThrottled is Kafka's shouldFollowerThrottle without the rate
// check: a replica listed in follower.replication.throttled.replicas for
// this broker that is not in the ISR. In-sync replicas are never throttled,
// so a throttle cannot stall acks=all produces.
func (f *fetcher) followerThrottled(p *partition.Partition) bool {
	return f.m.quotas.Follower.Limited() &&
		p.Config().FollowerThrottledReplicas.Has(p.Index, f.m.nodeID) &&
		!slices.Contains(p.ISR(), f.m.nodeID)
}

// buildRequest makes a fetch of every partition that is not backing off.
// With nothing to fetch it returns a nil request and how long to idle.
func (f *fetcher) buildRequest() (*kmsg.FetchRequest, map[[16]byte]map[int32]sentPartition, time.Duration) {
	cfg := f.m.cfg
	now := time.Now()
	nextWake := f.backoff()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaID = -1 // v15+ sends it in ReplicaState
	req.ReplicaState.ID = f.m.nodeID
	req.ReplicaState.Epoch = -1
	req.MaxWaitMillis = cfg.ReplicaFetchWaitMaxMs
	req.MinBytes = cfg.ReplicaFetchMinBytes
	req.MaxBytes = cfg.ReplicaFetchResponseMaxBytes
	req.IsolationLevel = 0
	req.SessionID = 0
	req.SessionEpoch = -1 // sessionless full fetch

	sent := make(map[[16]byte]map[int32]sentPartition)
	topicIndex := make(map[[16]byte]int)
	f.mu.Lock()
	defer f.mu.Unlock()
	for tp, st := range f.mu.parts {
		if now.Before(st.delayedUntil) {
			nextWake = min(nextWake, st.delayedUntil.Sub(now))
			continue
		}
		p := f.m.partitions.Get(tp.Topic, tp.Partition)
		if p == nil || p.IsLeader() || p.TopicID != st.topicID {
			continue
		}
		throttled := f.followerThrottled(p)
		if throttled && f.m.quotas.Follower.Exceeded() {
			// Over follower.replication.throttled.rate: leave the
			// partition out of this fetch, as Kafka's fetcher does, and
			// look again after a backoff.
			nextWake = min(nextWake, throttleRecheck)
			continue
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = st.leaderEpoch
		rp.FetchOffset = p.LogEndOffset()
		rp.LastFetchedEpoch = p.Log().LatestEpoch()
		rp.LogStartOffset = p.LogStartOffset()
		rp.PartitionMaxBytes = cfg.ReplicaFetchMaxBytes
		i, ok := topicIndex[st.topicID]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = tp.Topic
			t.TopicID = st.topicID
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topicIndex[st.topicID] = i
			sent[st.topicID] = make(map[int32]sentPartition)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		sent[st.topicID][tp.Partition] = sentPartition{p: p, state: st, fetchOffset: rp.FetchOffset, throttled: throttled}
	}
	if len(req.Topics) == 0 {
		return nil, nil, nextWake
	}
	return req, sent, nextWake
}

// handleResponse applies each partition's answer, skipping partitions whose
// state changed while the fetch was in flight (a new leader epoch, or
// removed from this fetcher): their answer is stale.
func (f *fetcher) handleResponse(resp *kmsg.FetchResponse, sent map[[16]byte]map[int32]sentPartition, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) {
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			s, ok := sent[t.TopicID][rp.Partition]
			if !ok {
				continue
			}
			f.mu.Lock()
			current := f.mu.parts[storage.TopicPartition{Topic: s.p.Topic, Partition: s.p.Index}] == s.state
			f.mu.Unlock()
			if !current || s.p.LogEndOffset() != s.fetchOffset {
				continue
			}
			if err := f.handlePartition(s, &rp); err != nil {
				log.Warn("replicating partition", "topic", s.p.Topic, "partition", s.p.Index, "err", err)
				f.delay(s.state)
			}
		}
	}
}

// delay backs a partition off for replica.fetch.backoff.ms.
func (f *fetcher) delay(st *fetchState) {
	f.mu.Lock()
	st.delayedUntil = time.Now().Add(f.backoff())
	f.mu.Unlock()
}

// handlePartition applies one partition's fetch answer.
func (f *fetcher) handlePartition(s sentPartition, rp *kmsg.FetchResponseTopicPartition) error {
	p := s.p
	switch code := rp.ErrorCode; {
	case code == 0 && (rp.DivergingEpoch.EndOffset >= 0 || rp.DivergingEpoch.Epoch >= 0):
		return f.truncateDiverged(p, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset, rp.HighWatermark)
	case code == 0:
		if len(rp.RecordBatches) > 0 {
			if _, err := p.AppendAsFollower(rp.RecordBatches); err != nil {
				return err
			}
			if s.throttled {
				f.m.quotas.Follower.Record(len(rp.RecordBatches))
			}
		}
		p.UpdateFollowerHighWatermark(rp.HighWatermark)
		// The leader's log start offset moved (retention, DeleteRecords):
		// follow it as far as this replica's high watermark allows. For a
		// tiered log it is the start over both tiers, and the local log
		// is kept by this replica's own local retention.
		if rp.LogStartOffset > p.Log().EarliestOffset() && rp.LogStartOffset <= p.HighWatermark() {
			if _, err := p.DeleteRecordsBefore(rp.LogStartOffset); err != nil {
				return err
			}
		}
		return nil
	case code == kerr.OffsetOutOfRange.Code:
		return f.handleOutOfRange(p, s.fetchOffset, rp)
	case code == kerr.OffsetMovedToTieredStorage.Code && rp.LogStartOffset > s.fetchOffset:
		// KIP-405: what this replica lacks is in the remote tier; its log
		// restarts at the leader's local log start.
		f.m.log.Info("follower fell below the leader's local log start of a tiered partition; restarting the log there",
			"topic", p.Topic, "partition", p.Index, "fetch_offset", s.fetchOffset, "leader_local_log_start_offset", rp.LogStartOffset)
		return p.TruncateFullyAndStartAt(rp.LogStartOffset)
	default:
		return kerr.ErrorForCode(code)
	}
}

// truncateDiverged cuts the log where it diverged from the leader's, as
// Kafka's fetcher does with a diverging epoch (KIP-320, after KIP-101's
// OffsetsForLeaderEpoch): if this replica knows the leader's epoch, to the
// smaller of the two end offsets for it; if it only knows an older one, to
// the end of that (the next fetch narrows it further); with no epoch to go
// by, to the leader's end offset.
func (f *fetcher) truncateDiverged(p *partition.Partition, leaderEpoch int32, leaderEnd, leaderHW int64) error {
	leo := p.LogEndOffset()
	to := leo
	switch {
	case leaderEnd < 0:
		// Nothing usable: fall back to the high watermark, as Kafka
		// does for an undefined answer.
		to = min(leo, max(p.HighWatermark(), 0))
	case leaderEpoch < 0:
		to = min(leo, leaderEnd)
	default:
		localEpoch, localEnd := p.Log().EndOffsetForEpoch(leaderEpoch)
		switch {
		case localEpoch < 0:
			to = min(leo, leaderEnd)
		case localEpoch == leaderEpoch:
			to = min(leo, leaderEnd, localEnd)
		default:
			to = min(leo, localEnd)
		}
	}
	f.m.log.Info("truncating diverged follower log", "topic", p.Topic, "partition", p.Index,
		"leader_epoch", leaderEpoch, "leader_end_offset", leaderEnd, "log_end_offset", leo, "truncate_to", to)
	if err := p.TruncateTo(to); err != nil {
		return err
	}
	p.UpdateFollowerHighWatermark(leaderHW)
	return nil
}

// handleOutOfRange handles OFFSET_OUT_OF_RANGE (Kafka's
// handleOutOfRangeError): below the leader's log start offset, the log
// restarts there; otherwise this replica is ahead of the leader (an unclean
// election), and it truncates to the leader's high watermark, below which
// the leader's log is complete.
func (f *fetcher) handleOutOfRange(p *partition.Partition, fetchOffset int64, rp *kmsg.FetchResponseTopicPartition) error {
	switch {
	case rp.LogStartOffset >= 0 && fetchOffset < rp.LogStartOffset:
		f.m.log.Info("follower fell below the leader's log start offset; restarting the log there",
			"topic", p.Topic, "partition", p.Index, "fetch_offset", fetchOffset, "leader_log_start_offset", rp.LogStartOffset)
		return p.TruncateFullyAndStartAt(rp.LogStartOffset)
	case rp.HighWatermark >= 0 && rp.HighWatermark < fetchOffset:
		f.m.log.Warn("follower is ahead of the leader; truncating to the leader's high watermark",
			"topic", p.Topic, "partition", p.Index, "fetch_offset", fetchOffset, "leader_high_watermark", rp.HighWatermark)
		return p.TruncateTo(rp.HighWatermark)
	}
	return errors.New("offset out of range without a usable leader log start offset or high watermark")
}
