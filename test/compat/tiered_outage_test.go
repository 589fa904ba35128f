package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/s3server"
)

// The smaller scale of the outage cases: 256 KiB segments, 512 KiB kept
// locally, 1 KiB records.
const (
	outageSegmentBytes = 256 << 10
	outageLocalBytes   = 512 << 10
)

func createOutageTopic(t *testing.T, adm *kadm.Client) string {
	t.Helper()
	topic := uniqueTopic(t)
	str := func(s string) *string { return &s }
	createTopic(t, adm, topic, 1, map[string]*string{
		"remote.storage.enable": str("true"),
		"segment.bytes":         str(strconv.Itoa(outageSegmentBytes)),
		"local.retention.bytes": str(strconv.Itoa(outageLocalBytes)),
		"retention.bytes":       str("-1"),
	})
	return topic
}

// produceRange writes records [from, to) to partition 0 of topic, each
// acknowledged before the call returns.
func produceRange(t *testing.T, prod *kgo.Client, from, to int) {
	t.Helper()
	for start := from; start < to; start += 512 {
		rs := make([]*kgo.Record, 0, 512)
		for i := start; i < min(start+512, to); i++ {
			rs = append(rs, &kgo.Record{Value: tieredValue(i)})
		}
		produceSync(t, prod, rs...)
	}
}

// remoteErrors is the store's failures so far: failed copy rounds, and
// failed deletions of the copies a failed round left unfinished (a round
// that cannot delete them does not start another copy).
func remoteErrors(base string) (float64, error) {
	c, err := remoteSeries(base, "remotecopyerrorspersec_total")
	if err != nil {
		return 0, err
	}
	d, err := remoteSeries(base, "remotedeleteerrorspersec_total")
	return c + d, err
}

// remoteSeries reads a kafka_server_brokertopicmetrics_remote* series.
func remoteSeries(base, name string) (float64, error) {
	fams, err := tryScrape(base)
	if err != nil {
		return 0, err
	}
	v, ok := sample(fams, "kafka_server_brokertopicmetrics_"+name, nil)
	if !ok {
		return 0, fmt.Errorf("/metrics has no kafka_server_brokertopicmetrics_%s", name)
	}
	return v, nil
}

// readAllFrom0 reads partition 0 from offset 0 with franz-go and checks
// that it holds records [0, n) in order.
func readAllFrom0(t *testing.T, b *Broker, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	readRange(t, b, topic, 0, n, opts...)
}

// readRange reads partition 0 from offset from with franz-go and checks
// that it holds records [from, to) in order.
func readRange(t *testing.T, b *Broker, topic string, from, to int, opts ...kgo.Opt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cons := newClient(t, b, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(int64(from))}})}, opts...)...)
	defer cons.Close()
	next := from
	for next < to {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of records [%d, %d): %v", next-from, from, to, err)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch at %d: %v", next, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(next) || string(r.Value) != string(tieredValue(next)) {
				t.Fatalf("record at offset %d (%.9q), want offset %d", r.Offset, r.Value, next)
			}
			next++
		})
	}
}

