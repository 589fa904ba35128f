package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// logRecord is a record read back from a partition.
type logRecord struct {
	Offset int64
	Value  string
}

// readAll reads every partition of topic from its log start to its high
// watermark (as ListOffsets reports it now) through the nodes ids (all
// responsive nodes if empty), and returns the records per partition in
// offset order.
func (c *Cluster) readAll(topic string, partitions int32, ids ...int32) map[int32][]logRecord {
	c.t.Helper()
	if len(ids) == 0 {
		ids = c.responsive()
	}
	adm := kadm.NewClient(c.ClientOf(ids, kgo.RequestRetries(3)))
	var ends kadm.ListedOffsets
	waitFor(c.t, 30*time.Second, "end offsets of "+topic, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		lo, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = lo.Error()
		}
		if err != nil {
			return false, err.Error()
		}
		ends = lo
		return true, ""
	})
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		o, ok := ends.Lookup(topic, p)
		if !ok {
			c.t.Fatalf("ListEndOffsets of %s has no partition %d", topic, p)
		}
		want[p] = o.Offset
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := c.ClientOf(ids,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	out := map[int32][]logRecord{}
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(90 * time.Second)
	var fetchErrs []string
	for !done() {
		if time.Now().After(deadline) {
			c.t.Fatalf("reading %s back: not complete within 90 s: read up to %v, want %v; fetch errors: %v", topic, next, want, fetchErrs)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && len(fetchErrs) < 20 {
				fetchErrs = append(fetchErrs, fmt.Sprintf("%s[%d]: %v", t, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return // written after the end was taken: not ours to check
			}
			out[r.Partition] = append(out[r.Partition], logRecord{Offset: r.Offset, Value: string(r.Value)})
			next[r.Partition] = r.Offset + 1
		})
	}
	return out
}

// verifyLedgers checks Kafka's acks=all promise against what was read
// back: every acknowledged record is in the partition it was acknowledged
// for, exactly once, at the offset the producer was given, and a
// producer's acknowledged records keep their order within a partition. It
// fails the test with the first problems and returns a summary.
func verifyLedgers(t testing.TB, logs map[int32][]logRecord, ledgers ...*ledger) string {
	t.Helper()
	type place struct {
		partition int32
		offset    int64
	}
	var summary []string
	for _, l := range ledgers {
		found := map[int64][]place{}
		for p, recs := range logs {
			for _, r := range recs {
				name, seq, ok := parseRecordValue(r.Value)
				if ok && name == l.name {
					found[seq] = append(found[seq], place{p, r.Offset})
				}
			}
		}
		acked := l.snapshot()
		ackedSeqs := map[int64]bool{}
		var problems []string
		lost, dup, moved := 0, 0, 0
		byPartition := map[int32][]ackedRecord{}
		for _, a := range acked {
			ackedSeqs[a.Seq] = true
			byPartition[a.Partition] = append(byPartition[a.Partition], a)
			got := found[a.Seq]
			switch {
			case len(got) == 0:
				lost++
				problems = append(problems, fmt.Sprintf("seq %d acknowledged at p%d@%d is missing", a.Seq, a.Partition, a.Offset))
			case len(got) > 1:
				dup++
				problems = append(problems, fmt.Sprintf("seq %d acknowledged at p%d@%d is present %d times: %v", a.Seq, a.Partition, a.Offset, len(got), got))
			case got[0] != place{a.Partition, a.Offset}:
				moved++
				problems = append(problems, fmt.Sprintf("seq %d acknowledged at p%d@%d is at p%d@%d", a.Seq, a.Partition, a.Offset, got[0].partition, got[0].offset))
			}
		}
		reordered := 0
		for p, as := range byPartition {
			slices.SortFunc(as, func(a, b ackedRecord) int { return int(a.Seq - b.Seq) })
			for i := 1; i < len(as); i++ {
				if as[i].Offset <= as[i-1].Offset {
					reordered++
					problems = append(problems, fmt.Sprintf("p%d: seq %d acknowledged at offset %d, not after seq %d at %d",
						p, as[i].Seq, as[i].Offset, as[i-1].Seq, as[i-1].Offset))
				}
			}
		}
		unackedPresent, unackedDup := 0, 0
		for seq, places := range found {
			if !ackedSeqs[seq] {
				unackedPresent++
				if len(places) > 1 {
					unackedDup++
				}
			}
		}
		s := fmt.Sprintf("%v; read back: %d lost, %d duplicated, %d at another offset, %d out of order; %d unacknowledged present (%d of them duplicated)",
			l, lost, dup, moved, reordered, unackedPresent, unackedDup)
		summary = append(summary, s)
		if len(acked) == 0 {
			t.Errorf("%s: no record was acknowledged at all", l.name)
		}
		if len(problems) > 0 {
			if len(problems) > 15 {
				problems = append(problems[:15], fmt.Sprintf("... and %d more", len(problems)-15))
			}
			t.Errorf("%s\n  %s", s, strings.Join(problems, "\n  "))
		}
	}
	return strings.Join(summary, "\n")
}

// groupConsumer is a kgo consumer-group member reading a topic, committing
// automatically, remembering every value it saw.
type groupConsumer struct {
	group, topic string
	cl           *kgo.Client
	cancel       context.CancelFunc
	done         chan struct{}
	stopOnce     sync.Once
	mu           struct {
		sync.Mutex
		seen map[string]bool
		errs []string
	}
}

// startGroupConsumer starts a groupConsumer; security, if given, is how
// it connects instead of the cluster's own client options
// (Cluster.newClientAs).
func startGroupConsumer(t testing.TB, c *Cluster, group, topic string, security ...kgo.Opt) *groupConsumer {
	t.Helper()
	cl, err := c.newClientAs(security, c.addrs(nil),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AutoCommitInterval(300*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("group consumer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &groupConsumer{group: group, topic: topic, cl: cl, cancel: cancel, done: make(chan struct{})}
	g.mu.seen = map[string]bool{}
	t.Cleanup(g.stop)
	go g.run(ctx)
	return g
}

func (g *groupConsumer) run(ctx context.Context) {
	defer close(g.done)
	for ctx.Err() == nil {
		fs := g.cl.PollFetches(ctx)
		g.mu.Lock()
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && len(g.mu.errs) < 50 {
				g.mu.errs = append(g.mu.errs, fmt.Sprintf("%s %s[%d]: %v", time.Now().Format("15:04:05.000"), t, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) { g.mu.seen[string(r.Value)] = true })
		g.mu.Unlock()
	}
}

// stop leaves the group and closes the client.
func (g *groupConsumer) stop() {
	g.stopOnce.Do(func() {
		g.cancel()
		<-g.done
		g.cl.Close()
	})
}

// committed returns the sum of the group's committed offsets on its topic.
func (g *groupConsumer) committed(adm *kadm.Client) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, g.group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return 0, err
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == g.topic {
			sum += o.At
		}
	})
	return sum, nil
}

// waitCommitAdvance waits until the committed sum exceeds from.
func (g *groupConsumer) waitCommitAdvance(t testing.TB, adm *kadm.Client, from int64, timeout time.Duration, what string) int64 {
	t.Helper()
	var now int64
	waitFor(t, timeout, what, func() (bool, string) {
		sum, err := g.committed(adm)
		if err != nil {
			return false, fmt.Sprintf("OffsetFetch: %v; consumer errors: %v", err, g.errors())
		}
		now = sum
		return sum > from, fmt.Sprintf("committed %d (was %d); consumer errors: %v", sum, from, g.errors())
	})
	return now
}

// missing counts the acknowledged records of ledgers the group has not
// delivered yet, with up to 5 examples.
func (g *groupConsumer) missing(ledgers ...*ledger) (int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	var examples []string
	for _, l := range ledgers {
		for _, a := range l.snapshot() {
			v := recordValue(l.name, a.Seq)
			if !g.mu.seen[v] {
				n++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%s (p%d@%d)", v, a.Partition, a.Offset))
				}
			}
		}
	}
	return n, examples
}

func (g *groupConsumer) errors() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	errs := g.mu.errs
	if len(errs) > 5 {
		errs = errs[len(errs)-5:]
	}
	return slices.Clone(errs)
}
