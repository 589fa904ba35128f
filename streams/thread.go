package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// thread is a stream thread (Kafka Streams' StreamThread): one franz-go
// client that is both the group consumer and the producer (transactional
// under exactly_once_v2), and the tasks the group assigned it.
//
// The run goroutine owns the tasks. mu guards the task map, so that
// interactive queries and the rebalance callbacks see a consistent set;
// the run goroutine holds it while processing a batch. Under
// at_least_once the client blocks rebalances between a poll and
// AllowRebalance, so the revoke callback (which commits and takes mu)
// never runs in the middle of a batch. Under exactly_once_v2 the
// GroupTransactSession aborts a transaction a rebalance interrupted; its
// revoke callback only records what was revoked (pending), since it runs
// under the session's own lock, which End takes while the run goroutine
// holds mu.
type thread struct {
	a    *App
	idx  int
	eos  bool
	opts []kgo.Opt
	// cl and sess are replaced only by the run goroutine (rejoin).
	cl   *kgo.Client
	sess *kgo.GroupTransactSession
	log  *slog.Logger
	dir  string

	mu struct {
		sync.Mutex
		tasks           map[TaskID]*task
		closedProcessed int64
	}
	pending struct {
		sync.Mutex
		assigned map[TaskID]bool
		revoked  []TaskID
	}
	produceErr atomic.Pointer[error]
	promise    func(*kgo.Record, error) // th.produced
	partCache  sync.Map                 // user topic -> int32 partitions
	part       *streamsPartitioner

	// standby: the standby tasks the last assignment gave this thread
	// (set from the client's sync callback) and the ones running (set by
	// the run goroutine), for LocalThreadsMetadata.
	standby struct {
		sync.Mutex
		want    map[TaskID]bool
		running []TaskID
	}
	// Owned by the run goroutine: the standby tasks and the client
	// reading their changelogs (nil with none).
	standbys map[TaskID]*standbyTask
	scl      *kgo.Client
}

// standbyTask is a standby task (Kafka Streams' StandbyTask): a task's
// logged stores, kept up to date from their changelogs, and the next
// changelog offset of each.
type standbyTask struct {
	stores map[string]*storeInst // changelog topic -> store
	next   map[string]int64      // changelog topic -> next offset
}

func newThread(a *App, idx int) (*thread, error) {
	th := &thread{a: a, idx: idx, eos: a.cfg.ProcessingGuarantee == ExactlyOnceV2, part: &streamsPartitioner{},
		log: a.log.With("thread", idx),
		dir: filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, a.processID)}
	th.promise = th.produced
	th.mu.tasks = map[TaskID]*task{}
	th.pending.assigned = map[TaskID]bool{}
	th.standby.want = map[TaskID]bool{}
	th.standbys = map[TaskID]*standbyTask{}
	var topics []string
	for t := range a.topicSub {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	clientID := a.cfg.ClientID
	if clientID == "" {
		clientID = a.cfg.ApplicationID
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(a.cfg.BootstrapServers...),
		kgo.ClientID(fmt.Sprintf("%s-%s-StreamThread-%d", clientID, a.processID, idx+1)),
		kgo.ConsumerGroup(a.cfg.ApplicationID),
		kgo.ConsumeTopics(topics...),
		kgo.Balancers(taskBalancer{app: a, th: th}),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), // auto.offset.reset=earliest, Kafka Streams' default
		kgo.RecordPartitioner(th.part),
		kgo.OnPartitionsAssigned(th.onAssigned),
		kgo.OnPartitionsRevoked(th.onRevoked),
		kgo.OnPartitionsLost(th.onLost),
		kgo.ProducerLinger(5 * time.Millisecond),
	}
	if th.eos {
		opts = append(opts,
			kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", a.cfg.ApplicationID, a.processID, idx)),
			kgo.TransactionTimeout(10*time.Second), // Kafka Streams' EOS transaction.timeout.ms
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		)
	} else {
		opts = append(opts, kgo.BlockRebalanceOnPoll())
	}
	th.opts = append(opts, a.clientOpts...)
	if err := th.connect(); err != nil {
		return nil, err
	}
	return th, nil
}

// connect creates the thread's client (and transactional session).
func (th *thread) connect() error {
	var err error
	if th.eos {
		th.sess, err = kgo.NewGroupTransactSession(th.opts...)
		if err == nil {
			th.cl = th.sess.Client()
		}
	} else {
		th.cl, err = kgo.NewClient(th.opts...)
	}
	return err
}