// TestTieredStorageRidesOutAStoreOutage stops the S3 server under a tiered
// topic: produce keeps working, local retention keeps every segment the
// store does not hold, the copy errors and the copy lag show the outage in
// /metrics, and once the server is back the uploads catch up and the topic
// reads back whole from offset 0.
func TestTieredStorageRidesOutAStoreOutage(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	admin := freeport.Addr(t)
	base := "http://" + admin
	b, srv := startTieredBroker(t, WithOverride("admin.listeners", base))
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10)) // batches within the small segments
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// Before: 2 MiB, tiered until nothing rolled is left to copy.
	const before, during = 2048, 4096
	produceRange(t, prod, 0, before)
	if err := poll.Err(2*time.Minute, func() error {
		copied, err := remoteSeries(base, "remotecopyrequestspersec_total")
		if err != nil {
			return err
		}
		lag, err := remoteSeries(base, "remotecopylagsegments")
		if err != nil {
			return err
		}
		if copied == 0 || lag != 0 {
			return fmt.Errorf("%v segments copied, %v left to copy", copied, lag)
		}
		return nil
	}); err != nil {
		t.Fatalf("tiering before the outage: %v", err)
	}

	srv.Stop()
	errorsBefore, err := remoteErrors(base)
	if err != nil {
		t.Fatal(err)
	}
	// During: 4 MiB more, every batch acknowledged.
	produceRange(t, prod, before, before+during)
	if err := poll.Err(2*time.Minute, func() error {
		errs, err := remoteErrors(base)
		if err != nil {
			return err
		}
		lag, err := remoteSeries(base, "remotecopylagbytes")
		if err != nil {
			return err
		}
		// Several failed rounds, so local retention has had its passes.
		if errs < errorsBefore+3 || lag < outageLocalBytes {
			return fmt.Errorf("remote errors %v (were %v), copy lag %v bytes", errs, errorsBefore, lag)
		}
		return nil
	}); err != nil {
		t.Fatalf("the outage does not show in /metrics: %v", err)
	}
	// Nothing the store does not hold was deleted locally: the local log
	// still starts at or before the first record written during the outage,
	// though it is far past local.retention.bytes.
	if el, err := listOffset(ctx, b, topic, -4); err != nil || el > before {
		t.Fatalf("earliest-local offset %d (%v) during the outage, want ≤ %d", el, err, before)
	}
	if local, err := localSize(ctx, adm, topic); err != nil || local < during*1024 {
		t.Fatalf("local size %d (%v) during the outage, want ≥ the %d bytes not in the store", local, err, during*1024)
	}

	// After: the uploads catch up and local retention applies again.
	srv.Restart(t)
	if err := poll.Err(2*time.Minute, func() error {
		lag, err := remoteSeries(base, "remotecopylagsegments")
		if err != nil {
			return err
		}
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil {
			return err
		}
		if lag != 0 || el <= before {
			return fmt.Errorf("%v segments left to copy, earliest-local offset %d", lag, el)
		}
		return nil
	}); err != nil {
		t.Fatalf("tiering did not catch up after the outage: %v", err)
	}
	if e, err := listOffset(ctx, b, topic, -2); err != nil || e != 0 {
		t.Fatalf("earliest offset %d (%v), want 0", e, err)
	}
	readAllFrom0(t, b, topic, before+during)
	if v, err := remoteSeries(base, "remotefetchbytespersec_total"); err != nil || v == 0 {
		t.Fatalf("remote fetch bytes %v (%v) after reading the remote tier", v, err)
	}
}

// TestTieredStorageWithWrongCredentials runs a tiered topic against a
// store that refuses the node's secret key: the broker serves, the copies
// fail with the store's refusal in the log (and never the secret), nothing
// is deleted locally, and every record reads back from the local log.
func TestTieredStorageWithWrongCredentials(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	admin := freeport.Addr(t)
	base := "http://" + admin
	srv := s3server.Start(t, "tiered")
	const wrong = "not-the-secret-key-0123456789"
	b := StartBroker(t, append(tieredOptions(t, srv, wrong), WithOverride("admin.listeners", base))...)
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10)) // batches within the small segments
	const n = 3072
	produceRange(t, prod, 0, n)

	if err := poll.Err(2*time.Minute, func() error {
		errs, err := remoteErrors(base)
		if err != nil {
			return err
		}
		if errs < 3 {
			return fmt.Errorf("%v remote errors", errs)
		}
		return nil
	}); err != nil {
		t.Fatalf("the refused copies do not show in /metrics: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if el, err := listOffset(ctx, b, topic, -4); err != nil || el != 0 {
		t.Fatalf("earliest-local offset %d (%v), want 0: nothing is in the store, so nothing may go locally", el, err)
	}
	if copied, err := remoteSeries(base, "remotecopyrequestspersec_total"); err != nil || copied != 0 {
		t.Fatalf("%v segments copied (%v) with a refused key", copied, err)
	}
	out := b.Output()
	if !strings.Contains(out, "copying segments to remote storage") || !strings.Contains(out, "SignatureDoesNotMatch") {
		t.Fatalf("the log does not say the store refused the copy:\n%.4000s", out)
	}
	if strings.Contains(out, wrong) {
		t.Fatal("the log shows the secret key")
	}
	readAllFrom0(t, b, topic, n)
}

