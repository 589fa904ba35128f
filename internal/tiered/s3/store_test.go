package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/testing/s3server"
	"github.com/vltava/vltava/internal/tiered"
)

func startStore(t *testing.T, chunk int) (*Store, *s3server.Server) {
	t.Helper()
	srv := s3server.Start(t, "tiered")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	cfg, err := ParseConfig(map[string]string{
		"storage.s3.bucket.name":               "tiered",
		"storage.s3.endpoint.url":              srv.Endpoint,
		"storage.s3.region":                    srv.Region,
		"storage.s3.path.style.access.enabled": "true",
		"key.prefix":                           "pfx/",
		"chunk.size":                           itoa(chunk),
		"fetch.chunk.cache.path":               filepath.Join(t.TempDir(), "cache"),
		"fetch.chunk.cache.size":               itoa(4 * chunk),
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, srv
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func segmentFiles(t *testing.T, logSize int) (tiered.SegmentData, []byte) {
	t.Helper()
	dir := t.TempDir()
	log := make([]byte, logSize)
	rand.Read(log)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return tiered.SegmentData{
		Log:          write("00000000000000000100.log", log),
		OffsetIndex:  write("00000000000000000100.index", []byte("offset-index")),
		TimeIndex:    write("00000000000000000100.timeindex", []byte("time-index")),
		TxnIndex:     write("00000000000000000100.txnindex", []byte("txn-index")),
		LeaderEpochs: []byte("0\n1\n3 100\n"),
	}, log
}

func testMetadata() tiered.SegmentMetadata {
	md := tiered.SegmentMetadata{StartOffset: 100, EndOffset: 199, State: tiered.CopyStarted}
	md.Topic, md.Partition = "events", 2
	copy(md.TopicID[:], "0123456789abcdef")
	copy(md.ID[:], "fedcba9876543210")
	return md
}

func readAll(t *testing.T, rc io.ReadCloser, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCopyFetchAndDeleteOnARealS3Server(t *testing.T) {
	const chunk = 64 << 10
	st, _ := startStore(t, chunk)
	ctx := context.Background()
	data, log := segmentFiles(t, 5*chunk+1234)
	md := testMetadata()
	if _, err := st.Copy(ctx, md, data); err != nil {
		t.Fatal(err)
	}
	// A fresh store (another broker) finds everything through the manifest.
	other, err := New(ctx, st.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{st, other} {
		for _, r := range [][2]int64{{0, -1}, {0, 10}, {chunk - 5, chunk + 5}, {3*chunk + 7, int64(len(log)) - 1}, {int64(len(log)) - 1, 1 << 40}} {
			rc, err := s.FetchSegment(ctx, md, r[0], r[1])
			got := readAll(t, rc, err)
			end := r[1]
			if end < 0 || end >= int64(len(log)) {
				end = int64(len(log)) - 1
			}
			if !bytes.Equal(got, log[r[0]:end+1]) {
				t.Fatalf("range %v: got %d bytes, want %d", r, len(got), end+1-r[0])
			}
		}
		rc, err := s.FetchIndex(ctx, md, tiered.TransactionIndex)
		if got := readAll(t, rc, err); string(got) != "txn-index" {
			t.Fatalf("txn index = %q", got)
		}
		rc, err = s.FetchIndex(ctx, md, tiered.LeaderEpochIndex)
		if got := readAll(t, rc, err); string(got) != "0\n1\n3 100\n" {
			t.Fatalf("epochs = %q", got)
		}
		if _, err := s.FetchIndex(ctx, md, tiered.ProducerSnapshotIndex); !errors.Is(err, tiered.ErrNotFound) {
			t.Fatalf("missing snapshot: %v, want ErrNotFound", err)
		}
	}
	keys, err := st.List(ctx, st.PartitionPrefix(md.Topic, md.TopicID, md.Partition))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 6 { // log, 3 indexes, epochs, manifest
		t.Fatalf("objects = %v", keys)
	}
	if err := st.Delete(ctx, md); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, md); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	keys, _ = st.List(ctx, st.PartitionPrefix(md.Topic, md.TopicID, md.Partition))
	if len(keys) != 0 {
		t.Fatalf("left after delete: %v", keys)
	}
	if _, err := other.FetchSegment(ctx, tiered.SegmentMetadata{SegmentID: tiered.SegmentID{Topic: "nope"}}, 0, 1); !errors.Is(err, tiered.ErrNotFound) {
		t.Fatalf("unknown segment: %v", err)
	}
}

func TestACorruptedObjectIsDetectedAndNeverServed(t *testing.T) {
	const chunk = 64 << 10
	st, srv := startStore(t, chunk)
	st.cache = nil // read the store every time
	ctx := context.Background()
	data, _ := segmentFiles(t, 3*chunk)
	md := testMetadata()
	if _, err := st.Copy(ctx, md, data); err != nil {
		t.Fatal(err)
	}
	// Flip a byte of the stored log, behind the server's back.
	var logPath string
	filepath.Walk(srv.Root, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".log") {
			logPath = p
		}
		return nil
	})
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	b[chunk+17] ^= 0xff
	if err := os.WriteFile(logPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FetchSegment(ctx, md, chunk, chunk+100); !errors.Is(err, tiered.ErrCorrupt) {
		t.Fatalf("corrupt chunk: %v, want ErrCorrupt", err)
	}
	// The other chunks still serve.
	if _, err := st.FetchSegment(ctx, md, 0, 100); err != nil {
		t.Fatalf("intact chunk: %v", err)
	}
}

func TestWrongCredentialsFailTheCheck(t *testing.T) {
	st, _ := startStore(t, 64<<10)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	bad, err := New(context.Background(), st.cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Check(context.Background())
	if err == nil {
		t.Fatal("wrong credentials passed the check")
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

func TestUnknownKeysAreRefused(t *testing.T) {
	if _, err := ParseConfig(map[string]string{"storage.s3.bucket.name": "b", "storage.s3.bucket": "typo"}); err == nil || !strings.Contains(err.Error(), "rsm.config.storage.s3.bucket") {
		t.Fatalf("typo accepted: %v", err)
	}
	if _, err := ParseConfig(map[string]string{}); err == nil {
		t.Fatal("no bucket accepted")
	}
}