// fenced says err means this thread's producer lost its transactional
// ID's epoch: the coordinator aborted its transaction (it outlived
// transaction.timeout.ms) or another producer took the ID over. Kafka
// Streams treats it as its tasks having migrated: close them, start a new
// producer and rejoin.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.TransactionAbortable)
}

// rejoin recovers from a fenced producer: every task is closed (its
// uncommitted state is dropped; it restores from the committed changelog
// when it is opened again), the client leaves the group, and a new client
// with a new producer epoch joins.
func (th *thread) rejoin(cause error) error {
	th.log.Warn("producer fenced: closing tasks and rejoining the group with a new producer", "err", cause)
	th.mu.Lock()
	for id := range th.mu.tasks {
		th.closeTaskLocked(id)
	}
	th.mu.Unlock()
	th.pending.Lock()
	th.pending.assigned = map[TaskID]bool{}
	th.pending.revoked = nil
	th.pending.Unlock()
	th.produceErr.Store(nil)
	th.sess.Close()
	if err := th.connect(); err != nil {
		return err
	}
	return th.sess.Begin()
}

func (th *thread) tasksOf(parts map[string][]int32) []TaskID {
	seen := map[TaskID]bool{}
	var out []TaskID
	for topic, ps := range parts {
		sub, ok := th.a.topicSub[topic]
		if !ok {
			continue
		}
		for _, p := range ps {
			id := TaskID{Subtopology: sub, Partition: p}
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

func (th *thread) onAssigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	th.pending.Lock()
	defer th.pending.Unlock()
	for _, id := range th.tasksOf(parts) {
		th.pending.assigned[id] = true
	}
}

func (th *thread) onRevoked(ctx context.Context, _ *kgo.Client, parts map[string][]int32) {
	ids := th.tasksOf(parts)
	th.pending.Lock()
	for _, id := range ids {
		delete(th.pending.assigned, id)
	}
	if th.eos {
		th.pending.revoked = append(th.pending.revoked, ids...)
		th.pending.Unlock()
		return
	}
	th.pending.Unlock()
	if len(ids) == 0 {
		return
	}
	// at_least_once: commit what was processed, then close the tasks.
	th.mu.Lock()
	defer th.mu.Unlock()
	if err := th.commitALOS(ctx); err != nil {
		th.log.Warn("commit on revocation failed; the new owner reprocesses from the last commit", "err", err)
	}
	for _, id := range ids {
		th.closeTaskLocked(id)
	}
}

func (th *thread) onLost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	ids := th.tasksOf(parts)
	th.pending.Lock()
	for _, id := range ids {
		delete(th.pending.assigned, id)
	}
	th.pending.revoked = append(th.pending.revoked, ids...)
	th.pending.Unlock()
}

func (th *thread) closeTaskLocked(id TaskID) {
	t, ok := th.mu.tasks[id]
	if !ok {
		return
	}
	th.mu.closedProcessed += t.metrics.processed.Load()
	t.close()
	delete(th.mu.tasks, id)
	_ = os.RemoveAll(filepath.Join(th.dir, id.String()))
}

// ensureTasks opens and restores the tasks assigned but not running, and
// closes the ones revoked or lost.
func (th *thread) ensureTasks(ctx context.Context, need map[TaskID]bool) error {
	th.pending.Lock()
	revoked := th.pending.revoked
	th.pending.revoked = nil
	for id := range th.pending.assigned {
		need[id] = true
	}
	th.pending.Unlock()
	th.mu.Lock()
	for _, id := range revoked {
		th.closeTaskLocked(id)
	}
	var missing []TaskID
	for id := range need {
		if _, ok := th.mu.tasks[id]; !ok {
			missing = append(missing, id)
		}
	}
	th.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	sort.Slice(missing, func(i, j int) bool {
		if missing[i].Subtopology != missing[j].Subtopology {
			return missing[i].Subtopology < missing[j].Subtopology
		}
		return missing[i].Partition < missing[j].Partition
	})
	a := th.a
	opened := map[TaskID]map[string]*storeInst{}
	restore := map[string]map[int32]*storeInst{}
	fail := func(err error) error {
		for _, ss := range opened {
			for _, s := range ss {
				_ = s.bs.close()
			}
		}
		return err
	}
	for _, id := range missing {
		dir := filepath.Join(th.dir, id.String())
		// A standby of the task becomes it: its stores are kept and
		// restore from where the standby had read to.
		sb := th.standbys[id]
		if sb != nil {
			delete(th.standbys, id)
			th.rebuildStandbyClient()
			th.log.Info("standby task promoted", "task", id)
		} else if err := os.RemoveAll(dir); err != nil {
			// No checkpoints: a task's local state is always rebuilt
			// from its changelog, so a crash can never leave it ahead of
			// the log.
			return fail(err)
		}
		stores := map[string]*storeInst{}
		opened[id] = stores
		for _, name := range a.topo.subs[id.Subtopology].stores {
			spec := a.topo.stores[name]
			if spec.global {
				continue
			}
			changelog := changelogFor(a.cfg.ApplicationID, spec)
			var s *storeInst
			if sb != nil && sb.stores[changelog] != nil {
				s = sb.stores[changelog]
				s.restoreFrom = sb.next[changelog]
			} else {
				var err error
				if s, err = openStore(a.cfg.ApplicationID, spec, dir, changelog, nil); err != nil {
					return fail(err)
				}
			}
			stores[name] = s
			if s.changelog != "" {
				if restore[s.changelog] == nil {
					restore[s.changelog] = map[int32]*storeInst{}
				}
				restore[s.changelog][id.Partition] = s
			}
		}
	}
	if err := a.restoreStores(ctx, restore); err != nil {
		return fail(err)
	}
	var globals map[string]*storeInst
	if a.global != nil {
		globals = a.global.stores
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	for _, id := range missing {
		t, err := newTask(id, a.topo, a.topo.subs[id.Subtopology], a.cfg.ApplicationID, th, opened[id], globals,
			a.cfg.DeserializationHandler, a.cfg.TimestampExtractor, th.log, func() int64 { return time.Now().UnixMilli() })
		if err != nil {
			return err
		}
		th.mu.tasks[id] = t
		th.log.Info("task running", "task", id)
	}
	return nil
}

// send implements collector: records go out through the thread's client,
// inside the open transaction under exactly_once_v2.
func (th *thread) send(topic string, key, value []byte, ts int64, headers []kgo.RecordHeader, partition int32) {
	r := &kgo.Record{Topic: topic, Key: key, Value: value, Timestamp: time.UnixMilli(ts), Headers: headers}
	if partition >= 0 {
		r.Partition, r.Context = partition, explicitPartition
	}
	if th.eos {
		th.sess.Produce(context.Background(), r, th.promise)
	} else {
		th.cl.Produce(context.Background(), r, th.promise)
	}
}

// produced is the promise of every record the thread produces (bound once
// as th.promise, so a send allocates no closure): the first error is kept
// for the next commit.
func (th *thread) produced(_ *kgo.Record, err error) {
	if err != nil {
		th.produceErr.CompareAndSwap(nil, &err)
	}
}

func (th *thread) partitions(topic string) int32 {
	if n := th.a.partitionsOf(topic); n > 0 {
		return n
	}
	if n, ok := th.partCache.Load(topic); ok {
		return n.(int32)
	}
	adm := kadm.NewClient(th.cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := adm.ListTopics(ctx, topic)
	if err != nil || d[topic].Err != nil {
		return 0
	}
	n := int32(len(d[topic].Partitions))
	th.partCache.Store(topic, n)
	return n
}

func (th *thread) commitALOS(ctx context.Context) error {
	if err := th.cl.Flush(ctx); err != nil {
		return err
	}
	if p := th.produceErr.Load(); p != nil {
		return fmt.Errorf("streams: producing: %w", *p)
	}
	return th.cl.CommitUncommittedOffsets(ctx)
}

// commitEOS ends the transaction: output, changelog writes and input
// offsets commit together or not at all. An aborted transaction leaves
// the local stores ahead of their changelogs, so every task is closed and
// restored from the committed changelog before processing goes on.
func (th *thread) commitEOS(ctx context.Context) error {
	try := kgo.TryCommit
	if th.produceErr.Load() != nil {
		try = kgo.TryAbort
	}
	committed, err := th.sess.End(ctx, try)
	if err != nil {
		return fmt.Errorf("streams: ending transaction: %w", err)
	}
	if !committed {
		if p := th.produceErr.Swap(nil); p != nil {
			th.log.Warn("transaction aborted after a produce error; restoring tasks", "err", *p)
		} else {
			th.log.Info("transaction aborted by a rebalance; restoring tasks")
		}
		th.mu.Lock()
		for id := range th.mu.tasks {
			th.closeTaskLocked(id)
		}
		th.mu.Unlock()
	}
	return th.sess.Begin()
}

func (th *thread) run(ctx context.Context) (err error) {
	defer func() {
		th.mu.Lock()
		for id := range th.mu.tasks {
			th.closeTaskLocked(id)
		}
		th.mu.Unlock()
		th.closeStandbys()
		if th.eos {
			th.sess.Close()
		} else {
			// Leaving the group needs a rebalance, which a poll since
			// the last AllowRebalance still blocks: Close would hang.
			th.cl.AllowRebalance()
			th.cl.Close()
		}
	}()
	if th.eos {
		if err := th.sess.Begin(); err != nil {
			return err
		}
	}
	interval := th.a.cfg.CommitInterval
	lastCommit := time.Now()
	for {
		if ctx.Err() != nil {
			return th.finalCommit()
		}
		wait := max(interval-time.Since(lastCommit), time.Millisecond)
		pctx, cancel := context.WithTimeout(ctx, min(wait, 500*time.Millisecond))
		var fs kgo.Fetches
		if th.eos {
			fs = th.sess.PollFetches(pctx)
		} else {
			fs = th.cl.PollFetches(pctx)
		}
		cancel()
		if fs.IsClientClosed() {
			return nil
		}
		if err := fetchErr(fs); err != nil {
			th.log.Warn("fetch error", "err", err)
		}
		need := map[TaskID]bool{}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 {
				need[TaskID{Subtopology: th.a.topicSub[p.Topic], Partition: p.Partition}] = true
			}
		})
		if err := th.ensureTasks(ctx, need); err != nil {
			if ctx.Err() != nil {
				return th.finalCommit()
			}
			return err
		}
		if err := th.ensureStandbys(); err != nil {
			return err
		}
		th.applyStandbys()
		if err := th.process(fs); err != nil {
			return err
		}
		if time.Since(lastCommit) >= interval {
			if err := th.commit(ctx); err != nil {
				if ctx.Err() != nil {
					return th.finalCommit()
				}
				if th.eos && fenced(err) {
					if err := th.rejoin(err); err != nil {
						return err
					}
					lastCommit = time.Now()
					continue
				}
				return err
			}
			lastCommit = time.Now()
		}
		if !th.eos {
			th.cl.AllowRebalance()
		}
	}
}

func (th *thread) process(fs kgo.Fetches) error {
	th.mu.Lock()
	defer th.mu.Unlock()
	// Per task, the polled records of its partitions, each in offset
	// order; a task takes the record with the lowest record timestamp
	// among its partitions' heads next, as Kafka Streams' partition group
	// does, so that joins and windows see the topics of a poll interleaved
	// by time.
	type tp struct {
		topic     string
		partition int32
	}
	byTask := map[TaskID]map[tp][]*kgo.Record{}
	var order []TaskID
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if len(p.Records) == 0 {
			return
		}
		id := TaskID{Subtopology: th.a.topicSub[p.Topic], Partition: p.Partition}
		m := byTask[id]
		if m == nil {
			m = map[tp][]*kgo.Record{}
			byTask[id] = m
			order = append(order, id)
		}
		k := tp{p.Topic, p.Partition}
		m[k] = append(m[k], p.Records...)
	})
	for _, id := range order {
		t := th.mu.tasks[id]
		if t == nil {
			// Revoked between the poll and now (lost under EOS): the
			// records belong to another owner now.
			continue
		}
		queues := make([][]*kgo.Record, 0, len(byTask[id]))
		for _, rs := range byTask[id] {
			queues = append(queues, rs)
		}
		sort.Slice(queues, func(i, j int) bool { return queues[i][0].Topic < queues[j][0].Topic })
		for {
			best := -1
			for i, q := range queues {
				if len(q) > 0 && (best < 0 || q[0].Timestamp.Before(queues[best][0].Timestamp)) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			r := queues[best][0]
			queues[best] = queues[best][1:]
			if err := t.process(r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Timestamp.UnixMilli(), r.Headers); err != nil {
				return err
			}
		}
	}
	now := time.Now().UnixMilli()
	for _, t := range th.mu.tasks {
		if err := t.punctuateWall(now); err != nil {
			return err
		}
	}
	return nil
}

