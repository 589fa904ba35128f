package spooldir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vltava/vltava/connect"
)

// offsets is an offset store the test commits to by hand.
type offsets map[string]map[string]any

func (o offsets) Offset(p map[string]any) (map[string]any, error) { return o[fmt.Sprint(p)], nil }

type taskCtx struct{ o offsets }

func (c taskCtx) Configs() map[string]string                       { return nil }
func (c taskCtx) OffsetStorageReader() connect.OffsetStorageReader { return c.o }
func (c taskCtx) TransactionContext() connect.TransactionContext   { return nil }
func (o offsets) commit(r connect.SourceRecord)                    { o[fmt.Sprint(r.SourcePartition)] = r.SourceOffset }
func dirs(t *testing.T) (string, string, string, map[string]string) {
	root := t.TempDir()
	in, fin, errd := filepath.Join(root, "in"), filepath.Join(root, "finished"), filepath.Join(root, "error")
	for _, d := range []string{in, fin, errd} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return in, fin, errd, map[string]string{
		"topic": "orders", "input.path": in, "finished.path": fin, "error.path": errd,
		"input.file.pattern": `.*\.csv`, "csv.first.row.as.header": "true", "schema.generation.enabled": "true",
	}
}

func start(t *testing.T, props map[string]string, o offsets) *sourceTask {
	t.Helper()
	c := &Connector{}
	if err := c.Start(props); err != nil {
		t.Fatal(err)
	}
	cfgs, _ := c.TaskConfigs(4)
	if len(cfgs) != 1 {
		t.Fatalf("%d task configs", len(cfgs))
	}
	task := c.NewTask().(*sourceTask)
	task.Initialize(taskCtx{o})
	if err := task.Start(cfgs[0]); err != nil {
		t.Fatal(err)
	}
	return task
}

func csvRows(n int) string {
	var b strings.Builder
	b.WriteString("date,product_id,city_id,orders\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "2024-01-%02d,%d,%d,%d\n", i%28+1, i, i%10, i%7)
	}
	return b.String()
}

func TestCSVWithHeaderGeneratesStringSchemaAndMovesFile(t *testing.T) {
	in, fin, _, props := dirs(t)
	props["batch.size"] = "4"
	props["schema.generation.key.fields"] = "product_id"
	if err := os.WriteFile(filepath.Join(in, "ecommerce_data.csv"), []byte(csvRows(10)), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(in, "ignored.txt"), []byte("x"), 0o644)
	o := offsets{}
	task := start(t, props, o)
	var got []connect.SourceRecord
	for i := 0; i < 10 && len(got) < 10; i++ {
		recs, err := task.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 4 {
			t.Fatalf("batch of %d over batch.size", len(recs))
		}
		got = append(got, recs...)
	}
	if len(got) != 10 {
		t.Fatalf("%d records", len(got))
	}
	r := got[2]
	vs := r.ValueSchema
	if vs.Name != "com.github.jcustenborder.kafka.connect.model.Value" || len(vs.Fields) != 4 || vs.Fields[3].Name != "orders" ||
		vs.Fields[0].Schema.Type != connect.String || !vs.Fields[0].Schema.Optional {
		t.Fatalf("schema %+v", vs)
	}
	if v, _ := r.Value.(*connect.Struct).Get("product_id"); v != "3" {
		t.Fatalf("product_id %v", v)
	}
	if k, _ := r.Key.(*connect.Struct).Get("product_id"); k != "3" || r.KeySchema.Fields[0].Name != "product_id" {
		t.Fatalf("key %v", r.Key)
	}
	if r.SourcePartition["fileName"] != "ecommerce_data.csv" || r.SourceOffset["offset"] != int64(3) || r.Topic != "orders" {
		t.Fatalf("coordinates %v %v", r.SourcePartition, r.SourceOffset)
	}
	// Read to the end: the file moves to finished.path; ignored.txt stays.
	for i := 0; i < 3; i++ {
		if _, err := os.Stat(filepath.Join(fin, "ecommerce_data.csv")); err == nil {
			break
		}
		if _, err := task.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(fin, "ecommerce_data.csv")); err != nil {
		t.Fatal("file not moved to finished.path")
	}
	if _, err := os.Stat(filepath.Join(in, "ignored.txt")); err != nil {
		t.Fatal("a file not matching the pattern was touched")
	}
	_ = task.Stop()
}

