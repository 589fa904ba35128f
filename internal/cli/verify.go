package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// verifyOptions are `vltava verify`'s flags.
type verifyOptions struct {
	topic         string
	partitions    int32
	replication   int16
	producers     int
	records       int64
	transactional bool
	txnSize       int
	abortEvery    int
	killPIDs      []int
	killCommand   string
	killInterval  time.Duration
	readTimeout   time.Duration
	progress      bool
	throughput    float64
	pace          pacer
}

func newVerifyCommand() *cobra.Command {
	o := &verifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check a cluster keeps every acknowledged record: lost, duplicated, int/ext-nonmonotonic, aborted-read, offset-mismatch",
		Long: `Produce with N idempotent (or transactional) producers with acks=all,
keep every acknowledgement, then read the topic back (read_committed) and
report what the cluster got wrong, as Jepsen's Kafka checker does:

  lost             acknowledged (or committed) but never read back
  duplicated       read more than once
  int-nonmonotonic within one poll, a partition's offsets go backwards or a
                   producer's records in a partition come out of send order
  ext-nonmonotonic the same across polls
  aborted-read     a record of an aborted transaction was read
  offset-mismatch  read at another partition or offset than acknowledged

Records whose send failed may still be in the log (Kafka allows it); they
are counted as unacknowledged, not as anomalies. With --kill-pids, or
--kill-command, processes are killed every --kill-interval while the
producers run (the command runs through sh -c and may restart what it
killed). Works against any Kafka-compatible cluster. Exits non-zero on any
anomaly.`,
		Example: `  vltava verify --bootstrap-server localhost:9092 --records 100000 --producers 4 --partitions 6 --replication-factor 3
  vltava verify --kill-pids 4242,4243 --kill-interval 5s --output json
  vltava verify --transactional --abort-every 3 --kill-command './restart-random-broker.sh'`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error { return o.run(in) }),
	}
	f := cmd.Flags()
	f.StringVar(&o.topic, "topic", "", "topic to write and read (default: a new vltava-verify-<time> topic)")
	f.Int32Var(&o.partitions, "partitions", 6, "partitions of the topic, if it is created")
	f.Int16Var(&o.replication, "replication-factor", -1, "replication factor of the topic, if it is created (-1: the broker default)")
	f.IntVar(&o.producers, "producers", 3, "concurrent producers")
	f.Int64Var(&o.records, "records", 10000, "records to produce in total")
	f.BoolVar(&o.transactional, "transactional", false, "produce in transactions (each producer its own transactional.id)")
	f.IntVar(&o.txnSize, "txn-records", 20, "records per transaction with --transactional")
	f.IntVar(&o.abortEvery, "abort-every", 0, "with --transactional, abort every Nth transaction (0: commit all)")
	f.IntSliceVar(&o.killPIDs, "kill-pids", nil, "process ids to SIGKILL, one per --kill-interval in turn, while producing")
	f.StringVar(&o.killCommand, "kill-command", "", "shell command run every --kill-interval while producing (e.g. one that kills and restarts a broker)")
	f.DurationVar(&o.killInterval, "kill-interval", 10*time.Second, "time between kills")
	f.DurationVar(&o.readTimeout, "read-timeout", 2*time.Minute, "how long reading the topic back may take")
	f.Float64Var(&o.throughput, "throughput", 0, "records per second across all producers (0: as fast as acknowledged), so a run lasts long enough to span kills")
	f.BoolVar(&o.progress, "progress", false, "show the progress bar even when stderr is not a terminal")
	return cmd
}

func (o *verifyOptions) validate() error {
	switch {
	case o.producers < 1:
		return errors.New("--producers must be at least 1")
	case o.records < 1:
		return errors.New("--records must be at least 1")
	case o.partitions < 1:
		return errors.New("--partitions must be at least 1")
	case o.txnSize < 1:
		return errors.New("--txn-records must be at least 1")
	case o.abortEvery < 0:
		return errors.New("--abort-every must not be negative")
	case o.killInterval <= 0:
		return errors.New("--kill-interval must be positive")
	case o.abortEvery > 0 && !o.transactional:
		return errors.New("--abort-every needs --transactional")
	case o.throughput < 0:
		return errors.New("--throughput must not be negative")
	}
	return nil
}