func (th *thread) commit(ctx context.Context) error {
	if th.eos {
		return th.commitEOS(ctx)
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.commitALOS(ctx)
}

func (th *thread) finalCommit() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if th.eos {
		_, err = th.sess.End(ctx, kgo.TryCommit)
	} else {
		th.mu.Lock()
		err = th.commitALOS(ctx)
		th.mu.Unlock()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("streams: final commit: %w", err)
	}
	return nil
}

// setStandby records the standby tasks of the assignment just received.
func (th *thread) setStandby(ids []TaskID) {
	th.standby.Lock()
	defer th.standby.Unlock()
	th.standby.want = map[TaskID]bool{}
	for _, id := range ids {
		th.standby.want[id] = true
	}
}

// ensureStandbys opens the standby tasks assigned to this thread (unless
// the task runs here as an active task) and closes the ones no longer
// assigned, then points the standby client at their changelogs.
func (th *thread) ensureStandbys() error {
	th.standby.Lock()
	want := maps.Clone(th.standby.want)
	th.standby.Unlock()
	th.mu.Lock()
	active := map[TaskID]bool{}
	for id := range th.mu.tasks {
		active[id] = true
	}
	th.mu.Unlock()
	changed := false
	for id := range th.standbys {
		if !want[id] || active[id] {
			th.closeStandby(id)
			changed = true
		}
	}
	a := th.a
	for id := range want {
		if th.standbys[id] != nil || active[id] {
			continue
		}
		dir := filepath.Join(th.dir, id.String())
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		sb := &standbyTask{stores: map[string]*storeInst{}, next: map[string]int64{}}
		for _, name := range a.topo.subs[id.Subtopology].stores {
			spec := a.topo.stores[name]
			changelog := changelogFor(a.cfg.ApplicationID, spec)
			if spec.global || changelog == "" {
				continue // a store without a changelog cannot be kept
			}
			s, err := openStore(a.cfg.ApplicationID, spec, dir, changelog, nil)
			if err != nil {
				for _, o := range sb.stores {
					_ = o.bs.close()
				}
				return err
			}
			sb.stores[changelog] = s
		}
		th.standbys[id] = sb
		changed = true
		th.log.Info("standby task running", "task", id)
	}
	if changed {
		th.rebuildStandbyClient()
	}
	return nil
}

