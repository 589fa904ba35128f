package compat

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestRestStandalone: `vltava rest serve` fronts a broker as any Kafka
// client would, with Confluent's property names; an unknown property is
// refused by name.
func TestRestStandalone(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "the proxy under test is vltava's own binary")
	bin, err := brokerBinary()
	if err != nil {
		t.Fatal(err)
	}
	b := StartBroker(t)
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, b), topic, 1, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "rest", "serve", "--override", "bootstrap.servers="+b.Addr(), "--override", "rest.nonsense=1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "rest.nonsense") {
		t.Fatalf("unknown property: %v\n%s", err, out)
	}

	addr := freeport.Addr(t)
	var output bytes.Buffer
	cmd := exec.Command(bin, "rest", "serve", "--override", "bootstrap.servers="+b.Addr(),
		"--override", "listeners=http://"+addr, "--override", "consumer.instance.timeout.ms=60000", "--override", "id=standalone-1")
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("vltava rest serve output:\n%s", output.String())
		}
	})
	rb := &restBroker{Broker: b, url: "http://" + addr}
	poll.Until(t, 30*time.Second, "vltava rest serve to answer", func() error {
		resp, err := restHTTP.Get(rb.url + "/v3/clusters")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	var clusters struct {
		Data []struct {
			ClusterID string `json:"cluster_id"`
		} `json:"data"`
	}
	rb.mustJSON(t, http.MethodGet, "/v3/clusters", "", nil, http.StatusOK, &clusters)
	rb.cluster = clusters.Data[0].ClusterID
	var rep struct {
		ErrorCode int   `json:"error_code"`
		Offset    int64 `json:"offset"`
	}
	rb.mustJSON(t, http.MethodPost, rb.v3("/topics/"+topic+"/records"), jsonCT, map[string]any{"value": map[string]any{"type": "STRING", "data": "standalone"}}, http.StatusOK, &rep)
	if rep.ErrorCode != 200 || rep.Offset != 0 {
		t.Fatalf("report %+v", rep)
	}
	var created struct {
		InstanceID string `json:"instance_id"`
	}
	rb.mustJSON(t, http.MethodPost, "/consumers/"+topic+"-g", v2CT, map[string]any{}, http.StatusOK, &created)
	if !strings.HasPrefix(created.InstanceID, "rest-consumer-standalone-1-") {
		t.Fatalf("instance id %q", created.InstanceID)
	}
}