// verifyHistory collects acknowledgements from the producer goroutines.
type verifyHistory struct {
	mu   sync.Mutex // guards acks
	acks []VerifyAck

	acked, failed atomic.Int64
	firstErr      atomic.Pointer[error]
}

func (h *verifyHistory) ack(a ...VerifyAck) {
	h.mu.Lock()
	h.acks = append(h.acks, a...)
	h.mu.Unlock()
	h.acked.Add(int64(len(a)))
}

func (h *verifyHistory) fail(n int, err error) {
	h.failed.Add(int64(n))
	h.firstErr.CompareAndSwap(nil, &err)
}

func (o *verifyOptions) run(in *invocation) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.topic == "" {
		o.topic = fmt.Sprintf("vltava-verify-%d", time.Now().UnixMilli())
	}
	ctx, cancel := signalContext(in.ctx)
	defer cancel()
	_, adm, err := in.cluster(ctx)
	if err != nil {
		return err
	}
	resp, err := adm.CreateTopic(ctx, o.partitions, o.replication, nil, o.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %q: %w%s", o.topic, err, detail(resp.ErrMessage))
	}
	topics, err := adm.ListTopics(ctx, o.topic)
	if err != nil {
		return err
	}
	partitions := int32(len(topics[o.topic].Partitions))
	if partitions == 0 {
		return fmt.Errorf("topic %q has no partitions", o.topic)
	}
	start, err := adm.ListEndOffsets(ctx, o.topic)
	if err != nil {
		return err
	}

	h := &verifyHistory{}
	o.pace = pacer{start: time.Now()}
	if o.throughput > 0 {
		o.pace.every = time.Duration(float64(time.Second) / o.throughput)
	}
	pctx, pcancel := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	if o.progress || isTerminalWriter(in.stderr) {
		go func() {
			defer close(progressDone)
			verifyProgress(pctx, in.stderr, h, o.records)
		}()
	} else {
		close(progressDone)
	}
	kills := o.startKiller(pctx, in.stderr)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, o.producers)
	for p := range o.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = o.produce(ctx, in, p, partitions, &next, h)
		}()
	}
	wg.Wait()
	pcancel()
	<-progressDone
	killed := kills()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	reads, err := o.readBack(ctx, in, adm, partitions, start)
	if err != nil {
		return err
	}
	res := CheckHistory(h.acks, reads)
	rep := verifyReport{Topic: o.topic, Producers: o.producers, Sent: o.records, Failed: h.failed.Load(), Kills: killed, VerifyResult: res}
	if e := h.firstErr.Load(); e != nil {
		rep.FirstError = (*e).Error()
	}
	if err := rep.print(in.stdout, in.json); err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("%d anomalies found", len(res.Anomalies))
	}
	return nil
}

func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

// verifyValue encodes a record's identity; parseVerifyValue reads it back.
func verifyValue(producer int, seq int64) []byte {
	return []byte("vltava-verify " + strconv.Itoa(producer) + " " + strconv.FormatInt(seq, 10))
}

