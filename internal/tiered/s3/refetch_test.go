package s3

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// TestABadCopyReadIsRefetchedAndACorruptCacheFileIgnored puts a proxy in
// front of the S3 server that flips a byte of the first ranged read of a
// segment log: the store detects it by the chunk's CRC32C, reads the chunk
// again and serves the good bytes. A chunk corrupted in the on-disk cache
// is likewise detected and read from the store again, never served.
func TestABadCopyReadIsRefetchedAndACorruptCacheFileIgnored(t *testing.T) {
	const chunk = 64 << 10
	direct, srv := startStore(t, chunk)
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var logReads, corrupt atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodGet || !strings.HasSuffix(r.Request.URL.Path, ".log") || r.Request.Header.Get("Range") == "" {
			return nil
		}
		logReads.Add(1)
		if corrupt.Add(-1) < 0 {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return err
		}
		b[len(b)/2] ^= 0xff
		r.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	cfg := direct.cfg
	cfg.Endpoint = ps.URL
	st, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	ctx := context.Background()
	data, log := segmentFiles(t, 3*chunk)
	md := testMetadata()
	if _, err := st.Copy(ctx, md, data); err != nil {
		t.Fatal(err)
	}
	// The last chunk: nothing after it is read ahead to skew the count.
	fetch := func(what string) {
		t.Helper()
		rc, err := st.FetchSegment(ctx, md, 2*chunk, 3*chunk-1)
		got := readAll(t, rc, err)
		if !bytes.Equal(got, log[2*chunk:]) {
			t.Fatalf("%s: served %d bytes that are not the segment's", what, len(got))
		}
	}

	corrupt.Store(1)
	fetch("a read corrupted in transit")
	if n := logReads.Load(); n != 2 {
		t.Fatalf("%d reads of the log, want 2: the corrupted one and its refetch", n)
	}

	// The good chunk is in the cache file now: corrupt that file, and
	// forget the in-memory copy.
	st.recent.drop(md.ID)
	p := st.cache.path(cacheKey{md.ID, 2})
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the chunk was not cached: %v", err)
	}
	b[17] ^= 0xff
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fetch("a corrupted cache file")
	if n := logReads.Load(); n != 3 {
		t.Fatalf("%d reads of the log, want 3: the corrupted cache file read from the store again", n)
	}
}
