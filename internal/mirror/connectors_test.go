package mirror

import (
	"strings"
	"testing"
)

func TestConnectorFlow(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{
			"name": "mm2", "connector.class": SourceConnectorClass, "tasks.max": "4",
			"key.converter":        "org.apache.kafka.connect.converters.ByteArrayConverter",
			"source.cluster.alias": "east", "target.cluster.alias": "west",
			"source.cluster.bootstrap.servers": "e1:9092,e2:9092", "target.cluster.bootstrap.servers": "w1:9092",
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	f, src, tgt, err := connectorFlow(base("topics", "orders.*", "offset.lag.max", "7", "source.cluster.security.protocol", "SSL", "replication.policy.separator", "_"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != "east->west" || f.OffsetLagMax != 7 || !f.Mirrored("orders-eu") || f.Mirrored("payments") {
		t.Fatalf("flow %+v", f)
	}
	if f.Policy.FormatRemoteTopic("east", "orders") != "east_orders" {
		t.Fatal("separator not applied")
	}
	if len(src.Bootstrap) != 2 || src.Security == nil || tgt.Bootstrap[0] != "w1:9092" {
		t.Fatalf("clusters %+v %+v", src, tgt)
	}
	if f, _, _, err := connectorFlow(map[string]string{"source.cluster.bootstrap.servers": "a:1", "target.cluster.bootstrap.servers": "b:1"}); err != nil || f.Name() != "source->target" {
		t.Fatalf("default aliases: %v %v", f.Name(), err)
	}
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{base("bogus.setting", "1"), "bogus.setting"},
		{base("east->west.topics", "x"), "east->west.topics"},
		{base("offset.flush.interval.ms", "100"), "offset.flush.interval.ms"},
		{base("exactly.once.source.support", "enabled"), "exactly.once.source.support"},
		{base("topics", "orders["), "invalid regex"},
		{base("vltava.preserve.offsets", "true"), "vltava.preserve.offsets"},
		{base("target.cluster.bootstrap.servers", ""), "target.cluster.bootstrap.servers"},
		{base("source.cluster.sasl.nonsense", "x"), "source.cluster.sasl.nonsense"},
		{base("target.cluster.alias", "east"), "must differ"},
	} {
		if _, _, _, err := connectorFlow(c.props); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %q", c.props, err, c.want)
		}
	}
	// Each connector starts only with something to do.
	cp := &mirrorConnector{kind: kindCheckpoint}
	if err := cp.Start(base("emit.checkpoints.enabled", "false")); err == nil {
		t.Error("checkpoint connector started with emit.checkpoints.enabled=false")
	}
	src1 := &mirrorConnector{kind: kindSource}
	if err := src1.Start(base()); err != nil {
		t.Fatal(err)
	}
	tasks, _ := src1.TaskConfigs(4)
	if len(tasks) != 1 || tasks[0]["connector.class"] != "" || tasks[0]["source.cluster.alias"] != "east" {
		t.Fatalf("task configs %v", tasks)
	}
}