// TestTieredStorageKeepsAbortedDataHidden writes transactions to a tiered
// topic, every other one aborted, until most of the log is in the remote
// tier: read_committed consumers (franz-go and kcat) see exactly the
// committed records from offset 0, a read_uncommitted one sees them all.
func TestTieredStorageKeepsAbortedDataHidden(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	requireTool(t, "kcat")
	b, _ := startTieredBroker(t)
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.TransactionalID(topic+"-txn"), kgo.TransactionTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	const txns, perTxn = 48, 64 // 3 MiB
	var committed []string
	for x := 0; x < txns; x++ {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		rs := make([]*kgo.Record, perTxn)
		for i := range rs {
			rs[i] = &kgo.Record{Value: tieredValue(x*perTxn + i)}
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("transaction %d: %v", x, err)
		}
		commit := x%2 == 0
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("ending transaction %d: %v", x, err)
		}
		if commit {
			for _, r := range rs {
				committed = append(committed, string(r.Value))
			}
		}
	}
	// Most of the log, with aborted transactions in it, is remote only.
	if err := poll.Err(2*time.Minute, func() error {
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil {
			return err
		}
		if el < txns*perTxn/2 {
			return fmt.Errorf("earliest-local offset %d", el)
		}
		return nil
	}); err != nil {
		t.Fatalf("the transactions were not tiered: %v", err)
	}

	read := func(isolation kgo.IsolationLevel) []string {
		cons := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
			kgo.FetchIsolationLevel(isolation))
		defer cons.Close()
		var got []string
		// The end: the last transaction's marker, past its last record.
		hw, err := listOffset(ctx, b, topic, -1)
		if err != nil {
			t.Fatal(err)
		}
		for last := int64(-1); last < hw-2; {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read up to offset %d of %d: %v", last, hw, err)
			}
			for _, e := range fs.Errors() {
				t.Fatalf("fetch: %v", e.Err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, string(r.Value))
				last = r.Offset
			})
			if isolation == kgo.ReadCommitted() && len(got) == len(committed) {
				break
			}
		}
		return got
	}
	if got := read(kgo.ReadCommitted()); !slices.Equal(got, committed) {
		t.Fatalf("read_committed from offset 0: %d records, want the %d committed ones in order", len(got), len(committed))
	}
	if got := read(kgo.ReadUncommitted()); len(got) != txns*perTxn {
		t.Fatalf("read_uncommitted from offset 0: %d records, want all %d", len(got), txns*perTxn)
	}
	out := runKcatFor(t, 2*time.Minute, "", "-C", "-b", b.Addr(), "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%s\n")
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, committed) {
		t.Fatalf("kcat read_committed from the beginning: %d records, want the %d committed ones in order", len(got), len(committed))
	}
}

