package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/cli"
)

// TestTransactionChaos: an exactly-once consume-transform-produce pipeline
// (two franz-go GroupTransactSession members of one group, each with its
// transactional id) copies an input topic to an output topic while the
// test SIGKILLs, one after the other and again and again, the transaction
// coordinator of a pipeline's transactional id, the leader of an input
// partition and the leader of an output partition, restarting each once
// it is down. RF 3, min.insync.replicas 2 everywhere (__transaction_state
// with Kafka's defaults); every sixth transaction of a pipeline is
// aborted on purpose, so aborted records are in the log to be hidden.
//
// Afterwards, with Jepsen's Kafka anomalies (internal/cli's history check,
// as `vltava verify` uses it):
//   - the input holds what its idempotent producer was acknowledged,
//   - the output read with read_committed, both by a reader that ran
//     through the chaos and by one started after it, holds every input
//     record exactly once (not lost, not duplicated), in input order per
//     key (no internal or external non-monotonic read), and no record a
//     pipeline transaction wrote and then aborted (no aborted read),
//   - no transaction hangs: ListTransactions shows none open,
//     DescribeProducers no open transaction on an output partition, and
//     each output partition's last stable offset is its high watermark.
func TestTransactionChaos(t *testing.T) {
	const (
		in, out, group = "chaos-in", "chaos-out", "chaos-pipeline"
		partitions     = 3
		keys           = 12
		instances      = 2
		kills          = 9
	)
	c := StartCluster(t,
		// Transactions left open by a killed coordinator's clients are
		// aborted within a second of their timeout, not Kafka's 10 s.
		WithOverride("transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000"))
	minISR := map[string]string{"min.insync.replicas": "2"}
	c.createTopic(in, partitions, 3, minISR)
	c.createTopic(out, partitions, 3, minISR)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	input := startChaosInput(t, c, in, keys, 10*time.Millisecond)
	live := startChaosReader(c, out)
	defer live.stop()
	pipes := make([]*chaosPipeline, instances)
	for i := range pipes {
		pipes[i] = startChaosPipeline(t, c, i, group, in, out)
	}
	defer func() {
		for _, p := range pipes {
			p.stop()
		}
	}()

	// The chaos: the coordinator of a pipeline's transactional id, the
	// leader of an input partition, the leader of an output partition,
	// in turn; each victim is restarted, and the next kill waits until
	// every partition the pipeline uses has its full ISR again (with
	// two replicas down no partition could take a write).
	for k := range kills {
		var victim int32
		var what string
		var failedOver func() (bool, string)
		switch k % 3 {
		case 0:
			id := chaosTxnID(k / 3 % instances)
			victim, what = c.txnCoordinator(t, id), "the transaction coordinator of "+id
			failedOver = func() (bool, string) {
				now := c.txnCoordinator(t, id)
				return now != victim, fmt.Sprintf("node %d named", now)
			}
		case 1, 2:
			topic, p := in, int32(k/3)%partitions
			if k%3 == 2 {
				topic, p = out, int32(k/3+1)%partitions
			}
			victim, what = c.leaderOf(t, topic, p), fmt.Sprintf("the leader of %s-%d", topic, p)
			failedOver = func() (bool, string) {
				v, err := c.topicView(topic, victim)
				if err != nil {
					return false, err.Error()
				}
				return v.Partitions[p].Leader >= 0 && v.Partitions[p].Leader != victim, v.String()
			}
		}
		// Let the pipeline get going (again) before the kill.
		before := chaosCommitted(pipes)
		waitFor(t, 60*time.Second, "pipeline commits before kill "+strconv.Itoa(k+1), func() (bool, string) {
			now := chaosCommitted(pipes)
			return now > before+2, fmt.Sprintf("%d transactions committed; %s", now, chaosState(pipes))
		})
		logf(t, "kill %d of %d: %s, node %d", k+1, kills, what, victim)
		c.Node(victim).Kill()
		waitFor(t, 30*time.Second, what+" moved off node "+strconv.Itoa(int(victim)), failedOver)
		c.Node(victim).Restart()
		for _, topic := range []string{in, out} {
			c.waitFullyReplicated(topic, partitions, 60*time.Second)
		}
		c.waitFullyReplicated("__transaction_state", 50, 60*time.Second)
		c.waitFullyReplicated("__consumer_offsets", 6, 60*time.Second)
	}
	input.stop()
	logf(t, "input: %s", input)

	// The pipeline drains the input: the group's committed offsets reach
	// the input's end.
	adm := kadm.NewClient(c.Client(kgo.RequestRetries(3)))
	ends := chaosEnds(t, ctx, adm, in, false)
	waitFor(t, 90*time.Second, "the pipeline's committed offsets at the input's end", func() (bool, string) {
		offs, err := adm.FetchOffsets(ctx, group)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return false, err.Error()
		}
		var behind []string
		for p, end := range ends {
			o, _ := offs.Lookup(in, p)
			if o.At < end {
				behind = append(behind, fmt.Sprintf("p%d at %d of %d", p, o.At, end))
			}
		}
		return len(behind) == 0, strings.Join(behind, ", ") + "; " + chaosState(pipes)
	})
	for _, p := range pipes {
		p.stop()
	}
	for _, p := range pipes {
		logf(t, "pipeline %d: %s", p.instance, p)
		p.mu.Lock()
		for _, e := range p.errs {
			t.Logf("pipeline %d: %s", p.instance, e)
		}
		p.mu.Unlock()
		if err := p.err(); err != nil {
			t.Errorf("pipeline %d: %v", p.instance, err)
		}
	}

	// No transaction hangs.
	waitFor(t, 60*time.Second, "no transaction open", func() (bool, string) {
		lt, err := adm.ListTransactions(ctx, nil, nil)
		if err != nil {
			return false, err.Error()
		}
		var open []string
		for _, tx := range lt.Sorted() {
			switch tx.State {
			case "Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence":
				open = append(open, fmt.Sprintf("%s %s (coordinator %d)", tx.TxnID, tx.State, tx.Coordinator))
			}
		}
		return len(open) == 0, strings.Join(open, ", ")
	})
	outEnds := chaosEnds(t, ctx, adm, out, false)
	waitFor(t, 30*time.Second, "no open transaction on "+out+", its last stable offsets at its high watermarks", func() (bool, string) {
		dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{out: nil})
		if err != nil {
			return false, err.Error()
		}
		var open []string
		for _, tp := range dp {
			for _, pp := range tp.Partitions {
				if pp.Err != nil {
					return false, fmt.Sprintf("p%d: %v", pp.Partition, pp.Err)
				}
				for _, pr := range pp.ActiveProducers {
					if pr.CurrentTxnStartOffset >= 0 {
						open = append(open, fmt.Sprintf("p%d: producer %d epoch %d from offset %d", pp.Partition, pr.ProducerID, pr.ProducerEpoch, pr.CurrentTxnStartOffset))
					}
				}
			}
		}
		lso := chaosEnds(t, ctx, adm, out, true)
		for p, hw := range outEnds {
			if lso[p] != hw {
				open = append(open, fmt.Sprintf("p%d: last stable offset %d, high watermark %d", p, lso[p], hw))
			}
		}
		return len(open) == 0, strings.Join(open, "; ")
	})

	// The histories.
	inAcks := input.acks()
	inReads := c.readAll(in, partitions)
	var reads []cli.VerifyRead
	var want []cli.VerifyAck
	for p, recs := range inReads {
		for i, r := range recs {
			key, seq, ok := parseChaosValue(r.Value)
			if !ok {
				t.Fatalf("input %s-%d@%d: %q", in, p, r.Offset, r.Value)
			}
			reads = append(reads, cli.VerifyRead{Producer: key, Seq: seq, Partition: p, Offset: r.Offset, Poll: i})
			want = append(want, cli.VerifyAck{Producer: key, Seq: seq, Partition: p, Offset: -1})
		}
	}
	checkChaos(t, "input (read_uncommitted)", cli.CheckHistory(inAcks, reads))
	if len(want) == 0 {
		t.Fatal("no input was written")
	}
	aborted := map[string]bool{}
	for _, p := range pipes {
		p.abortedTags(aborted)
	}
	if len(aborted) == 0 {
		t.Error("no pipeline transaction aborted: the aborted-read check proves nothing")
	}
	live.waitEnd(t, outEnds, 60*time.Second)
	live.stop()
	after := startChaosReader(c, out)
	after.waitEnd(t, outEnds, 60*time.Second)
	after.stop()
	for _, rd := range []*chaosReader{live, after} {
		reads, bad := rd.history(aborted)
		if bad != "" {
			t.Errorf("%s: %s", rd.name, bad)
		}
		checkChaos(t, rd.name, cli.CheckHistory(want, reads))
	}
	logf(t, "%d inputs, %d kills, %d aborted transactions; %s", len(want), kills, len(aborted), chaosState(pipes))
}

