package compat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestBrokerLoggerConfigs drives the broker-logger admin as Kafka's
// kafka-configs.sh --entity-type broker-loggers does: DescribeConfigs on
// resource type BROKER_LOGGER lists the loggers and their levels, and
// IncrementalAlterConfigs SETs one logger's level, DELETEs it back to
// root's, and refuses an unknown level, APPEND and removing root's.
func TestBrokerLoggerConfigs(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake has no broker loggers")
	b := StartBroker(t, WithOverride("log.format", "json"), WithOverride("log.request.sample.rate", "1"))
	cl := newClient(t, b)
	ctx := testContext(t, 30*time.Second)
	const brokerLogger = kmsg.ConfigResourceType(8)
	id := "1"

	levels := func() map[string]string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = brokerLogger, id
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
			t.Fatalf("DescribeConfigs BROKER_LOGGER: %v", err)
		}
		out := map[string]string{}
		for _, c := range resp.Resources[0].Configs {
			out[c.Name] = *c.Value
		}
		return out
	}
	alter := func(op kmsg.IncrementalAlterConfigOp, name, value string) error {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = brokerLogger, id
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = name, op
		if value != "" {
			c.Value = &value
		}
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}

	got := levels()
	if got["root"] != "INFO" || got["vltava.storage"] != "INFO" {
		t.Fatalf("loggers %v: want root and vltava.storage at INFO", got)
	}
	if err := alter(kmsg.IncrementalAlterConfigOpSet, "vltava.broker", "DEBUG"); err != nil {
		t.Fatalf("SET vltava.broker=DEBUG: %v", err)
	}
	if got := levels(); got["vltava.broker"] != "DEBUG" || got["root"] != "INFO" {
		t.Fatalf("after SET: %v", got)
	}
	// vltava.broker logs at debug now: a new topic's CreateTopics is
	// forwarded or handled with debug lines of its own. At least the
	// change itself is logged, as one JSON object per line.
	poll.True(t, 10*time.Second, "a JSON log line for the level change", func() bool {
		for _, line := range strings.Split(b.Output(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "logger level changed" && m["logger"] == "vltava.broker" {
				return true
			}
		}
		return false
	})
	// log.request.sample.rate=1 logs every request once its logger
	// (the connections', vltava.server) is at DEBUG.
	if err := alter(kmsg.IncrementalAlterConfigOpSet, "vltava.server", "DEBUG"); err != nil {
		t.Fatalf("SET vltava.server=DEBUG: %v", err)
	}
	poll.True(t, 10*time.Second, "a sampled request log line", func() bool {
		levels() // a DescribeConfigs request to log
		for _, line := range strings.Split(b.Output(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" && m["api"] == "DescribeConfigs" {
				return true
			}
		}
		return false
	})
	if err := alter(kmsg.IncrementalAlterConfigOpDelete, "vltava.broker", ""); err != nil {
		t.Fatalf("DELETE vltava.broker: %v", err)
	}
	if got := levels(); got["vltava.broker"] != "INFO" {
		t.Fatalf("after DELETE: vltava.broker at %s, want root's INFO", got["vltava.broker"])
	}
	for _, c := range []struct {
		op          kmsg.IncrementalAlterConfigOp
		name, value string
		want        error
	}{
		{kmsg.IncrementalAlterConfigOpSet, "vltava.broker", "LOUD", kerr.InvalidConfig},
		{kmsg.IncrementalAlterConfigOpSet, "no.such.logger", "DEBUG", kerr.InvalidConfig},
		{kmsg.IncrementalAlterConfigOpAppend, "vltava.broker", "DEBUG", kerr.InvalidRequest},
		{kmsg.IncrementalAlterConfigOpDelete, "root", "", kerr.InvalidRequest},
	} {
		if err := alter(c.op, c.name, c.value); err != c.want {
			t.Errorf("%v %s=%q: %v, want %v", c.op, c.name, c.value, err, c.want)
		}
	}
}