func TestRestartResumesMidFile(t *testing.T) {
	in, _, _, props := dirs(t)
	props["batch.size"] = "3"
	_ = os.WriteFile(filepath.Join(in, "a.csv"), []byte(csvRows(8)), 0o644)
	o := offsets{}
	task := start(t, props, o)
	recs, err := task.Poll(context.Background())
	if err != nil || len(recs) != 3 {
		t.Fatal(len(recs), err)
	}
	for _, r := range recs {
		o.commit(r)
	}
	_ = task.Stop() // a restart: the file is still in input.path
	task = start(t, props, o)
	var rest []connect.SourceRecord
	for i := 0; i < 5; i++ {
		r, err := task.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, r...)
	}
	if len(rest) != 5 {
		t.Fatalf("resumed with %d records, want 5", len(rest))
	}
	if v, _ := rest[0].Value.(*connect.Struct).Get("product_id"); v != "4" {
		t.Fatalf("resumed at product %v", v)
	}
}

func TestValueSchemaTypesAndErrorPath(t *testing.T) {
	in, _, errd, props := dirs(t)
	props["schema.generation.enabled"] = "false"
	props["value.schema"] = `{"name":"com.example.Order","type":"STRUCT","isOptional":false,"fieldSchemas":{
		"date":{"type":"STRING","isOptional":false},"product_id":{"type":"INT64","isOptional":false},
		"city_id":{"type":"INT32","isOptional":true},"orders":{"type":"INT32","isOptional":false}}}`
	props["halt.on.error"] = "false"
	props["cleanup.policy"] = "DELETE"
	_ = os.WriteFile(filepath.Join(in, "a.csv"), []byte("date,product_id,city_id,orders\n2024-01-01,5,,9\n"), 0o644)
	_ = os.WriteFile(filepath.Join(in, "b.csv"), []byte("date,product_id,city_id,orders\n2024-01-01,notanumber,1,9\n"), 0o644)
	task := start(t, props, offsets{})
	recs, err := task.Poll(context.Background())
	if err != nil || len(recs) != 1 {
		t.Fatal(len(recs), err)
	}
	st := recs[0].Value.(*connect.Struct)
	if st.Schema().Name != "com.example.Order" || st.Schema().Fields[1].Name != "product_id" {
		t.Fatalf("schema %+v", st.Schema())
	}
	if p, _ := st.Get("product_id"); p != int64(5) {
		t.Fatalf("product_id %#v", p)
	}
	if c, _ := st.Get("city_id"); c != nil {
		t.Fatalf("empty optional cell gave %#v", c)
	}
	// a.csv is deleted (cleanup.policy=DELETE); b.csv fails and goes to error.path.
	for i := 0; i < 3; i++ {
		if _, err := task.Poll(context.Background()); err != nil {
			t.Fatalf("halt.on.error=false still failed: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(in, "a.csv")); !os.IsNotExist(err) {
		t.Fatal("a.csv not deleted")
	}
	if _, err := os.Stat(filepath.Join(errd, "b.csv")); err != nil {
		t.Fatal("b.csv not in error.path")
	}
	// With halt.on.error=true the task fails.
	props["halt.on.error"] = "true"
	_ = os.WriteFile(filepath.Join(in, "c.csv"), []byte("date,product_id,city_id,orders\nx,y,z,w\n"), 0o644)
	task = start(t, props, offsets{})
	if _, err := task.Poll(context.Background()); err == nil || !strings.Contains(err.Error(), "product_id") {
		t.Fatalf("halt.on.error: %v", err)
	}
}

func TestConfigRefusals(t *testing.T) {
	_, _, _, props := dirs(t)
	bad := []map[string]string{
		{"input.path": "/does/not/exist"},
		{"schema.generation.enabled": "false"},
		{"csv.quote.char": "39"},
		{"cleanup.policy": "MOVEBYDATE"},
		{"input.file.pattern": "("},
	}
	for _, b := range bad {
		p := map[string]string{}
		for k, v := range props {
			p[k] = v
		}
		for k, v := range b {
			p[k] = v
		}
		if err := (&Connector{}).Start(p); err == nil {
			t.Fatalf("%v accepted", b)
		}
	}
	if _, ok := connect.Lookup(VltavaName); !ok {
		t.Fatal("alias not registered")
	}
}
