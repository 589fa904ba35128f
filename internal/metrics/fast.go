package metrics

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// FamilyWriter writes gauge families with many series (one per hosted
// partition) straight into the exposition. client_golang builds a
// protobuf object per sample at every scrape, about 700 bytes each: with
// 10,000 partitions and seven series apiece that is tens of megabytes and
// hundreds of milliseconds per scrape. The gauge lines themselves are the
// same in the Prometheus text format and in OpenMetrics, so they are
// written once, after the registry's families (and before OpenMetrics'
// "# EOF").
type FamilyWriter interface {
	WriteFamilies(w *GaugeWriter)
}

// GaugeWriter writes gauge families in the exposition format.
type GaugeWriter struct {
	w   *bufio.Writer
	num []byte
}

// NewGaugeWriter writes families to w (for tests of a FamilyWriter).
func NewGaugeWriter(w *bufio.Writer) *GaugeWriter { return &GaugeWriter{w: w} }

// Family starts a gauge family: its HELP and TYPE lines.
func (g *GaugeWriter) Family(name, help string) { g.TypedFamily(name, help, "gauge") }

// TypedFamily starts a family of the given type ("gauge", "counter").
func (g *GaugeWriter) TypedFamily(name, help, typ string) {
	g.w.WriteString("# HELP ")
	g.w.WriteString(name)
	g.w.WriteByte(' ')
	g.w.WriteString(strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help))
	g.w.WriteString("\n# TYPE ")
	g.w.WriteString(name)
	g.w.WriteByte(' ')
	g.w.WriteString(typ)
	g.w.WriteByte('\n')
}

// Label is one label of a sample written with SampleLabels.
type Label struct{ Name, Value string }

// SampleLabels writes name{labels} value. Label names must be valid
// Prometheus label names.
func (g *GaugeWriter) SampleLabels(name string, labels []Label, value float64) {
	g.w.WriteString(name)
	if len(labels) > 0 {
		g.w.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				g.w.WriteByte(',')
			}
			g.w.WriteString(l.Name)
			g.w.WriteString(`="`)
			writeLabelValue(g.w, l.Value)
			g.w.WriteByte('"')
		}
		g.w.WriteByte('}')
	}
	g.w.WriteByte(' ')
	g.num = strconv.AppendFloat(g.num[:0], value, 'g', -1, 64)
	g.w.Write(g.num)
	g.w.WriteByte('\n')
}

// Sample writes name{topic="…",partition="…"} value; every sample of a
// family follows its Family line.
func (g *GaugeWriter) Sample(name, topic string, partition int32, value int64) {
	g.w.WriteString(name)
	g.w.WriteString(`{topic="`)
	writeLabelValue(g.w, topic)
	g.w.WriteString(`",partition="`)
	g.num = strconv.AppendInt(g.num[:0], int64(partition), 10)
	g.w.Write(g.num)
	g.w.WriteString(`"} `)
	g.num = strconv.AppendInt(g.num[:0], value, 10)
	g.w.Write(g.num)
	g.w.WriteByte('\n')
}

func writeLabelValue(w *bufio.Writer, v string) {
	if !strings.ContainsAny(v, "\\\"\n") {
		w.WriteString(v)
		return
	}
	w.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v))
}

// AddFamilyWriter adds a writer of direct families to the handler.
func (r *Registry) AddFamilyWriter(f FamilyWriter) {
	r.mu.Lock()
	r.writers = append(r.writers, f)
	r.mu.Unlock()
}

// capture is the registry handler's output, buffered so the direct
// families can follow it.
type capture struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header         { return c.header }
func (c *capture) WriteHeader(code int)        { c.code = code }
func (c *capture) Write(b []byte) (int, error) { return c.body.Write(b) }

var bufPool = sync.Pool{New: func() any { return new(capture) }}

// Handler serves /metrics: Prometheus text, or OpenMetrics when the
// scraper asks for it (Accept: application/openmetrics-text), gzipped when
// it accepts gzip, as promhttp does.
func (r *Registry) Handler() http.Handler {
	inner := promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		EnableOpenMetrics:  true,
		ErrorHandling:      promhttp.ContinueOnError,
		DisableCompression: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c := bufPool.Get().(*capture)
		c.header, c.code = http.Header{}, http.StatusOK
		c.body.Reset()
		defer bufPool.Put(c)
		inner.ServeHTTP(c, req)
		for k, v := range c.header {
			w.Header()[k] = v
		}
		body := c.body.Bytes()
		openMetrics := strings.HasPrefix(c.header.Get("Content-Type"), "application/openmetrics-text")
		const eof = "# EOF\n"
		if openMetrics {
			body = bytes.TrimSuffix(body, []byte(eof))
		}
		out := w
		var gz *gzip.Writer
		if strings.Contains(req.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz = gzip.NewWriter(w)
			defer gz.Close()
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(c.code)
		var bw *bufio.Writer
		if gz != nil {
			bw = bufio.NewWriterSize(gz, 64<<10)
		} else {
			bw = bufio.NewWriterSize(out, 64<<10)
		}
		bw.Write(body)
		r.mu.Lock()
		writers := r.writers
		r.mu.Unlock()
		gw := &GaugeWriter{w: bw}
		for _, f := range writers {
			f.WriteFamilies(gw)
		}
		if openMetrics {
			bw.WriteString(eof)
		}
		bw.Flush()
	})
}
