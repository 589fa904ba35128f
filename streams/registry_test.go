package streams_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/registry"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/streams"
)

// startRegistry runs the project's schema registry on loopback, its
// _schemas topic on an in-process kfake cluster, and returns its URL.
func startRegistry(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	port := freeport.Port(t)
	s, err := registry.Start(context.Background(), registry.Config{
		Listeners: []config.HTTPListener{{Scheme: "http", Host: "127.0.0.1", Port: port}},
		Store: registry.StoreConfig{Topic: "_schemas", ReplicationFactor: 1, InitTimeout: 20 * time.Second,
			Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}},
		CompatibilityLevel: registry.CompatBackward,
	}, registry.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

type order struct {
	ID     string  `json:"id" avro:"id"`
	Amount int64   `json:"amount" avro:"amount"`
	Note   *string `json:"note" avro:"note"`
}

const orderAvro = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"amount","type":"long"},{"name":"note","type":["null","string"],"default":null}]}`

// TestRegistrySerdeAvro runs a topology reading and writing Avro in the
// registry's wire format: the written bytes carry the id the registry gave
// the schema under <topic>-value and decode with an independent Avro
// decoder; a reader that knows no schema decodes them by that id.
func TestRegistrySerdeAvro(t *testing.T) {
	url := startRegistry(t)
	in, err := streams.RegistrySerde[order](streams.RegistryConfig{URL: url, Schema: orderAvro})
	if err != nil {
		t.Fatal(err)
	}
	b := streams.NewBuilder()
	s := streams.NewStream(b, "orders", streams.String(), in)
	streams.MapValues(s, func(k string, o order) order { o.Amount *= 2; return o }).
		To("doubled", streams.WithValueSerde(in))
	d := driver(t, b)
	src := streams.CreateInputTopic(d, "orders", streams.String(), in)
	note := "gift"
	pipe(t, src, "a", order{ID: "a", Amount: 5, Note: &note}, 1)
	pipe(t, src, "b", order{ID: "b", Amount: 7}, 2)

	raw, err := streams.CreateOutputTopic(d, "doubled", streams.String(), streams.Bytes()).ReadRecordsToList()
	if err != nil || len(raw) != 2 {
		t.Fatalf("doubled: %d records, %v; want 2", len(raw), err)
	}
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, subject := range []string{"orders-value", "doubled-value"} {
		ss, err := cl.SchemaByVersion(ctx, subject, -1)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		if subject == "doubled-value" {
			for _, r := range raw {
				if r.Value[0] != 0 || int(binary.BigEndian.Uint32(r.Value[1:5])) != ss.ID {
					t.Fatalf("record %x: want magic 0 and schema id %d", r.Value[:5], ss.ID)
				}
			}
		}
	}
	var got order
	if err := avro.Unmarshal(avro.MustParse(orderAvro), raw[0].Value[5:], &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != "a" || got.Amount != 10 || got.Note == nil || *got.Note != "gift" {
		t.Errorf("Avro-decoded output %+v, want a, 10, gift", got)
	}

	reader, err := streams.RegistrySerde[order](streams.RegistryConfig{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	o, err := reader.Deserialize("doubled", raw[1].Value)
	if err != nil || o.ID != "b" || o.Amount != 14 || o.Note != nil {
		t.Errorf("reader without a schema: %+v, %v; want b, 14, no note", o, err)
	}
	if _, err := reader.Serialize("doubled", o); err == nil {
		t.Error("a serde without a writer schema serialized")
	}
	if _, err := reader.Deserialize("doubled", []byte("plain")); err == nil || !strings.Contains(err.Error(), "wire format") {
		t.Errorf("bytes without the magic byte: %v, want a wire-format error", err)
	}
	if _, err := reader.Deserialize("doubled", []byte{0, 0, 0, 0, 0x7f}); err == nil || !strings.Contains(err.Error(), "schema 127") {
		t.Errorf("unknown schema id: %v, want an error naming schema 127", err)
	}
}

// TestRegistrySerdeSettings: keys use <topic>-key, auto.register.schemas
// off looks up and refuses an unregistered schema, a JSON Schema refuses a
// value it does not accept, and a bad schema, type or URL fails at once.
func TestRegistrySerdeSettings(t *testing.T) {
	url := startRegistry(t)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}

	key, err := streams.RegistrySerde[string](streams.RegistryConfig{URL: url, Schema: `"string"`, IsKey: true})
	if err != nil {
		t.Fatal(err)
	}
	kb, err := key.Serialize("users", "alice")
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.SchemaByVersion(ctx, "users-key", -1)
	if err != nil || int(binary.BigEndian.Uint32(kb[1:5])) != ss.ID {
		t.Fatalf("key serde: id %d, subject users-key %+v %v", binary.BigEndian.Uint32(kb[1:5]), ss, err)
	}
	if back, err := key.Deserialize("users", kb); err != nil || back != "alice" {
		t.Errorf("key round trip: %q, %v", back, err)
	}

	const jsonSchema = `{"type":"object","properties":{"id":{"type":"string"},"amount":{"type":"integer","minimum":0}},"required":["id","amount"]}`
	noReg, err := streams.RegistrySerde[order](streams.RegistryConfig{URL: url, SchemaType: "JSON", Schema: jsonSchema, AutoRegisterDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noReg.Serialize("payments", order{ID: "p", Amount: 1}); err == nil || !strings.Contains(err.Error(), "payments-value") {
		t.Fatalf("auto.register.schemas off, schema not registered: %v, want an error naming payments-value", err)
	}
	if _, err := cl.RegisterSchema(ctx, "payments-value", sr.Schema{Schema: jsonSchema, Type: sr.TypeJSON}, -1, -1); err != nil {
		t.Fatal(err)
	}
	pb, err := noReg.Serialize("payments", order{ID: "p", Amount: 1})
	if err != nil {
		t.Fatalf("auto.register.schemas off, schema registered: %v", err)
	}
	if string(pb[5:]) != `{"id":"p","amount":1,"note":null}` {
		t.Errorf("JSON Schema payload %q", pb[5:])
	}
	if back, err := noReg.Deserialize("payments", pb); err != nil || back.ID != "p" || back.Amount != 1 {
		t.Errorf("JSON Schema round trip: %+v, %v", back, err)
	}
	if _, err := noReg.Serialize("payments", order{ID: "p", Amount: -3}); err == nil || !strings.Contains(err.Error(), "does not accept") {
		t.Errorf("a value the JSON Schema refuses: %v", err)
	}

	for what, cfg := range map[string]streams.RegistryConfig{
		"no URL":     {Schema: `"string"`},
		"bad type":   {URL: url, SchemaType: "THRIFT", Schema: `"string"`},
		"bad schema": {URL: url, Schema: `{"type":"record"}`},
	} {
		if _, err := streams.RegistrySerde[string](cfg); err == nil {
			t.Errorf("%s: accepted", what)
		}
	}
}