func parseVerifyValue(v []byte) (producer int, seq int64, ok bool) {
	f := strings.Fields(string(v))
	if len(f) != 3 || f[0] != "vltava-verify" {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(f[1])
	s, err2 := strconv.ParseInt(f[2], 10, 64)
	return p, s, err1 == nil && err2 == nil
}

// produce runs producer p until the records are all handed out. Record seq
// of producer p goes to partition seq % partitions, so each producer's
// records interleave over every partition and order is checkable per
// partition.
func (o *verifyOptions) produce(ctx context.Context, in *invocation, p int, partitions int32, next *atomic.Int64, h *verifyHistory) error {
	opts := append(in.clientOpts(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1<<30),
		kgo.RecordDeliveryTimeout(30*time.Second),
	)
	if o.transactional {
		opts = append(opts, kgo.TransactionalID(fmt.Sprintf("%s-%d", o.topic, p)), kgo.TransactionTimeout(30*time.Second))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	var seq int64
	take := func() bool {
		n := next.Add(1)
		return n <= o.records && o.pace.wait(ctx, n-1) == nil
	}
	record := func() *kgo.Record {
		r := &kgo.Record{Topic: o.topic, Partition: int32(seq % int64(partitions)), Value: verifyValue(p, seq)}
		seq++
		return r
	}
	if !o.transactional {
		var inflight sync.WaitGroup
		for ctx.Err() == nil && take() {
			r := record()
			s := seq - 1
			inflight.Add(1)
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer inflight.Done()
				if err != nil {
					h.fail(1, err)
					return
				}
				h.ack(VerifyAck{Producer: p, Seq: s, Partition: r.Partition, Offset: r.Offset})
			})
		}
		inflight.Wait()
		return nil
	}
	for txn := 1; ctx.Err() == nil; txn++ {
		var batch []*kgo.Record
		for len(batch) < o.txnSize && take() {
			batch = append(batch, record())
		}
		if len(batch) == 0 {
			return nil
		}
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		results := cl.ProduceSync(ctx, batch...)
		abort := o.abortEvery > 0 && txn%o.abortEvery == 0
		if err := results.FirstErr(); err != nil {
			abort = true
		}
		commit := kgo.TryCommit
		if abort {
			commit = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			// Outcome unknown: neither acknowledged nor aborted, so
			// neither a loss nor an aborted read can be claimed.
			h.fail(len(batch), err)
			continue
		}
		var acks []VerifyAck
		for _, r := range results {
			// Results come in completion order: the record says which it is.
			_, s, ok := parseVerifyValue(r.Record.Value)
			if r.Err != nil || !ok {
				continue
			}
			acks = append(acks, VerifyAck{Producer: p, Seq: s, Partition: r.Record.Partition, Offset: r.Record.Offset, Aborted: abort})
		}
		if abort && results.FirstErr() != nil {
			h.fail(len(batch)-len(acks), results.FirstErr())
		}
		h.ack(acks...)
	}
	return nil
}

// readBack reads every partition from where it ended before the run to
// where it ends now, with read_committed.
func (o *verifyOptions) readBack(ctx context.Context, in *invocation, adm *kadm.Client, partitions int32, start kadm.ListedOffsets) ([]VerifyRead, error) {
	end, err := adm.ListEndOffsets(ctx, o.topic)
	if err != nil {
		return nil, err
	}
	from := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		s, _ := start.Lookup(o.topic, p)
		e, _ := end.Lookup(o.topic, p)
		if e.Offset > s.Offset {
			from[p] = kgo.NewOffset().At(s.Offset)
			want[p] = e.Offset
		}
	}
	if len(from) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(append(in.clientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come back as records, so a partition
		// whose log ends with an aborted transaction is read to its
		// end even though read_committed hides the aborted records.
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, o.readTimeout)
	defer cancel()
	next := map[int32]int64{}
	var reads []VerifyRead
	poll := 0
	done := func() bool {
		for p, e := range want {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(rctx)
		poll++
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rctx.Err() != nil {
			return nil, fmt.Errorf("reading %s back: not complete within --read-timeout %v (read up to %v, want %v)", o.topic, o.readTimeout, next, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= want[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			if p, s, ok := parseVerifyValue(r.Value); ok {
				reads = append(reads, VerifyRead{Producer: p, Seq: s, Partition: r.Partition, Offset: r.Offset, Poll: poll})
			}
		})
		// Under read_committed, aborted records and control batches
		// are skipped: the partition's end may lie past the last record.
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.HighWatermark >= want[fp.Partition] && fp.LastStableOffset >= want[fp.Partition] && len(fp.Records) == 0 && fp.Err == nil {
				next[fp.Partition] = max(next[fp.Partition], want[fp.Partition])
			}
		})
	}
	return reads, nil
}