// checkChaos fails t with res's anomalies.
func checkChaos(t *testing.T, what string, res *cli.VerifyResult) {
	t.Helper()
	logf(t, "%s: %d expected, %d read, %d unacknowledged; anomalies %v", what, res.Acknowledged, res.Read, res.Unacknowledged, res.Counts)
	if !res.OK() {
		shown := res.Anomalies[:min(20, len(res.Anomalies))]
		t.Errorf("%s: anomalies %v, first %+v", what, res.Counts, shown)
	}
}

// chaosEnds returns topic's end offsets per partition: the high
// watermarks, or with committed the last stable offsets.
func chaosEnds(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, committed bool) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	waitFor(t, 30*time.Second, "end offsets of "+topic, func() (bool, string) {
		list := adm.ListEndOffsets
		if committed {
			list = adm.ListCommittedOffsets
		}
		lo, err := list(ctx, topic)
		if err == nil {
			err = lo.Error()
		}
		if err != nil {
			return false, err.Error()
		}
		lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return true, ""
	})
	return out
}

// txnCoordinator is the node coordinating transactional id.
func (c *Cluster) txnCoordinator(t *testing.T, id string) int32 {
	t.Helper()
	var node int32 = -1
	waitFor(t, 60*time.Second, "the transaction coordinator of "+id, func() (bool, string) {
		for _, from := range c.responsive() {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
			resp, err := c.requestFrom(from, req, 5*time.Second)
			if err != nil {
				continue
			}
			if co := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]; co.ErrorCode == 0 {
				node = co.NodeID
				return true, ""
			}
		}
		return false, "no node names a coordinator"
	})
	return node
}

