package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedRecord is one record a producer was told was written with
// acks=all: where it went and the sequence number carried in its value.
type ackedRecord struct {
	Seq       int64
	Partition int32
	Offset    int64
}

// ledger is what one producer was told: the records acknowledged, and how
// many failed. Safe for concurrent use.
type ledger struct {
	name string // producer name: the value prefix "<name>:<seq>"
	mu   struct {
		sync.Mutex
		acked   []ackedRecord
		failed  int
		lastErr string
	}
}

func newLedger(name string) *ledger { return &ledger{name: name} }

func (l *ledger) ack(r ackedRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.acked = append(l.mu.acked, r)
}

func (l *ledger) fail(err string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.failed++
	l.mu.lastErr = err
}

// counts returns the acknowledged and failed totals so far.
func (l *ledger) counts() (acked, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.acked), l.mu.failed
}

func (l *ledger) snapshot() []ackedRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedRecord(nil), l.mu.acked...)
}

func (l *ledger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := fmt.Sprintf("%s: %d acked, %d failed", l.name, len(l.mu.acked), l.mu.failed)
	if l.mu.lastErr != "" {
		s += " (last error: " + l.mu.lastErr + ")"
	}
	return s
}

// recordValue is the value (and key) of a producer's record seq.
func recordValue(producer string, seq int64) string {
	return producer + ":" + strconv.FormatInt(seq, 10)
}

// parseRecordValue splits a value written by recordValue.
func parseRecordValue(v string) (producer string, seq int64, ok bool) {
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], seq, err == nil
}

// producer is a running load generator feeding a ledger.
type producer interface {
	Ledger() *ledger
	// Stop stops producing, waits for every outstanding record's outcome
	// and reports a problem the producer itself hit (not a record failure).
	Stop() error
}

// kgoProducer writes records seq = 0, 1, 2, … to partition seq % partitions
// with franz-go's idempotent producer (acks=all, kgo's default), one record
// every interval, never more than maxInFlight unacknowledged; padding bytes
// in a header make records bigger where the volume matters.
type kgoProducer struct {
	l       *ledger
	cl      *kgo.Client
	cancel  context.CancelFunc
	done    chan struct{}
	padding []byte
}

// startKgoProducer starts a kgoProducer; security, if given, is how it
// connects instead of the cluster's own client options
// (Cluster.newClientAs).
func startKgoProducer(t testing.TB, c *Cluster, name, topic string, partitions int32, interval time.Duration, padding int, security ...kgo.Opt) *kgoProducer {
	t.Helper()
	cl, err := c.newClientAs(security, c.addrs(nil),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
		// Long enough to ride out a leader failover plus a restart;
		// a record that still fails is counted, not hidden.
		kgo.RecordDeliveryTimeout(60*time.Second),
		kgo.ProduceRequestTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatalf("producer client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &kgoProducer{l: newLedger(name), cl: cl, cancel: cancel, done: make(chan struct{}), padding: bytes.Repeat([]byte{'x'}, padding)}
	go p.run(ctx, partitions, interval)
	return p
}

const maxInFlight = 500

func (p *kgoProducer) run(ctx context.Context, partitions int32, interval time.Duration) {
	defer close(p.done)
	sem := make(chan struct{}, maxInFlight)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case sem <- struct{}{}:
		}
		select {
		case <-ctx.Done():
			<-sem
			return
		case <-tick.C:
		}
		v := recordValue(p.l.name, seq)
		r := &kgo.Record{Key: []byte(v), Value: []byte(v), Partition: int32(seq % int64(partitions))}
		if len(p.padding) > 0 {
			r.Headers = []kgo.RecordHeader{{Key: "padding", Value: p.padding}}
		}
		// context.Background: stopping the generator must not fail the
		// records already handed to the client.
		p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			<-sem
			if err != nil {
				p.l.fail(err.Error())
				return
			}
			p.l.ack(ackedRecord{Seq: seq, Partition: r.Partition, Offset: r.Offset})
		})
	}
}

func (p *kgoProducer) Ledger() *ledger { return p.l }

func (p *kgoProducer) Stop() error {
	p.cancel()
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := p.cl.Flush(ctx)
	p.cl.Close()
	if err != nil {
		return fmt.Errorf("kgo producer %s: flush: %w", p.l.name, err)
	}
	return nil
}

// waitProgress waits until every producer has at least min more
// acknowledged records than it had when called.
func waitProgress(t testing.TB, timeout time.Duration, what string, min int, ps ...producer) {
	t.Helper()
	base := make([]int, len(ps))
	for i, p := range ps {
		base[i], _ = p.Ledger().counts()
	}
	waitFor(t, timeout, what, func() (bool, string) {
		ok := true
		var status []string
		for i, p := range ps {
			acked, _ := p.Ledger().counts()
			if acked-base[i] < min {
				ok = false
			}
			status = append(status, fmt.Sprintf("%v (+%d)", p.Ledger(), acked-base[i]))
		}
		return ok, strings.Join(status, "; ")
	})
}