// startKiller kills --kill-pids in turn, or runs --kill-command, every
// --kill-interval until ctx ends; the returned func waits for it and
// returns how many kills were made.
func (o *verifyOptions) startKiller(ctx context.Context, stderr io.Writer) func() int {
	if len(o.killPIDs) == 0 && o.killCommand == "" {
		return func() int { return 0 }
	}
	var kills int
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(o.killInterval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if len(o.killPIDs) > 0 {
				pid := o.killPIDs[i%len(o.killPIDs)]
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					fmt.Fprintf(stderr, "\nkill %d: %v\n", pid, err)
					continue
				}
				fmt.Fprintf(stderr, "\nkilled pid %d\n", pid)
				kills++
				continue
			}
			cmd := exec.CommandContext(ctx, "sh", "-c", o.killCommand)
			cmd.Stdout, cmd.Stderr = stderr, stderr
			if err := cmd.Run(); err != nil {
				// A run cut short by the end of verification (its
				// context cancelled) is not a kill either.
				if ctx.Err() == nil {
					fmt.Fprintf(stderr, "\n--kill-command: %v\n", err)
				}
				continue
			}
			kills++
		}
	}()
	return func() int { <-done; return kills }
}

// verifyProgress draws a one-line progress bar on w until ctx ends.
func verifyProgress(ctx context.Context, w io.Writer, h *verifyHistory, total int64) {
	const width = 30
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	draw := func() {
		done := h.acked.Load() + h.failed.Load()
		frac := min(float64(done)/float64(total), 1)
		n := int(frac * width)
		fmt.Fprintf(w, "\r[%s%s] %3.0f%% %d/%d acknowledged, %d failed", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, h.acked.Load(), total, h.failed.Load())
	}
	for {
		select {
		case <-ctx.Done():
			draw()
			fmt.Fprintln(w)
			return
		case <-t.C:
			draw()
		}
	}
}

// verifyReport is what verify prints.
type verifyReport struct {
	Topic      string `json:"topic"`
	Producers  int    `json:"producers"`
	Sent       int64  `json:"sent"`
	Failed     int64  `json:"failed"`
	Kills      int    `json:"kills"`
	FirstError string `json:"first_error,omitempty"`
	*VerifyResult
}

func (r *verifyReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
	}
	fmt.Fprintf(w, "topic %s: %d producers, %d records sent, %d acknowledged, %d aborted, %d failed, %d read back (%d unacknowledged), %d kills\n",
		r.Topic, r.Producers, r.Sent, r.Acknowledged, r.Aborted, r.Failed, r.Read, r.Unacknowledged, r.Kills)
	if r.FirstError != "" {
		fmt.Fprintf(w, "first send error: %s\n", r.FirstError)
	}
	t := newTable(w, "ANOMALY", "COUNT")
	for _, k := range verifyKinds {
		t.row(k, r.Counts[k])
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.Anomalies) == 0 {
		fmt.Fprintln(w, "no anomalies")
		return nil
	}
	fmt.Fprintln(w)
	t = newTable(w, "KIND", "PRODUCER", "SEQ", "PARTITION", "OFFSET", "DETAIL")
	const shown = 50
	for _, a := range r.Anomalies[:min(shown, len(r.Anomalies))] {
		t.row(a.Kind, a.Producer, a.Seq, a.Partition, a.Offset, a.Detail)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.Anomalies) > shown {
		fmt.Fprintf(w, "... %d more (--output json lists up to %d)\n", len(r.Anomalies)-shown, maxListedAnomalies)
	}
	return nil
}