// leaderOf is the leader of topic's partition p.
func (c *Cluster) leaderOf(t *testing.T, topic string, p int32) int32 {
	t.Helper()
	return c.waitTopic(topic, 30*time.Second, fmt.Sprintf("a leader of p%d", p), func(v topicView) bool {
		return v.Partitions[p].Leader >= 0
	}).Partitions[p].Leader
}

func chaosTxnID(instance int) string { return "chaos-pipeline-" + strconv.Itoa(instance) }

// chaosValue is input record seq of key; the output copy adds the writing
// pipeline instance and its transaction number.
func chaosValue(key int, seq int64) []byte {
	return fmt.Appendf(nil, "chaos %d %d", key, seq)
}

func parseChaosValue(v string) (key int, seq int64, ok bool) {
	f := strings.Fields(v)
	if len(f) < 3 || f[0] != "chaos" {
		return 0, 0, false
	}
	k, err1 := strconv.Atoi(f[1])
	s, err2 := strconv.ParseInt(f[2], 10, 64)
	return k, s, err1 == nil && err2 == nil
}

// chaosInput writes seq 0, 1, … of keys 0..n-1 in turn, one record every
// interval, with franz-go's idempotent producer (acks=all), keyed, so
// each key's records are in one partition in send order.
type chaosInput struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ack    []cli.VerifyAck
	failed int
	first  error
}

func startChaosInput(t *testing.T, c *Cluster, topic string, keys int, interval time.Duration) *chaosInput {
	t.Helper()
	cl, err := c.newClient(c.addrs(nil), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &chaosInput{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(in.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := int64(0); ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			key, seq := int(i%int64(keys)), i/int64(keys)
			r := &kgo.Record{Topic: topic, Key: []byte("k" + strconv.Itoa(key)), Value: chaosValue(key, seq)}
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				in.mu.Lock()
				defer in.mu.Unlock()
				if err != nil {
					in.failed++
					if in.first == nil {
						in.first = err
					}
					return
				}
				in.ack = append(in.ack, cli.VerifyAck{Producer: key, Seq: seq, Partition: r.Partition, Offset: r.Offset})
			})
		}
	}()
	t.Cleanup(in.stop)
	return in
}

// stop ends producing and waits for every record's outcome.
func (in *chaosInput) stop() {
	in.cancel()
	<-in.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_ = in.cl.Flush(ctx)
	in.cl.Close()
}