// TestTieredStorageDeleteRecordsAndTopicDeletion moves the log start of a
// tiered topic into its remote tier with DeleteRecords (the start holds
// across a restart, and the remote segments below it are deleted), then
// deletes the topic: the bucket is emptied.
func TestTieredStorageDeleteRecordsAndTopicDeletion(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	admin := freeport.Addr(t)
	base := "http://" + admin
	b, srv := startTieredBroker(t, WithOverride("admin.listeners", base))
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	const n, cut = 3072, 1000
	produceRange(t, prod, 0, n)
	prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := poll.Err(2*time.Minute, func() error {
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil {
			return err
		}
		if el <= cut+outageSegmentBytes/1024 {
			return fmt.Errorf("earliest-local offset %d", el)
		}
		// Tiering has caught up: what is still local fits the local
		// retention and the active segment, so no upload after the sizes
		// below adds remote bytes while DeleteRecords removes some.
		if local, _ := tierSizes(t, b, topic); local > outageLocalBytes+outageSegmentBytes {
			return fmt.Errorf("%d bytes still local", local)
		}
		return nil
	}); err != nil {
		t.Fatalf("the topic was not tiered past offset %d: %v", cut, err)
	}
	// `vltava topics describe` shows both tiers: together they hold every
	// record, and the remote bytes are in the bucket.
	local, remote := tierSizes(t, b, topic)
	_, inBucket := bucketUsage(t, srv)
	if local <= 0 || remote <= 0 || local+remote < n*1024 || remote > inBucket {
		t.Fatalf("topics describe: local %d bytes, remote %d bytes; want both > 0, together ≥ %d, remote ≤ the bucket's %d",
			local, remote, n*1024, inBucket)
	}
	deleted, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: cut}}})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := deleted.Lookup(topic, 0); d.Err != nil || d.LowWatermark != cut {
		t.Fatalf("DeleteRecords(%d) in the remote tier: low watermark %d, %v", cut, d.LowWatermark, d.Err)
	}
	checkStart := func(stage string) {
		t.Helper()
		if e, err := listOffset(ctx, b, topic, -2); err != nil || e != cut {
			t.Fatalf("%s: earliest offset %d (%v), want %d", stage, e, err, cut)
		}
		readRange(t, b, topic, cut, n)
		// A time before every record finds the first one kept, not one
		// of the deleted records its remote segment still holds.
		offs, err := adm.ListOffsetsAfterMilli(ctx, 1, topic)
		if err == nil {
			err = offs.Error()
		}
		if o, _ := offs.Lookup(topic, 0); err != nil || o.Offset != cut {
			t.Fatalf("%s: ListOffsets for a time before every record = %d (%v), want %d", stage, o.Offset, err, cut)
		}
	}
	checkStart("after DeleteRecords")
	// The remote segments wholly below the new start go: of those that
	// start below it, only the one holding it stays.
	if err := poll.Err(2*time.Minute, func() error {
		var below []int
		for _, s := range remoteSegmentStarts(t, srv) {
			if s < cut {
				below = append(below, s)
			}
		}
		if len(below) > 1 {
			return fmt.Errorf("remote segments starting at %v, below the log start %d", below, cut)
		}
		return nil
	}); err != nil {
		t.Fatalf("remote segments below the log start were kept: %v", err)
	}
	b.Stop()
	b.Restart()
	checkStart("after a restart")
	if _, after := tierSizes(t, b, topic); after >= remote {
		t.Fatalf("topics describe: remote %d bytes after DeleteRecords, %d before", after, remote)
	}

	if _, err := adm.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if err := poll.Err(2*time.Minute, func() error {
		if objects, bytes := bucketUsage(t, srv); objects != 0 {
			return fmt.Errorf("bucket holds %d objects, %d bytes", objects, bytes)
		}
		return nil
	}); err != nil {
		t.Fatalf("deleting the topic left its remote data: %v", err)
	}
	if v, err := remoteSeries(base, "remotedeleterequestspersec_total"); err != nil || v == 0 {
		t.Fatalf("remote deletes %v (%v)", v, err)
	}
}

