package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/testing/s3server"
	"github.com/vltava/vltava/internal/tiered"
	"github.com/vltava/vltava/internal/tiered/s3"
)

// runDumpLog runs `vltava dump-log args...` in process.
func runDumpLog(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newDumpLogCommand()
	addGlobalFlags(cmd)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SetContext(context.Background())
	cmd.SilenceUsage = true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDumpLogRemoteRefusesBadInput(t *testing.T) {
	good := writeFile(t, "s3.properties", "rsm.config.storage.s3.bucket.name=b\nrsm.config.storage.s3.endpoint.url=http://127.0.0.1:1\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no config", []string{"--remote", "orders-0"}, "--remote needs --remote-config"},
		{"config without remote", []string{"--remote-config", good}, "go with --remote TOPIC-PARTITION"},
		{"offset without remote", []string{"--offset", "3"}, "go with --remote TOPIC-PARTITION"},
		{"files with remote", []string{"--remote", "orders-0", "--remote-config", good, "x.log"}, "give no files with it"},
		{"no partition", []string{"--remote", "orders", "--remote-config", good}, "want TOPIC-PARTITION"},
		{"bad partition", []string{"--remote", "orders-x", "--remote-config", good}, "partition number"},
		{"negative offset", []string{"--remote", "orders-0", "--remote-config", good, "--offset", "-1"}, "want an offset ≥ 0"},
		{"missing file", []string{"--remote", "orders-0", "--remote-config", filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"no rsm keys", []string{"--remote", "orders-0", "--remote-config", writeFile(t, "p", "broker.id=1\nstorage.s3.bucket.name=b\n")}, "has no rsm.config.* keys"},
		{"unknown rsm key", []string{"--remote", "orders-0", "--remote-config", writeFile(t, "p", "rsm.config.storage.s3.bucket.name=b\nrsm.config.storage.s3.bucket=typo\n")}, "rsm.config.storage.s3.bucket: not a setting"},
		{"bad rsm value", []string{"--remote", "orders-0", "--remote-config", writeFile(t, "p", "rsm.config.storage.s3.bucket.name=b\nrsm.config.storage.s3.path.style.access.enabled=maybe\n")}, "path.style.access.enabled"},
		{"no bucket", []string{"--remote", "orders-0", "--remote-config", writeFile(t, "p", "rsm.config.key.prefix=a/\n")}, "bucket.name is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runDumpLog(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// remoteFixture is a bucket on a real S3 server holding tiered segments of
// orders-0 (copied by the store's own Copy from a log the storage package
// wrote), and the properties file a broker tiering to it would have.
type remoteFixture struct {
	srv      *s3server.Server
	cacheDir string // the broker's fetch cache, which dump-log leaves alone
	store    *s3.Store
	props    string
	topicID  [16]byte
	segments []storage.TierSegment
	records  int // offsets [0, records) are in the remote segments
}

func remoteValue(i int) string { return fmt.Sprintf("value-%06d", i) }

func newRemoteFixture(t *testing.T) *remoteFixture {
	t.Helper()
	srv := s3server.Start(t, "tiered")
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	// The broker's own file: its other keys are ignored.
	cacheDir := filepath.Join(t.TempDir(), "remote-fetch-cache")
	props := writeFile(t, "server.properties", strings.Join([]string{
		"node.id=1",
		"log.dirs=/var/lib/vltava",
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.s3.bucket.name=tiered",
		"rsm.config.storage.s3.endpoint.url=" + srv.Endpoint,
		"rsm.config.storage.s3.region=" + srv.Region,
		"rsm.config.storage.s3.path.style.access.enabled=true",
		"rsm.config.key.prefix=cluster-a/",
		"rsm.config.chunk.size=65536",
		"rsm.config.fetch.chunk.cache.path=" + cacheDir,
	}, "\n")+"\n")
	cfg, _, err := loadRemoteConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}

	// A log of 400 batches of 10 records in 64 KiB segments, with index
	// entries every 512 bytes.
	dir := filepath.Join(t.TempDir(), "orders-0")
	lc := storage.DefaultConfig()
	lc.SegmentBytes, lc.IndexIntervalBytes = 64<<10, 512
	l, err := storage.Open(dir, lc, storage.OpenOptions{Topic: "orders", Partition: 0, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for range 400 {
		recs := make([]record.Record, 10)
		for j := range recs {
			v := remoteValue(next+j) + strings.Repeat("x", 100)
			recs[j] = record.Record{OffsetDelta: int32(j), TimestampDelta: int64(j), Key: []byte(fmt.Sprint("k", next+j)), Value: []byte(v)}
		}
		b, err := record.BuildBatch(record.Header{LastOffsetDelta: 9, FirstTimestamp: 1_700_000_000_000 + int64(next),
			MaxTimestamp: 1_700_000_000_009 + int64(next), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b, 0); err != nil {
			t.Fatal(err)
		}
		next += 10
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segs := l.TierCandidates(-1, math.MaxInt64)
	if len(segs) < 3 {
		t.Fatalf("%d rolled segments, want at least 3", len(segs))
	}
	f := &remoteFixture{srv: srv, cacheDir: cacheDir, store: st, props: props, segments: segs, records: int(segs[len(segs)-1].NextOffset)}
	copy(f.topicID[:], "orders-topic-id!")
	for _, s := range segs {
		f.copySegment(t, "orders", f.topicID, s)
	}
	t.Cleanup(func() { l.Close() })
	return f
}

func (f *remoteFixture) copySegment(t *testing.T, topic string, topicID [16]byte, s storage.TierSegment) tiered.SegmentMetadata {
	t.Helper()
	md := tiered.SegmentMetadata{StartOffset: s.BaseOffset, EndOffset: s.NextOffset - 1, MaxTimestamp: s.MaxTimestamp, BrokerID: 1}
	md.Topic, md.TopicID, md.Partition = topic, topicID, 0
	rand.Read(md.ID[:])
	data := tiered.SegmentData{Log: s.LogPath, OffsetIndex: s.OffsetIndexPath, TimeIndex: s.TimeIndexPath,
		TxnIndex: s.TxnIndexPath, ProducerSnapshot: s.ProducerSnapshotPath,
		LeaderEpochs: []byte(fmt.Sprintf("0\n1\n0 %d\n", s.BaseOffset))}
	if _, err := f.store.Copy(context.Background(), md, data); err != nil {
		t.Fatal(err)
	}
	return md
}

// remoteDump is the --output json form dump-log --remote prints.
type remoteDump struct {
	File    string `json:"file"`
	Kind    string `json:"kind"`
	Batches []struct {
		Records []struct {
			Offset int64   `json:"offset"`
			Value  *string `json:"value"`
		} `json:"records"`
	} `json:"batches"`
	IndexEntries []storage.OffsetIndexEntry `json:"index_entries"`
	LeaderEpochs []storage.LeaderEpochEntry `json:"leader_epochs"`
	Mismatches   []string                   `json:"mismatches"`
	Text         string                     `json:"text"`
	Error        string                     `json:"error"`
	Remote       *remoteSegmentInfo         `json:"remote_segment"`
}

func decodeRemoteDump(t *testing.T, out string) []remoteDump {
	t.Helper()
	var ds []remoteDump
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		t.Fatalf("json output: %v\n%.500s", err, out)
	}
	return ds
}

// recordsOf counts each offset's records in the dumps of .log objects of
// one topic id, checking each value.
func recordsOf(t *testing.T, ds []remoteDump, topicID string) map[int64]int {
	t.Helper()
	seen := map[int64]int{}
	for _, d := range ds {
		if d.Kind != "log" || d.Remote == nil || d.Remote.TopicID != topicID {
			continue
		}
		for _, b := range d.Batches {
			for _, r := range b.Records {
				if r.Value == nil || !strings.HasPrefix(*r.Value, remoteValue(int(r.Offset))) {
					t.Fatalf("%s: offset %d has value %v, want %s…", d.File, r.Offset, r.Value, remoteValue(int(r.Offset)))
				}
				seen[r.Offset]++
			}
		}
	}
	return seen
}

func TestDumpLogRemoteDumpsTheTieredSegments(t *testing.T) {
	f := newRemoteFixture(t)
	ctx := context.Background()
	// The topic deleted and created again: its first segment under a new
	// id. A longer topic name sharing the prefix is not orders.
	var newID [16]byte
	copy(newID[:], "orders-again-id!")
	f.copySegment(t, "orders", newID, f.segments[0])
	f.copySegment(t, "orders-eu", f.topicID, f.segments[0])
	// An unfinished upload: objects without their manifest.
	md := f.copySegment(t, "orders", f.topicID, f.segments[1])
	if err := f.store.DeleteKey(ctx, f.store.ObjectKey(md, "rsm-manifest")); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := runDumpLog(t, "--remote", "orders-0", "--remote-config", f.props, "--deep-iteration", "--print-data-log", "--output", "json")
	if err != nil {
		t.Fatalf("dump-log --remote: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "warning: "+f.props+": rsm.config.fetch.chunk.cache.path is the broker's fetch cache") {
		t.Errorf("no warning that the fetch cache is not used: %q", stderr)
	}
	if _, err := os.Stat(f.cacheDir); !os.IsNotExist(err) {
		t.Errorf("dump-log touched the broker's fetch cache %s: %v", f.cacheDir, err)
	}
	ds := decodeRemoteDump(t, out)
	id, again := b64ID(f.topicID), b64ID(newID)
	seen := recordsOf(t, ds, id)
	for off := int64(0); off < int64(f.records); off++ {
		if seen[off] != 1 {
			t.Fatalf("offset %d dumped %d times, want once", off, seen[off])
		}
	}
	if len(seen) != f.records {
		t.Fatalf("%d offsets dumped, want %d", len(seen), f.records)
	}
	if n := len(recordsOf(t, ds, again)); n != int(f.segments[0].NextOffset) {
		t.Fatalf("the recreated topic's segment: %d records, want %d", n, f.segments[0].NextOffset)
	}
	kinds := map[string]int{}
	for _, d := range ds {
		kinds[d.Kind]++
		if d.Error != "" || len(d.Mismatches) > 0 {
			t.Errorf("%s: error %q, mismatches %v", d.File, d.Error, d.Mismatches)
		}
		if strings.Contains(d.File, "orders-eu") {
			t.Errorf("another topic's object dumped: %s", d.File)
		}
		if d.Kind != "unfinished-upload" && !strings.HasPrefix(d.File, "cluster-a/orders-") {
			t.Errorf("dump names %q, not the object key", d.File)
		}
		if d.Kind == "leader-epoch-checkpoint" && (len(d.LeaderEpochs) != 1 || d.LeaderEpochs[0].StartOffset != d.Remote.StartOffset) {
			t.Errorf("%s: epochs %v", d.File, d.LeaderEpochs)
		}
	}
	segs := len(f.segments) + 1
	if kinds["log"] != segs || kinds["index"] != segs || kinds["timeindex"] != segs || kinds["leader-epoch-checkpoint"] != segs || kinds["unfinished-upload"] != 1 {
		t.Fatalf("dumped kinds %v, want %d of each of the segment's files and one unfinished upload", kinds, segs)
	}
	indexed := false
	for _, d := range ds {
		indexed = indexed || (d.Kind == "index" && len(d.IndexEntries) > 0)
	}
	if !indexed {
		t.Fatal("no index entries dumped: the fixture's segments should have some")
	}

	// --offset: the segment holding it, under each topic id.
	mid := f.segments[0].NextOffset + 3
	out, stderr, err = runDumpLog(t, "--remote", "orders-0", "--remote-config", f.props, "--offset", fmt.Sprint(mid), "--output", "json")
	if err != nil {
		t.Fatalf("--offset %d: %v\n%s", mid, err, stderr)
	}
	for _, d := range decodeRemoteDump(t, out) {
		if d.Remote == nil || d.Remote.StartOffset > mid || d.Remote.EndOffset < mid {
			t.Fatalf("--offset %d dumped %s (%+v)", mid, d.File, d.Remote)
		}
	}
	if _, _, err := runDumpLog(t, "--remote", "orders-0", "--remote-config", f.props, "--offset", fmt.Sprint(f.records+100)); err == nil ||
		!strings.Contains(err.Error(), "no remote segment of orders-0 holds offset") {
		t.Fatalf("--offset past the remote tier: %v", err)
	}
	if _, _, err := runDumpLog(t, "--remote", "nothing-0", "--remote-config", f.props); err == nil || !strings.Contains(err.Error(), "holds no segments of nothing-0") {
		t.Fatalf("a topic the store has not: %v", err)
	}

	// The table: a line per segment, the files named by their keys.
	table, _, err := runDumpLog(t, "--remote", "orders-0", "--remote-config", f.props, "--offset", "0")
	if err != nil {
		t.Fatal(err)
	}
	logKey := f.store.PartitionPrefix("orders", f.topicID, 0) + fmt.Sprintf("%020d-", 0)
	if !strings.Contains(table, "Remote segment ") || !strings.Contains(table, "of orders-0 (topic id "+id+"): offsets 0 to ") ||
		!strings.Contains(table, "Dumping "+logKey) || !strings.Contains(table, "Log starting offset: 0") ||
		!strings.Contains(table, "baseOffset: 0 lastOffset: 9 count: 10") {
		t.Fatalf("table output:\n%.1500s", table)
	}
}

func TestDumpLogRemoteReportsACorruptedObject(t *testing.T) {
	f := newRemoteFixture(t)
	// Flip a byte of the second segment's log behind the server's back.
	want := fmt.Sprintf("%020d-", f.segments[1].BaseOffset)
	var logPath, logKey string
	filepath.WalkDir(filepath.Join(f.srv.Root, "tiered"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), want) && strings.HasSuffix(d.Name(), ".log") {
			logPath = p
			logKey, _ = filepath.Rel(filepath.Join(f.srv.Root, "tiered"), p)
		}
		return nil
	})
	if logPath == "" {
		t.Fatal("the second segment's log is not in the bucket directory")
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(logPath, b, 0o644); err != nil {
		t.Fatal(err)
	}

	out, stderr, err := runDumpLog(t, "--remote", "orders-0", "--remote-config", f.props, "--print-data-log", "--output", "json")
	if err == nil || !strings.Contains(err.Error(), "1 of ") {
		t.Fatalf("a corrupted object: error %v, want one file failed\n%s", err, stderr)
	}
	ds := decodeRemoteDump(t, out)
	seen := recordsOf(t, ds, b64ID(f.topicID))
	for _, d := range ds {
		switch {
		case d.File == logKey:
			if !strings.Contains(d.Error, "fails its checksum") || len(d.Batches) > 0 {
				t.Fatalf("%s: error %q with %d batches, want the checksum failure and nothing decoded", d.File, d.Error, len(d.Batches))
			}
		case d.Error != "":
			t.Fatalf("%s: %s, though only %s is corrupt", d.File, d.Error, logKey)
		}
	}
	for off := int64(0); off < int64(f.records); off++ {
		inCorrupt := off >= f.segments[1].BaseOffset && off < f.segments[1].NextOffset
		if (seen[off] == 1) == inCorrupt {
			t.Fatalf("offset %d dumped %d times (in the corrupted segment: %t)", off, seen[off], inCorrupt)
		}
	}
	// The table reports the failure on stderr, naming the object.
	_, stderr, err = runDumpLog(t, "--remote", "orders-0", "--remote-config", f.props, "--offset", fmt.Sprint(f.segments[1].BaseOffset))
	if err == nil || !strings.Contains(stderr, logKey+": remote object corrupt: chunk ") || !strings.Contains(stderr, "CRC32C mismatch") {
		t.Fatalf("table: error %v, stderr %q", err, stderr)
	}
}