func (in *chaosInput) acks() []cli.VerifyAck {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]cli.VerifyAck(nil), in.ack...)
}

func (in *chaosInput) String() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return fmt.Sprintf("%d acknowledged, %d failed (first error: %v)", len(in.ack), in.failed, in.first)
}

// txnOutcome is what a pipeline was told of one of its transactions.
type txnOutcome int

const (
	txnCommitted txnOutcome = iota
	txnAborted
	txnUnknown // End failed: either
)

// chaosPipeline is one member of the exactly-once pipeline: a
// GroupTransactSession reading the input with read_committed and writing,
// per input record, its copy to the output (same key) in the transaction
// that commits the consumed offsets. A session whose End fails (the
// client is then unusable, as franz-go documents) is closed and replaced
// by a new one with the same transactional id, which fences the old.
type chaosPipeline struct {
	instance int
	cancel   context.CancelFunc
	quit     atomic.Bool
	done     chan struct{}

	mu       sync.Mutex
	outcomes map[int]txnOutcome // by transaction number
	fatal    error
	sessions int
	lastErr  error
	errs     []string // every End error, timed

	committed atomic.Int64
}

func startChaosPipeline(t *testing.T, c *Cluster, instance int, group, in, out string) *chaosPipeline {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &chaosPipeline{instance: instance, cancel: cancel, done: make(chan struct{}), outcomes: map[int]txnOutcome{}}
	newSession := func() (*kgo.GroupTransactSession, error) {
		opts := []kgo.Opt{
			kgo.SeedBrokers(c.addrs(nil)...),
			kgo.MetadataMinAge(200 * time.Millisecond),
			kgo.MetadataMaxAge(2 * time.Second),
			kgo.DialTimeout(2 * time.Second),
			kgo.TransactionalID(chaosTxnID(instance)),
			kgo.TransactionTimeout(10 * time.Second),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(in),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.FetchMaxWait(200 * time.Millisecond),
			kgo.SessionTimeout(10 * time.Second),
			kgo.HeartbeatInterval(500 * time.Millisecond),
			kgo.RequestTimeoutOverhead(5 * time.Second),
			kgo.RetryTimeout(30 * time.Second),
		}
		if d := c.topo.dial(); d != nil {
			opts = append(opts, kgo.Dialer(d))
		}
		return kgo.NewGroupTransactSession(append(opts, c.opts.clientOpts...)...)
	}
	go func() {
		defer close(p.done)
		p.fail(p.run(ctx, newSession, out))
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *chaosPipeline) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.fatal == nil {
		p.fatal = err
	}
}

func (p *chaosPipeline) run(ctx context.Context, newSession func() (*kgo.GroupTransactSession, error), out string) error {
	sess, err := newSession()
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.sessions++
	p.mu.Unlock()
	defer func() { sess.Close() }()
	restart := func(why error) error {
		p.mu.Lock()
		p.lastErr = why
		p.errs = append(p.errs, time.Now().Format("15:04:05.000")+" "+why.Error())
		p.sessions++
		p.mu.Unlock()
		sess.Close()
		s, err := newSession()
		if err != nil {
			return err
		}
		sess = s
		return nil
	}
	for txn := 1; !p.quit.Load(); {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollRecords(pctx, 200)
		pcancel()
		if ctx.Err() != nil {
			return nil
		}
		if fs.IsClientClosed() {
			return errors.New("session closed under the pipeline")
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("Begin: %w", err)
		}
		for _, r := range recs {
			v := fmt.Appendf(append([]byte(nil), r.Value...), " %d %d", p.instance, txn)
			sess.Produce(ctx, &kgo.Record{Topic: out, Key: r.Key, Value: v}, nil)
		}
		how := kgo.TryCommit
		if txn%6 == 0 {
			how = kgo.TryAbort
		}
		ectx, ecancel := context.WithTimeout(ctx, 60*time.Second)
		committed, err := sess.End(ectx, how)
		ecancel()
		outcome := txnAborted
		switch {
		case err != nil:
			outcome = txnUnknown
		case committed:
			outcome = txnCommitted
			p.committed.Add(1)
		}
		p.mu.Lock()
		p.outcomes[txn] = outcome
		p.mu.Unlock()
		txn++
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if err := restart(err); err != nil {
				return err
			}
		}
	}
	return nil
}

