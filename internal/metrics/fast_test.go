package metrics

import (
	"compress/gzip"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type twoPartitions struct{}

func (twoPartitions) WriteFamilies(w *GaugeWriter) {
	w.Family("kafka_log_log_size", "bytes")
	w.Sample("kafka_log_log_size", "orders", 0, 100)
	w.Sample("kafka_log_log_size", `we"ird`, 1, 7)
}

// TestHandlerAppendsDirectFamilies checks the directly written families
// follow the registry's, parse as Prometheus text, and come before
// OpenMetrics' "# EOF", gzipped when asked.
func TestHandlerAppendsDirectFamilies(t *testing.T) {
	reg := NewRegistry(LevelPartition)
	reg.AddFamilyWriter(twoPartitions{})
	h := reg.Handler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("text exposition does not parse: %v", err)
	}
	if f := fams["kafka_log_log_size"]; f == nil || len(f.Metric) != 2 || f.Metric[1].Gauge.GetValue() != 7 {
		t.Fatalf("direct family: %v", f)
	}
	if fams["go_goroutines"] == nil {
		t.Error("registry families missing")
	}

	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	req.Header.Set("Accept-Encoding", "gzip")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", rec.Header())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	text := string(body)
	if !strings.HasSuffix(text, "kafka_log_log_size{topic=\"we\\\"ird\",partition=\"1\"} 7\n# EOF\n") || strings.Count(text, "# EOF") != 1 {
		t.Fatalf("OpenMetrics body does not end with the direct families then one # EOF:\n...%s", text[max(0, len(text)-300):])
	}
}
