package state

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// scrapeFixture is a node's /metrics with n hosted partitions of one topic,
// led here, with real logs, and this node the active controller (so the
// image's kafka_exporter series are written too), as in bench/scrape.sh.
func scrapeFixture(tb testing.TB, n int) http.Handler {
	tb.Helper()
	dir := tb.TempDir()
	cfg, _, err := config.ParseBroker(map[string]string{"log.dirs": dir, "node.id": "1"})
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	store, err := storage.OpenManager(storage.ManagerConfig{Dirs: []string{dir}, Logger: log, CleanerDisabled: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	m := partition.NewManager(1, cfg, store, log)
	id := metadata.NewUuid()
	recs := []metadata.Record{&metadata.TopicRecord{Name: "many", TopicID: id}}
	for i := range n {
		recs = append(recs, &metadata.PartitionRecord{TopicID: id, Partition: int32(i), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
	}
	img, err := metadata.EmptyImage().Apply(1, recs)
	if err != nil {
		tb.Fatal(err)
	}
	if err := m.Apply(img); err != nil {
		tb.Fatal(err)
	}
	reg := metrics.NewRegistry(metrics.LevelPartition)
	parts := &Partitions{All: m.All, Level: reg.Level()}
	ctrl := &Controller{IsActive: func() bool { return true }, Image: func() *metadata.Image { return img }, NodeID: 1, PerTopic: true, PerPartition: true}
	reg.AddFamilyWriter(parts)
	reg.AddFamilyWriter(ctrl)
	if err := reg.Register(parts); err != nil {
		tb.Fatal(err)
	}
	if err := reg.Register(ctrl); err != nil {
		tb.Fatal(err)
	}
	return reg.Handler()
}

// BenchmarkScrape10kPartitions is one /metrics scrape (Prometheus text
// format) of a node hosting 10,000 partitions, written to a discarding
// connection as the server writes to a socket: its time and allocations
// per op are the scrape's (docs/PERFORMANCE.md).
func BenchmarkScrape10kPartitions(b *testing.B) {
	h := scrapeFixture(b, 10_000)
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	var w discardWriter
	for b.Loop() {
		w = discardWriter{header: http.Header{}}
		h.ServeHTTP(&w, req)
		if w.code != 200 {
			b.Fatalf("status %d", w.code)
		}
	}
	b.ReportMetric(float64(w.n)/1e6, "MB/scrape")
}

// discardWriter is a ResponseWriter that counts and drops the body.
type discardWriter struct {
	header http.Header
	code   int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.header }
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	w.WriteHeader(200)
	w.n += len(p)
	return len(p), nil
}

// TestScrapeFixtureServesEveryPartition keeps the benchmark honest: the
// scrape it times holds a series per partition.
func TestScrapeFixtureServesEveryPartition(t *testing.T) {
	h := scrapeFixture(t, 50)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for i := range 50 {
		line := fmt.Sprintf("kafka_log_log_logendoffset{topic=\"many\",partition=\"%d\"} 0\n", i)
		if !strings.Contains(string(body), "\n"+line) {
			t.Fatalf("no %q in the scrape", line)
		}
	}
}
