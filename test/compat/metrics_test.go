package compat

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestMetricsAfterKnownWorkload scrapes /metrics after producing a known
// number of records and reading them back, and checks the numbers the JMX
// exporter's Kafka series would show: messages in equals records produced,
// bytes in is the records plus the batch overhead, bytes out covers what was
// fetched, and the request counts per API include the requests made.
func TestMetricsAfterKnownWorkload(t *testing.T) {
	t.Parallel()
	b, admin := startBrokerWithAdmin(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)

	const n, valueSize = 500, 100
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testContext(t, 60*time.Second)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: bytes.Repeat([]byte{'v'}, valueSize)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < n; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}

	awaitSample(t, admin, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": topic}, func(v float64) bool { return v == n }, strconv.Itoa(n))
	fams := scrape(t, admin)
	bytesIn, _ := sample(fams, "kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": topic})
	// Each record costs its value plus a few bytes of varint framing; each
	// batch 61 bytes of header. franz-go batches, so at most one batch
	// per record.
	if lo, hi := float64(n*valueSize), float64(n*(valueSize+10+61)); bytesIn < lo || bytesIn > hi {
		t.Errorf("bytes in = %v, want within [%v, %v]", bytesIn, lo, hi)
	}
	bytesOut, _ := sample(fams, "kafka_server_brokertopicmetrics_bytesout_total", map[string]string{"topic": topic})
	if bytesOut < bytesIn {
		t.Errorf("bytes out = %v after reading everything back, want at least bytes in %v", bytesOut, bytesIn)
	}
	if all, _ := sample(fams, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": ""}); all < n {
		t.Errorf("broker-wide messages in = %v, want at least %d", all, n)
	}
	if v, ok := sample(fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "CreateTopics"}); !ok || v != 1 {
		t.Errorf("CreateTopics requests = %v (present %v), want 1", v, ok)
	}
	var produces float64
	for v := 0; v <= 12; v++ {
		c, _ := sample(fams, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce", "version": strconv.Itoa(v)})
		produces += c
	}
	if produces < 1 || produces > n {
		t.Errorf("Produce requests = %v, want between 1 and %d", produces, n)
	}
	if _, ok := sample(fams, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Fetch"}); !ok {
		t.Error("no kafka_network_requestmetrics_totaltimems histogram for Fetch")
	}
	for name, want := range map[string]float64{
		"kafka_server_replicamanager_underreplicatedpartitions":   0,
		"kafka_controller_kafkacontroller_activecontrollercount":  1,
		"kafka_controller_kafkacontroller_offlinepartitionscount": 0,
	} {
		if v, ok := sample(fams, name, nil); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if v, ok := sample(fams, "kafka_topic_partition_current_offset", map[string]string{"topic": topic, "partition": "0"}); !ok || v != n {
		t.Errorf("kafka_topic_partition_current_offset = %v (present %v), want %d", v, ok, n)
	}
	// kafka_exporter's cluster series, from the active controller.
	for name, want := range map[string]float64{
		"kafka_topic_partitions":                           1,
		"kafka_topic_partition_replicas":                   1,
		"kafka_topic_partition_in_sync_replica":            1,
		"kafka_topic_partition_under_replicated_partition": 0,
		"kafka_topic_partition_leader_is_preferred":        1,
	} {
		if v, ok := sample(fams, name, map[string]string{"topic": topic}); !ok || v != want {
			t.Errorf("%s{topic=%s} = %v (present %v), want %v", name, topic, v, ok, want)
		}
	}
	if v, ok := sample(fams, "kafka_brokers", nil); !ok || v != 1 {
		t.Errorf("kafka_brokers = %v (present %v), want 1", v, ok)
	}
	if v, ok := sample(fams, "go_goroutines", nil); !ok || v <= 0 {
		t.Errorf("go_goroutines = %v (present %v): Go runtime metrics missing", v, ok)
	}

	// OpenMetrics when asked for it.
	req, _ := http.NewRequest("GET", admin+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !bytes.HasPrefix([]byte(ct), []byte("application/openmetrics-text")) {
		t.Errorf("Content-Type with an OpenMetrics Accept = %q", ct)
	}
}

// TestMetricsPartitionLevelBroker checks metrics.partition.level=broker
// drops the per-topic and per-partition series and keeps the broker-wide.
func TestMetricsPartitionLevelBroker(t *testing.T) {
	t.Parallel()
	b, admin := startBrokerWithAdmin(t, WithOverride("metrics.partition.level", "broker"))
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic))
	if err := cl.ProduceSync(testContext(t, 30*time.Second), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	awaitSample(t, admin, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": ""}, func(v float64) bool { return v >= 1 }, ">= 1")
	fams := scrape(t, admin)
	if _, ok := sample(fams, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": topic}); ok {
		t.Error("per-topic series exposed with metrics.partition.level=broker")
	}
	if _, ok := sample(fams, "kafka_log_log_size", nil); ok {
		t.Error("per-partition log size exposed with metrics.partition.level=broker")
	}
	if _, ok := sample(fams, "kafka_server_replicamanager_partitioncount", nil); !ok {
		t.Error("broker-wide partition count missing")
	}
}

// TestHealth checks /v1/health and its live and ready probes.
func TestHealth(t *testing.T) {
	t.Parallel()
	_, admin := startBrokerWithAdmin(t)
	// The harness waits for ApiVersions, which a starting broker answers
	// before it is registered and ready.
	poll.True(t, 30*time.Second, "/v1/health/ready = 200", func() bool {
		resp, err := http.Get(admin + "/v1/health/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	for _, path := range []string{"/v1/health", "/v1/health/live", "/v1/health/ready"} {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		var h struct{ Live, Ready bool }
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !h.Live || !h.Ready {
			t.Errorf("GET %s = %d %+v %v, want 200 live and ready", path, resp.StatusCode, h, err)
		}
	}
	if resp, err := http.Get(admin + "/debug/pprof/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("/debug/pprof/ without admin.pprof.enable: %v %v, want 404", resp.StatusCode, err)
	}
	_, profiled := startBrokerWithAdmin(t, WithOverride("admin.pprof.enable", "true"))
	if resp, err := http.Get(profiled + "/debug/pprof/goroutine?debug=1"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/debug/pprof/goroutine with admin.pprof.enable: %v %v, want 200", resp, err)
	}
}

// TestConsumerLag produces 1,000 records, commits offset 400 for three
// groups — with kcat (librdkafka), franz-go and kafka-python — and checks
// the kafka_exporter series (lag 600, current offset 400, partition offset
// 1,000) and the time lag: record 400 is stamped two minutes ago, so the
// group is two minutes behind. The groups have no members left when
// scraped, and keep their series.
func TestConsumerLag(t *testing.T) {
	t.Parallel()
	requireTool(t, "kcat")
	requirePythonModule(t, "kafka", "python3-kafka")
	b, admin := startBrokerWithAdmin(t)
	adm := newAdmin(t, b)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)

	ctx := testContext(t, 90*time.Second)
	stamp400 := time.Now().Add(-2 * time.Minute).Truncate(time.Millisecond)
	// Uncompressed: Debian's kafka-python has no snappy.
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var recs []*kgo.Record
	for i := 0; i < 1000; i++ {
		ts := stamp400.Add(time.Duration(i-400) * time.Millisecond)
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i)), Timestamp: ts})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	groups := map[string]string{"kcat": uniqueTopic(t) + "-kcat", "franz-go": uniqueTopic(t) + "-franz", "kafka-python": uniqueTopic(t) + "-python"}
	// kcat's high-level consumer commits what it handed out when it exits
	// after -c 400 records.
	runKcat(t, "", "-b", b.Addr(), "-G", groups["kcat"], topic, "-o", "beginning", "-c", "400", "-e", "-q",
		"-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100")
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 400, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, groups["franz-go"], offsets); err != nil || resp.Error() != nil {
		t.Fatalf("franz-go commit: %v %v", err, resp.Error())
	}
	var py struct{ Committed int64 }
	runPythonScript(t, 90*time.Second, &py, "lag_commit_kafka_python.py", b.Addr(), topic, groups["kafka-python"], "400")

	for client, g := range groups {
		labels := map[string]string{"consumergroup": g, "topic": topic, "partition": "0"}
		ok, want := equals(600)
		awaitSample(t, admin, "kafka_consumergroup_lag", labels, ok, want+" ("+client+")")
		fams := scrape(t, admin)
		if v, _ := sample(fams, "kafka_consumergroup_current_offset", labels); v != 400 {
			t.Errorf("%s: kafka_consumergroup_current_offset = %v, want 400", client, v)
		}
		age := time.Since(stamp400).Seconds()
		if v, _ := sample(fams, "kafka_consumergroup_lag_seconds", labels); math.Abs(v-age) > 1 {
			t.Errorf("%s: kafka_consumergroup_lag_seconds = %v, want the age of record 400, %.1f ± 1", client, v, age)
		}
		if v, ok := sample(fams, "kafka_consumergroup_members", map[string]string{"consumergroup": g}); !ok || v != 0 {
			t.Errorf("%s: kafka_consumergroup_members = %v (present %v), want 0: the group has no members left", client, v, ok)
		}
		if _, ok := sample(fams, "kafka_consumergroup_status", map[string]string{"consumergroup": g}); !ok {
			t.Errorf("%s: no kafka_consumergroup_status", client)
		}
	}
	if v, _ := sample(scrape(t, admin), "kafka_topic_partition_current_offset", map[string]string{"topic": topic, "partition": "0"}); v != 1000 {
		t.Errorf("kafka_topic_partition_current_offset = %v, want 1000", v)
	}

	// The Burrow-style endpoint reports the same numbers.
	resp, err := http.Get(admin + "/v1/consumer-lag?group=" + groups["franz-go"])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Groups []struct {
			Group      string
			State      string
			Partitions []struct {
				Lag           int64
				CurrentOffset int64 `json:"current_offset"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Groups) != 1 || len(body.Groups[0].Partitions) != 1 {
		t.Fatalf("/v1/consumer-lag: %v %+v", err, body)
	}
	if g := body.Groups[0]; g.Partitions[0].Lag != 600 || g.Partitions[0].CurrentOffset != 400 || g.State != "Empty" {
		t.Errorf("/v1/consumer-lag group = %+v, want lag 600 at offset 400, state Empty", g)
	}
}

// TestConsumerLagStable leaves a transaction open above committed data and
// checks both lags: kafka_consumergroup_lag against the high watermark (the
// open transaction's records included, as kafka_exporter counts them) and
// kafka_consumergroup_lag_stable against the last stable offset, which
// ListOffsets with read_committed reports too; once the transaction
// commits, the two agree again.
func TestConsumerLagStable(t *testing.T) {
	t.Parallel()
	b, admin := startBrokerWithAdmin(t)
	adm := newAdmin(t, b)
	topic, group := uniqueTopic(t), uniqueTopic(t)+"-group"
	createTopic(t, adm, topic, 1, nil)
	ctx := testContext(t, 90*time.Second)

	plain := newClient(t, b, kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for i := 0; i < 100; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(strconv.Itoa(i))})
	}
	if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 50, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, group, offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	txn := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(uniqueTopic(t)+"-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	recs = recs[:0]
	for i := 0; i < 30; i++ {
		recs = append(recs, &kgo.Record{Value: []byte("open-" + strconv.Itoa(i))})
	}
	if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup(topic, 0); o.Offset != 100 {
		t.Fatalf("ListOffsets read_committed = %d with the transaction open, want 100", o.Offset)
	}
	labels := map[string]string{"consumergroup": group, "topic": topic, "partition": "0"}
	ok, want := equals(80)
	awaitSample(t, admin, "kafka_consumergroup_lag", labels, ok, want+": 130 − 50, the open transaction included")
	fams := scrape(t, admin)
	if v, _ := sample(fams, "kafka_consumergroup_lag_stable", labels); v != 50 {
		t.Errorf("kafka_consumergroup_lag_stable = %v with the transaction open, want 50 (LSO 100 − 50)", v)
	}
	if v, _ := sample(fams, "kafka_consumergroup_lag_stable_sum", map[string]string{"consumergroup": group, "topic": topic}); v != 50 {
		t.Errorf("kafka_consumergroup_lag_stable_sum = %v, want 50", v)
	}
	resp, err := http.Get(admin + "/v1/consumer-lag?group=" + group)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Groups []struct {
			TotalStableLag int64 `json:"total_stable_lag"`
			Partitions     []struct {
				StableEndOffset int64 `json:"stable_end_offset"`
				StableLag       int64 `json:"stable_lag"`
			}
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || len(body.Groups) != 1 || len(body.Groups[0].Partitions) != 1 ||
		body.Groups[0].Partitions[0].StableEndOffset != 100 || body.Groups[0].Partitions[0].StableLag != 50 || body.Groups[0].TotalStableLag != 50 {
		t.Errorf("/v1/consumer-lag: %+v (%v), want stable end 100, stable lag 50", body, err)
	}

	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// 130 records and the commit marker: both ends are 131.
	ok, want = equals(81)
	awaitSample(t, admin, "kafka_consumergroup_lag_stable", labels, ok, want+" once the transaction committed")
	if v, _ := sample(scrape(t, admin), "kafka_consumergroup_lag", labels); v != 81 {
		t.Errorf("kafka_consumergroup_lag = %v after the commit, want 81", v)
	}
}