// stop ends the pipeline after its current transaction.
func (p *chaosPipeline) stop() {
	p.quit.Store(true)
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		p.cancel()
		<-p.done
	}
}

func (p *chaosPipeline) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

// abortedTags adds the tags ("instance txn") of the transactions p was
// told aborted.
func (p *chaosPipeline) abortedTags(into map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, o := range p.outcomes {
		if o == txnAborted {
			into[fmt.Sprintf("%d %d", p.instance, n)] = true
		}
	}
}

func (p *chaosPipeline) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n [3]int
	for _, o := range p.outcomes {
		n[o]++
	}
	return fmt.Sprintf("%d transactions committed, %d aborted, %d unknown; %d sessions (last error: %v)", n[txnCommitted], n[txnAborted], n[txnUnknown], p.sessions, p.lastErr)
}

func chaosCommitted(pipes []*chaosPipeline) int64 {
	var n int64
	for _, p := range pipes {
		n += p.committed.Load()
	}
	return n
}

func chaosState(pipes []*chaosPipeline) string {
	var s []string
	for _, p := range pipes {
		s = append(s, fmt.Sprintf("pipeline %d: %v", p.instance, p))
	}
	return strings.Join(s, "; ")
}

// chaosReader reads a topic with read_committed from its start, keeping
// every record in the order received with the number of the poll that
// returned it, and each partition's next offset (control records
// included, so a partition ending in a marker is read to its end).
type chaosReader struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	recs   []chaosRead
	next   map[int32]int64
	errs   []string
}

type chaosRead struct {
	partition int32
	offset    int64
	value     string
	poll      int
}

var chaosReaders atomic.Int32

func startChaosReader(c *Cluster, topic string) *chaosReader {
	c.t.Helper()
	name := "read_committed reader " + strconv.Itoa(int(chaosReaders.Add(1)))
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(300*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	r := &chaosReader{name: name, cl: cl, cancel: cancel, done: make(chan struct{}), next: map[int32]int64{}}
	go func() {
		defer close(r.done)
		for poll := 1; ctx.Err() == nil; poll++ {
			fs := cl.PollFetches(ctx)
			r.mu.Lock()
			fs.EachError(func(_ string, p int32, err error) {
				if !errors.Is(err, context.Canceled) && len(r.errs) < 20 {
					r.errs = append(r.errs, fmt.Sprintf("p%d: %v", p, err))
				}
			})
			fs.EachPartition(func(fp kgo.FetchTopicPartition) {
				for _, rec := range fp.Records {
					r.next[rec.Partition] = rec.Offset + 1
					if !rec.Attrs.IsControl() {
						r.recs = append(r.recs, chaosRead{rec.Partition, rec.Offset, string(rec.Value), poll})
					}
				}
				// Aborted data and markers at the end are skipped: an
				// empty answer at the last stable offset is the end.
				if fp.Err == nil && len(fp.Records) == 0 && fp.LastStableOffset == fp.HighWatermark && fp.HighWatermark > r.next[fp.Partition] {
					r.next[fp.Partition] = fp.HighWatermark
				}
			})
			r.mu.Unlock()
		}
	}()
	return r
}

// waitEnd waits until the reader has read every partition to ends.
func (r *chaosReader) waitEnd(t *testing.T, ends map[int32]int64, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, r.name+" at the end", func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for p, end := range ends {
			if r.next[p] < end {
				return false, fmt.Sprintf("p%d at %d of %d; errors %v", p, r.next[p], end, r.errs)
			}
		}
		return true, ""
	})
}

func (r *chaosReader) stop() {
	r.cancel()
	<-r.done
}

// history is what the reader read, each record marked Aborted when the
// transaction that wrote it was aborted, with a description of any
// record that is not the pipeline's.
func (r *chaosReader) history(aborted map[string]bool) ([]cli.VerifyRead, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []cli.VerifyRead
	for _, rec := range r.recs {
		f := strings.Fields(rec.value)
		key, seq, ok := parseChaosValue(rec.value)
		if !ok || len(f) != 5 {
			return nil, fmt.Sprintf("p%d@%d: %q is not a pipeline's output", rec.partition, rec.offset, rec.value)
		}
		out = append(out, cli.VerifyRead{Producer: key, Seq: seq, Partition: rec.partition, Offset: rec.offset, Poll: rec.poll,
			Aborted: aborted[f[3]+" "+f[4]]})
	}
	return out, ""
}
