package compat

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/testing/poll"
)

// testContext returns a context bounded by d and cancelled at test cleanup.
func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var topicUnsafe = regexp.MustCompile(`[^a-zA-Z0-9-]+`)

// uniqueTopic returns a legal topic name derived from the test name, unique
// across tests and runs, so tests sharing a broker never interfere.
func uniqueTopic(t testing.TB) string {
	t.Helper()
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := strings.Trim(topicUnsafe.ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	return name + "-" + hex.EncodeToString(suffix[:])
}

// newClient returns a kgo client for b that is closed at test cleanup.
// Timeouts are short enough that a broken broker fails fast but generous
// enough for a loaded two-core CI machine.
func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID("vltava-compat"),
		kgo.RetryTimeout(20 * time.Second),
		kgo.RequestTimeoutOverhead(10 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client over its own kgo client.
func newAdmin(t testing.TB, b *Broker) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, b))
}

// createTopic creates topic with the given partitions (replication factor
// 1) and configs, failing the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("CreateTopic %s: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
	waitTopicPartitions(t, adm, topic, int(partitions))
}

// waitTopicPartitions polls metadata until topic has n partitions, each with
// a leader.
func waitTopicPartitions(t testing.TB, adm *kadm.Client, topic string, n int) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil {
			return fmt.Errorf("topic %s not in metadata (err %v)", topic, td.Err)
		}
		if len(td.Partitions) != n {
			return fmt.Errorf("topic %s has %d partitions, want %d", topic, len(td.Partitions), n)
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || p.Err != nil {
				return fmt.Errorf("partition %d has no leader (err %v)", p.Partition, p.Err)
			}
		}
		return nil
	})
}

// eventually calls f until it returns nil, failing the test with f's last
// error once timeout has passed.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	poll.Until(t, timeout, "the condition", f)
}

// produceSync produces records and fails the test on any error, returning
// the records with their assigned partitions and offsets.
func produceSync(t testing.TB, cl *kgo.Client, rs ...*kgo.Record) []*kgo.Record {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return rs
}

// consume polls cl until it has n records, failing on fetch errors, on
// timeout, or (after a short settle) on records beyond n.
func consume(t testing.TB, cl *kgo.Client, n int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	ctx := testContext(t, timeout)
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before timeout %v", len(got), n, timeout)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch errors: %v", fetchErrors(errs))
		}
		got = append(got, fs.Records()...)
	}
	if len(got) > n {
		t.Fatalf("consumed %d records, want exactly %d (first %s/%d@%d)", len(got), n, got[0].Topic, got[0].Partition, got[0].Offset)
	}
	// Nothing more may arrive: a duplicate would show up here.
	extraCtx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if extra := cl.PollFetches(extraCtx).Records(); len(extra) > 0 {
		t.Fatalf("consumed %d records beyond the expected %d (first at %s/%d@%d)", len(extra), n, extra[0].Topic, extra[0].Partition, extra[0].Offset)
	}
	return got
}

func fetchErrors(errs []kgo.FetchError) string {
	var sb strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&sb, "%s/%d: %v; ", e.Topic, e.Partition, e.Err)
	}
	return sb.String()
}

// requireTool returns the path of an external client binary or fails: CI
// installs every client first (scripts/install-test-deps.sh), so a missing
// one is a broken environment, not a reason to skip.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (%v): run scripts/install-test-deps.sh", name, err)
	}
	return path
}

// debianPython is the system interpreter that sees the Debian packages
// python3-kafka and python3-confluent-kafka (a pyenv or venv python3 earlier
// in PATH would not).
const debianPython = "/usr/bin/python3"

// requirePythonModule fails unless debianPython can import module.
func requirePythonModule(t testing.TB, module, debianPackage string) {
	t.Helper()
	out, err := exec.Command(debianPython, "-c", "import "+module).CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import %s (%v: %s): run scripts/install-test-deps.sh (Debian package %s)",
			debianPython, module, err, strings.TrimSpace(string(out)), debianPackage)
	}
}

// rawRecord is one record for encodeBatch.
type rawRecord struct {
	key, value []byte
	headers    []kmsg.Header
}

// batchSpec describes a v2 record batch built by hand for raw produce tests.
type batchSpec struct {
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	timestamp     int64 // first timestamp, ms
	records       []rawRecord
}

// encodeBatch encodes an uncompressed magic-2 record batch with a correct
// length and CRC-32C (over attributes..end, as KIP-98 specifies).
func encodeBatch(s batchSpec) []byte {
	var recs []byte
	for i, r := range s.records {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value, Headers: r.headers}
		body := rec.AppendTo(nil)[1:] // drop the zero length varint
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(s.records) - 1),
		FirstTimestamp:       s.timestamp,
		MaxTimestamp:         s.timestamp,
		ProducerID:           s.producerID,
		ProducerEpoch:        s.producerEpoch,
		FirstSequence:        s.baseSequence,
		NumRecords:           int32(len(s.records)),
		Records:              recs,
	}
	enc := b.AppendTo(nil)
	// Length counts everything after the length field itself (offset 12).
	binary.BigEndian.PutUint32(enc[8:], uint32(len(enc)-12))
	// CRC covers from attributes (offset 21) to the end.
	binary.BigEndian.PutUint32(enc[17:], crc32.Checksum(enc[21:], crc32.MakeTable(crc32.Castagnoli)))
	return enc
}

// produceRequest wraps one batch for topic/partition in a Produce v7 request
// (v3+ carries record batches; v7 is old enough for every broker and new
// enough for idempotence).
func produceRequest(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = acks
	req.TimeoutMillis = 15000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// singlePartitionResponse extracts the only partition response of a
// one-partition produce.
func singlePartitionResponse(t testing.TB, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics, want 1 topic with 1 partition: %+v", len(pr.Topics), pr.Topics)
	}
	return pr.Topics[0].Partitions[0]
}

// errName renders a Kafka error code with its name for failure messages.
func errName(code int16) string {
	if code == 0 {
		return "NONE(0)"
	}
	return fmt.Sprintf("%v(%d)", kerr.ErrorForCode(code), code)
}

// ctxWithTimeout is context.WithTimeout, named for the poll loops that
// derive short per-poll contexts from a test's overall deadline.
func ctxWithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}
