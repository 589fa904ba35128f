package telemetry

import (
	"encoding/hex"
	"sort"

	"github.com/vltava/vltava/internal/metrics"
)

// expiry is how many push intervals a client's series outlive its last push.
const expiry = 3

type exported struct {
	counter bool
	samples []sample
}

type sample struct {
	labels []metrics.Label
	value  float64
}

// WriteFamilies implements metrics.FamilyWriter: every live client's last
// pushed values, one family per metric name, labelled with the client's
// instance id and client id, its resource attributes and the data point's.
// Written directly rather than through client_golang because each client
// brings its own label set.
func (r *Receiver) WriteFamilies(w *metrics.GaugeWriter) {
	now := r.now()
	families := map[string]*exported{}
	r.mu.Lock()
	r.pruneLocked(now)
	for id, c := range r.clients {
		if c.lastPush.IsZero() || now.Sub(c.lastPush) > expiry*r.cfg.Interval {
			continue
		}
		base := []metrics.Label{{Name: "client_instance_id", Value: hex.EncodeToString(id[:])}, {Name: "client_id", Value: c.clientID}}
		for _, a := range c.resource {
			base = append(base, metrics.Label{Name: promName(a.key), Value: a.value})
		}
		for _, s := range c.series { // map order: samples are sorted below
			name := promName(s.name)
			f := families[name]
			if f == nil {
				f = &exported{counter: s.counter}
				families[name] = f
			}
			labels := append([]metrics.Label(nil), base...)
			for _, a := range s.attrs {
				labels = append(labels, metrics.Label{Name: promName(a.key), Value: a.value})
			}
			f.samples = append(f.samples, sample{labels: dedupe(labels), value: s.value})
		}
	}
	r.mu.Unlock()
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := families[n]
		sort.Slice(f.samples, func(i, j int) bool { return labelsLess(f.samples[i].labels, f.samples[j].labels) })
		// Gauges even for cumulative sums: the same lines serve the
		// text format and OpenMetrics, where a counter's samples
		// would have to be renamed (<family>_total); rate() works on
		// them as on any counter.
		help := "Client metric pushed by KIP-714 telemetry."
		if f.counter {
			help = "Client metric pushed by KIP-714 telemetry (a cumulative sum)."
		}
		w.Family(n, help)
		for _, s := range f.samples {
			w.SampleLabels(n, s.labels, s.value)
		}
	}
}

// dedupe keeps the first of labels with the same name (the broker's own
// client_instance_id and client_id win over a pushed attribute).
func dedupe(labels []metrics.Label) []metrics.Label {
	seen := map[string]bool{}
	out := labels[:0]
	for _, l := range labels {
		if !seen[l.Name] {
			seen[l.Name] = true
			out = append(out, l)
		}
	}
	return out
}

func labelsLess(a, b []metrics.Label) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i].Name != b[i].Name {
				return a[i].Name < b[i].Name
			}
			return a[i].Value < b[i].Value
		}
	}
	return len(a) < len(b)
}
