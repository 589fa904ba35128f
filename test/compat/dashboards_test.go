package compat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestDashboardQueries runs, through a real Prometheus scraping the broker,
// the kind of PromQL the panels of the two dashboards Kafka users already
// have are built on — the JMX exporter's Kafka overview (rates of
// BrokerTopicMetrics per topic, request rates per API, the replica manager
// and controller gauges) and kafka_exporter's overview (offsets, partitions
// and consumer-group lag per topic and group, brokers) — and checks each
// returns the series a panel needs, with the workload's numbers where they
// are known: the panels fill.
func TestDashboardQueries(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Fatalf("%s not found (%v): run scripts/install-test-deps.sh", debianPrometheus, err)
	}
	b, admin := startBrokerWithAdmin(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 3, nil)
	const n = 600
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testContext(t, 120*time.Second)
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i)), Partition: int32(i % 3)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	group := "dashboard-" + topic
	offsets := make(kadm.Offsets)
	for p := range int32(3) {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: 50, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, group, offsets); err != nil {
		t.Fatal(err)
	}

	prom := startPrometheus(t, strings.TrimPrefix(admin, "http://"))
	tp := `topic="` + topic + `"`
	// Each query with the number of series a panel gets and, where the
	// workload fixes it, the value of every series (NaN: any value).
	type want struct {
		series int
		value  float64
		any    bool
	}
	queries := map[string]want{
		// The JMX exporter's Kafka overview.
		`sum by (topic) (rate(kafka_server_brokertopicmetrics_messagesin_total{` + tp + `}[1m]))`:                                       {series: 1, any: true},
		`sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesin_total{` + tp + `}[1m]))`:                                          {series: 1, any: true},
		`sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesout_total{` + tp + `}[1m]))`:                                         {series: 1, any: true},
		`sum by (topic) (kafka_server_brokertopicmetrics_messagesin_total{` + tp + `})`:                                                 {series: 1, value: n},
		`sum by (request) (rate(kafka_network_requestmetrics_requests_total{request="Produce"}[1m]))`:                                   {series: 1, any: true},
		`histogram_quantile(0.99, sum by (le, request) (rate(kafka_network_requestmetrics_totaltimems_bucket{request="Produce"}[1m])))`: {series: 1, any: true},
		`sum(kafka_server_replicamanager_underreplicatedpartitions)`:                                                                    {series: 1, value: 0},
		`sum(kafka_server_replicamanager_underminisrpartitioncount)`:                                                                    {series: 1, value: 0},
		`sum(kafka_controller_kafkacontroller_offlinepartitionscount)`:                                                                  {series: 1, value: 0},
		`sum(kafka_controller_kafkacontroller_activecontrollercount)`:                                                                   {series: 1, value: 1},
		`sum(kafka_server_replicamanager_partitioncount) > bool 0`:                                                                      {series: 1, value: 1},
		`sum by (topic) (kafka_log_log_size{` + tp + `}) > bool 0`:                                                                      {series: 1, value: 1},
		`sum(rate(kafka_server_replicamanager_isrshrinks_total[1m]))`:                                                                   {series: 1, value: 0},
		`sum(kafka_server_socket_server_metrics_connection_count) > bool 0`:                                                             {series: 1, value: 1},
		`sum(rate(go_gc_duration_seconds_count[1m])) >= bool 0`:                                                                         {series: 1, value: 1},
		// kafka_exporter's overview.
		`kafka_brokers`: {series: 1, value: 1},
		`sum by (topic) (kafka_topic_partitions{` + tp + `})`:                                       {series: 1, value: 3},
		`sum by (topic) (kafka_topic_partition_current_offset{` + tp + `})`:                         {series: 1, value: n},
		`sum by (topic) (rate(kafka_topic_partition_current_offset{` + tp + `}[1m]))`:               {series: 1, any: true},
		`sum by (consumergroup, topic) (kafka_consumergroup_lag{` + tp + `})`:                       {series: 1, value: n - 3*50},
		`sum by (consumergroup, topic) (kafka_consumergroup_current_offset{` + tp + `})`:            {series: 1, value: 3 * 50},
		`sum by (consumergroup, topic) (delta(kafka_consumergroup_current_offset{` + tp + `}[1m]))`: {series: 1, any: true},
		`count by (consumergroup) (kafka_consumergroup_lag_seconds{` + tp + `})`:                    {series: 1, value: 3},
		`kafka_consumergroup_lag_sum{consumergroup="` + group + `"}`:                                {series: 1, value: n - 3*50},
	}
	for q, w := range queries {
		poll.Until(t, 90*time.Second, fmt.Sprintf("Prometheus query %s", q), func() error {
			got, err := promQueryAll(prom, q)
			if err != nil {
				return err
			}
			if len(got) != w.series {
				return fmt.Errorf("%d series, want %d", len(got), w.series)
			}
			for _, v := range got {
				if !w.any && v != w.value {
					return fmt.Errorf("value %v, want %v", v, w.value)
				}
			}
			return nil
		})
	}
}

// promQueryAll runs an instant query and returns the value of each series.
func promQueryAll(base, q string) ([]float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
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
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query failed: %s", body.Error)
	}
	var vs []float64
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, nil
}
