package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/mirror"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// restCall makes a Connect REST request and returns the status and body.
func restCall(t testing.TB, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// startConnectWorker runs a distributed Connect worker writing to addr,
// with ByteArrayConverter for keys, values and headers, and waits for its
// REST API.
func startConnectWorker(t testing.TB, addr string, port int) (*proc, string) {
	t.Helper()
	props := strings.Join([]string{
		"bootstrap.servers=" + addr,
		fmt.Sprintf("listeners=http://127.0.0.1:%d", port),
		"group.id=mm2-connect",
		"config.storage.topic=mm2-configs", "offset.storage.topic=mm2-offsets", "status.storage.topic=mm2-status",
		"config.storage.replication.factor=1", "offset.storage.replication.factor=1", "status.storage.replication.factor=1",
		"key.converter=org.apache.kafka.connect.converters.ByteArrayConverter",
		"value.converter=org.apache.kafka.connect.converters.ByteArrayConverter",
		"header.converter=org.apache.kafka.connect.converters.ByteArrayConverter",
		"offset.flush.interval.ms=500",
	}, "\n") + "\n"
	w := startProc(t, "connect worker", "connect", "distributed", writeFile(t, props))
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	poll.Until(t, startTimeout, "the worker's REST API", func() error {
		if !w.running() {
			t.Fatalf("worker exited:\n%s", w.out.String())
		}
		if code, b := restCall(t, "GET", url+"/", nil); code != 200 {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	return w, url
}

// putConnector creates or updates a connector, retrying while the worker
// has not yet joined its group (409).
func putConnector(t testing.TB, url, name string, cfg map[string]string) (code int, body []byte) {
	t.Helper()
	poll.Until(t, startTimeout, "the worker to take "+name, func() error {
		if code, body = restCall(t, "PUT", url+"/connectors/"+name+"/config", cfg); code == 409 || code == 0 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	return code, body
}

// waitConnectorRunning waits for the connector and its one task to run.
func waitConnectorRunning(t testing.TB, url, name string) {
	t.Helper()
	poll.Until(t, mirrorTimeout, name+" RUNNING", func() error {
		code, b := restCall(t, "GET", url+"/connectors/"+name+"/status", nil)
		if code != 200 {
			return fmt.Errorf("%d %s", code, b)
		}
		var s struct {
			Connector struct{ State, Trace string }
			Tasks     []struct{ State, Trace string }
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s.Connector.State != "RUNNING" || len(s.Tasks) != 1 || s.Tasks[0].State != "RUNNING" {
			return fmt.Errorf("%s", b)
		}
		return nil
	})
}

// TestMirrorConnectorsOnConnect runs MirrorSourceConnector,
// MirrorCheckpointConnector and MirrorHeartbeatConnector, by Kafka's class
// names, on a distributed Connect worker of B: records arrive as A.<topic>
// in order with headers, offset syncs land on A, a group's checkpoints and
// synced offsets land on B, heartbeats flow; a worker restart resumes from
// the worker's stored offsets; a bad key is refused naming it.
func TestMirrorConnectorsOnConnect(t *testing.T) {
	a, b := startCluster(t, "A"), startCluster(t, "B")
	createTopic(t, a.addr, "orders", 2, nil)
	produce(t, a.addr, "orders", 2, 0, 100)
	port := freeport.Port(t)
	w, url := startConnectWorker(t, b.addr, port)

	common := map[string]string{
		"source.cluster.alias": "A", "target.cluster.alias": "B",
		"source.cluster.bootstrap.servers": a.addr, "target.cluster.bootstrap.servers": b.addr,
		"topics": "orders",
	}
	with := func(class string, kv ...string) map[string]string {
		m := map[string]string{"connector.class": class}
		for k, v := range common {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	// An unknown key is refused by name at validation and at creation.
	bad := with(mirror.SourceConnectorClass, "replication.factor", "1", "bogus.setting", "x")
	code, body := restCall(t, "PUT", url+"/connector-plugins/MirrorSourceConnector/config/validate", bad)
	if code != 200 || !strings.Contains(string(body), "bogus.setting") || strings.Contains(string(body), `"error_count":0`) {
		t.Fatalf("validate with an unknown key: %d %s", code, body)
	}
	if code, body := putConnector(t, url, "bad", bad); code != 400 || !strings.Contains(string(body), "bogus.setting") {
		t.Fatalf("create with an unknown key: %d %s", code, body)
	}

	connectors := map[string]map[string]string{
		"mm2-source": with(mirror.SourceConnectorClass, "replication.factor", "1", "offset-syncs.topic.replication.factor", "1",
			"refresh.topics.interval.seconds", "2", "sync.topic.acls.enabled", "false", "offset.lag.max", "10"),
		"mm2-checkpoint": with(mirror.CheckpointConnectorClass, "checkpoints.topic.replication.factor", "1",
			"emit.checkpoints.interval.seconds", "1", "refresh.groups.interval.seconds", "2",
			"sync.group.offsets.enabled", "true", "sync.group.offsets.interval.seconds", "1"),
		"mm2-heartbeat": with(mirror.HeartbeatConnectorClass, "heartbeats.topic.replication.factor", "1", "emit.heartbeats.interval.seconds", "1"),
	}
	for name, cfg := range connectors {
		if code, body := putConnector(t, url, name, cfg); code != 201 && code != 200 {
			t.Fatalf("create %s: %d %s", name, code, body)
		}
	}
	for name := range connectors {
		waitConnectorRunning(t, url, name)
	}
	checkOrdered(t, readAll(t, b.addr, "A.orders", 200), "orders", 2, 100)

	// Offset syncs, in Kafka's format, on A.
	var syncs []mirror.OffsetSync
	for _, r := range readAll(t, a.addr, "mm2-offset-syncs.B.internal", 2) {
		s, err := mirror.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			t.Fatalf("offset sync: %v", err)
		}
		syncs = append(syncs, s)
	}
	if len(syncs) == 0 || syncs[0].Topic != "orders" {
		t.Fatalf("offset syncs %+v", syncs)
	}

	// A group reads part of orders on A and commits; its checkpoint and
	// synced offset on B are within offset.lag.max behind, never ahead.
	group := "billing"
	gc := clientOf(t, a.addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.FetchMaxBytes(1))
	deadline := time.Now().Add(mirrorTimeout)
	for total := 0; total < 120 && time.Now().Before(deadline); {
		total += len(gc.PollRecords(context.Background(), 120-total).Records())
	}
	if err := gc.CommitUncommittedOffsets(context.Background()); err != nil {
		t.Fatal(err)
	}
	gc.Close()
	committed, err := admin(t, a.addr).FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, mirrorTimeout, "the group's checkpoints and synced offsets on B", func() error {
		cps := map[int32]int64{}
		for _, r := range readAll(t, b.addr, "A.checkpoints.internal", 1) {
			cp, err := mirror.DecodeCheckpoint(r.Key, r.Value)
			if err != nil {
				return err
			}
			if cp.Group == group && cp.Topic == "A.orders" {
				cps[cp.Partition] = cp.Downstream
			}
		}
		got, err := admin(t, b.addr).FetchOffsets(context.Background(), group)
		if err != nil {
			return err
		}
		for p := int32(0); p < 2; p++ {
			c, _ := committed.Lookup("orders", p)
			if c.At <= 0 {
				continue
			}
			cp, ok := cps[p]
			if !ok || cp > c.At || c.At-cp >= 10 {
				return fmt.Errorf("partition %d: committed %d on A, checkpoint %d (%v)", p, c.At, cp, ok)
			}
			if o, ok := got.Lookup("A.orders", p); !ok || o.At != cp {
				return fmt.Errorf("partition %d: B's group at %d, checkpoint %d", p, o.At, cp)
			}
		}
		return nil
	})

	hb := readAll(t, b.addr, mirror.HeartbeatsTopic, 1)
	if len(hb) == 0 {
		t.Fatal("no heartbeats on B")
	}
	if h, err := mirror.DecodeHeartbeat(hb[0].Key, hb[0].Value); err != nil || h.Source != "A" || h.Target != "B" {
		t.Fatalf("heartbeat %+v %v", h, err)
	}

	// The worker stops; records produced meanwhile are copied after its
	// restart, from the offsets it stored: none lost, none copied twice.
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(mirrorTimeout):
		t.Fatal("worker did not stop on SIGTERM")
	}
	produce(t, a.addr, "orders", 2, 100, 50)
	_, url = startConnectWorker(t, b.addr, port)
	waitConnectorRunning(t, url, "mm2-source")
	checkOrdered(t, readAll(t, b.addr, "A.orders", 300), "orders", 2, 150)
}
