package compat

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// startBrokerWithAdmin starts a broker whose admin listener (/metrics) is on
// a free port, and returns it with the listener's base URL.
func startBrokerWithAdmin(t *testing.T, opts ...Option) (*Broker, string) {
	t.Helper()
	skipOnKfake(t, "kfake has no admin listener")
	admin := freeport.Addr(t)
	b := StartBroker(t, append(opts, WithOverride("admin.listeners", "http://"+admin))...)
	return b, "http://" + admin
}

// scrape fetches and parses base/metrics in the Prometheus text format.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := tryScrape(base)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func tryScrape(base string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scraping %s/metrics: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w\n%.2000s", err, body)
	}
	return fams, nil
}

// sample returns the value of the series name{labels}, and whether it exists.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// awaitSample polls /metrics until name{labels} satisfies ok.
func awaitSample(t *testing.T, base, name string, labels map[string]string, ok func(float64) bool, want string) float64 {
	t.Helper()
	var last float64
	poll.Until(t, 30*time.Second, fmt.Sprintf("%s%v = %s", name, labels, want), func() error {
		fams, err := tryScrape(base)
		if err != nil {
			return err
		}
		v, found := sample(fams, name, labels)
		last = v
		if !found {
			return fmt.Errorf("no such series")
		}
		if !ok(v) {
			return fmt.Errorf("got %v", v)
		}
		return nil
	})
	return last
}

func equals(want float64) (func(float64) bool, string) {
	return func(v float64) bool { return v == want }, fmt.Sprint(want)
}