// closeStandby closes a standby task and deletes its state.
func (th *thread) closeStandby(id TaskID) {
	sb := th.standbys[id]
	if sb == nil {
		return
	}
	for _, s := range sb.stores {
		if err := s.bs.close(); err != nil {
			th.log.Warn("closing standby store", "task", id, "store", s.spec.name, "err", err)
		}
	}
	delete(th.standbys, id)
	_ = os.RemoveAll(filepath.Join(th.dir, id.String()))
}

// rebuildStandbyClient replaces the standby client with one reading every
// standby changelog partition from its next offset (read committed under
// exactly_once_v2, so an aborted transaction never reaches a standby).
func (th *thread) rebuildStandbyClient() {
	if th.scl != nil {
		th.scl.Close()
		th.scl = nil
	}
	consume := map[string]map[int32]kgo.Offset{}
	var running []TaskID
	for id, sb := range th.standbys {
		running = append(running, id)
		for changelog := range sb.stores {
			if consume[changelog] == nil {
				consume[changelog] = map[int32]kgo.Offset{}
			}
			consume[changelog][id.Partition] = kgo.NewOffset().At(sb.next[changelog])
		}
	}
	sort.Slice(running, func(i, j int) bool { return running[i].String() < running[j].String() })
	th.standby.Lock()
	th.standby.running = running
	th.standby.Unlock()
	if len(consume) == 0 {
		return
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(th.a.cfg.BootstrapServers...), kgo.ConsumePartitions(consume),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, th.a.clientOpts...)
	if th.eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		// Only a bad option fails here, and the same options made the
		// thread's own client.
		th.log.Warn("standby client", "err", err)
		return
	}
	th.scl = cl
}

// applyStandbys writes the changelog records the standby client has
// fetched into the standby stores, without waiting for more.
func (th *thread) applyStandbys() {
	if th.scl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	fs := th.scl.PollFetches(ctx)
	cancel()
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Err != nil || len(p.Records) == 0 {
			return
		}
		var sb *standbyTask
		for id, t := range th.standbys {
			if id.Partition == p.Partition && t.stores[p.Topic] != nil {
				sb = t
				break
			}
		}
		if sb == nil {
			return // a task promoted or closed since the fetch
		}
		s := sb.stores[p.Topic]
		for _, r := range p.Records {
			if r.Offset < sb.next[p.Topic] {
				continue
			}
			s.bs.put(r.Key, r.Value)
			sb.next[p.Topic] = r.Offset + 1
		}
	})
}

// closeStandbys closes every standby task and the standby client.
func (th *thread) closeStandbys() {
	for id := range th.standbys {
		th.closeStandby(id)
	}
	if th.scl != nil {
		th.scl.Close()
		th.scl = nil
	}
	th.standby.Lock()
	th.standby.running = nil
	th.standby.Unlock()
}
