package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// debianPrometheus is the Prometheus server from Debian's prometheus package
// (scripts/install-test-deps.sh).
const debianPrometheus = "/usr/bin/prometheus"

// TestPrometheusScrapesBroker runs a real Prometheus server against the
// broker's admin listener and checks, through Prometheus's own query API,
// that it ingested the series with the right values: the exposition format
// is consumable by Prometheus, not just by our parser.
func TestPrometheusScrapesBroker(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Fatalf("%s not found (%v): run scripts/install-test-deps.sh", debianPrometheus, err)
	}
	b, admin := startBrokerWithAdmin(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 2, nil)
	const n = 300
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic))
	ctx := testContext(t, 90*time.Second)
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i % 2)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	prom := startPrometheus(t, strings.TrimPrefix(admin, "http://"))
	want := map[string]float64{
		`up{job="vltava"}`: 1,
		`kafka_server_brokertopicmetrics_messagesin_total{topic="` + topic + `"}`:                      n,
		`sum(kafka_topic_partition_current_offset{topic="` + topic + `"})`:                             n,
		`kafka_controller_kafkacontroller_activecontrollercount`:                                       1,
		`kafka_server_replicamanager_underreplicatedpartitions`:                                        0,
		`count(kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le="+Inf"}) > bool 0`: 1,
	}
	for q, v := range want {
		poll.Until(t, 60*time.Second, fmt.Sprintf("Prometheus query %s = %v", q, v), func() error {
			got, err := promQuery(prom, q)
			if err != nil {
				return err
			}
			if got != v {
				return fmt.Errorf("got %v", got)
			}
			return nil
		})
	}
}

// startPrometheus starts Debian's Prometheus on a free loopback port,
// scraping target every second, with its storage in a temporary dir, and
// returns its base URL once it is ready.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	return startPrometheusJobs(t, fmt.Sprintf("  - job_name: vltava\n    static_configs:\n      - targets: ['%s']\n", target))
}

// startPrometheusJobs is startPrometheus with the given scrape_configs
// entries (YAML, indented as list items of scrape_configs).
func startPrometheusJobs(t *testing.T, jobs string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + jobs
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, debianPrometheus,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	})
	base := "http://" + addr
	poll.Until(t, 60*time.Second, "Prometheus ready", func() error {
		select {
		case <-exited:
			return fmt.Errorf("prometheus exited: %s", out.String())
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	return base
}

// promQuery runs an instant query and returns its single value.
func promQuery(base, q string) (float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, err
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("query failed: %s", body.Error)
	}
	if len(body.Data.Result) != 1 {
		return 0, fmt.Errorf("%d results", len(body.Data.Result))
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