// TestTieredStorageDisabledOnATopic follows KIP-950: turning tiering off
// alone is refused; remote.log.copy.disable keeps the remote data readable
// while nothing more is copied; remote.storage.enable=false with
// remote.log.delete.on.disable=true deletes the remote data, and the topic
// then starts at its local log.
func TestTieredStorageDisabledOnATopic(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	admin := freeport.Addr(t)
	base := "http://" + admin
	b, srv := startTieredBroker(t, WithOverride("admin.listeners", base))
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	const n = 2048
	produceRange(t, prod, 0, n)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := poll.Err(2*time.Minute, func() error {
		if el, err := listOffset(ctx, b, topic, -4); err != nil || el == 0 {
			return fmt.Errorf("earliest-local offset %d (%v)", el, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("the topic was not tiered: %v", err)
	}
	alter := func(kv ...string) error {
		var as []kadm.AlterConfig
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1]
			as = append(as, kadm.AlterConfig{Name: kv[i], Value: &v})
		}
		rs, err := adm.AlterTopicConfigs(ctx, as, topic)
		if err != nil {
			return err
		}
		r, err := rs.On(topic, nil)
		if err != nil {
			return err
		}
		return r.Err
	}

	if err := alter("remote.storage.enable", "false"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("turning tiering off without deleting: %v, want INVALID_CONFIG", err)
	}
	// Read only: copying stops, the remote tier is still read.
	if err := alter("remote.log.copy.disable", "true", "local.retention.bytes", "-2"); err != nil {
		t.Fatalf("remote.log.copy.disable: %v", err)
	}
	produceRange(t, prod, n, 2*n)
	readAllFrom0(t, b, topic, 2*n)
	// A round has seen the new segments and left them: none starting past
	// what was written before is in the bucket.
	if err := poll.Err(2*time.Minute, func() error {
		lag, err := remoteSeries(base, "remotecopylagsegments")
		if err != nil {
			return err
		}
		if lag < n*1024/outageSegmentBytes-2 {
			return fmt.Errorf("%v segments left uncopied", lag)
		}
		return nil
	}); err != nil {
		t.Fatalf("copying disabled: %v", err)
	}
	for _, s := range remoteSegmentStarts(t, srv) {
		if s >= n {
			t.Fatalf("a segment starting at %d was copied with remote.log.copy.disable=true", s)
		}
	}

	if err := alter("remote.storage.enable", "false", "remote.log.delete.on.disable", "true"); err != nil {
		t.Fatalf("turning tiering off with remote.log.delete.on.disable: %v", err)
	}
	if err := poll.Err(2*time.Minute, func() error {
		if objects, bytes := bucketUsage(t, srv); objects != 0 {
			return fmt.Errorf("bucket holds %d objects, %d bytes", objects, bytes)
		}
		e, err := listOffset(ctx, b, topic, -2)
		if err != nil {
			return err
		}
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil {
			return err
		}
		if e != el || e == 0 {
			return fmt.Errorf("earliest offset %d, earliest-local %d", e, el)
		}
		return nil
	}); err != nil {
		t.Fatalf("the remote data was not deleted: %v", err)
	}
	el, _ := listOffset(ctx, b, topic, -4)
	readRange(t, b, topic, int(el), 2*n)
}

// remoteSegmentStarts lists the base offsets of the segment logs in the
// bucket (objects named <base offset>-<segment id>.log).
func remoteSegmentStarts(t *testing.T, srv *s3server.Server) []int {
	t.Helper()
	var out []int
	err := filepath.WalkDir(filepath.Join(srv.Root, "tiered"), func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while the walk ran: no longer in the bucket
		}
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir // the server's own
		}
		if d.IsDir() || !strings.HasSuffix(path, ".log") {
			return nil
		}
		base, _, ok := strings.Cut(filepath.Base(path), "-")
		if n, err := strconv.Atoi(base); ok && err == nil {
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tierSizes is partition 0's local and remote bytes as `vltava topics
// describe --output json` shows them.
func tierSizes(t *testing.T, b *Broker, topic string) (local, remote int64) {
	t.Helper()
	bin, err := brokerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "topics", "describe", topic, "--output", "json", "--bootstrap-server", b.Addr()).Output()
	if err != nil {
		t.Fatalf("vltava topics describe: %v", err)
	}
	var ds []struct {
		Partitions []struct {
			Partition  int32  `json:"partition"`
			LocalSize  *int64 `json:"local_size"`
			RemoteSize *int64 `json:"remote_size"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(out, &ds); err != nil || len(ds) != 1 || len(ds[0].Partitions) != 1 {
		t.Fatalf("vltava topics describe: %v\n%s", err, out)
	}
	p := ds[0].Partitions[0]
	if p.LocalSize == nil || p.RemoteSize == nil {
		t.Fatalf("vltava topics describe shows no tier sizes for a tiered topic:\n%s", out)
	}
	return *p.LocalSize, *p.RemoteSize
}
