package partition

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
)

// fixture is a metadata log, controller, storage and partition manager
// wired as the node wires them, with the manager following the image.
type fixture struct {
	t       *testing.T
	dir     string
	meta    *metadata.LocalLog
	ctl     *rules.Controller
	store   *storage.Manager
	manager *Manager
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.ParseBroker(map[string]string{"log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	meta, err := metadata.OpenLocalLog(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.OpenManager(storage.ManagerConfig{Dirs: []string{dir}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: dir, meta: meta, store: store,
		ctl:     rules.NewController(meta, rules.ControllerConfig{NodeID: 1, ValidateTopicConfigs: config.ValidateTopicConfigs}),
		manager: NewManager(1, cfg, store, log)}
	meta.Subscribe(func(_, img *metadata.Image) {
		if err := f.manager.Apply(img); err != nil {
			t.Errorf("apply: %v", err)
		}
	})
	ctx := context.Background()
	if err := f.ctl.RegisterBroker(ctx, metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: metadata.NewUuid(),
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		store.Close()
		meta.Close()
	})
	return f
}

// sync waits until the manager has applied everything committed.
func (f *fixture) sync() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.manager.WaitApplied(ctx, f.meta.Image().Offset()); err != nil {
		f.t.Fatalf("partitions did not catch up with metadata: %v", err)
	}
}

func (f *fixture) create(name string, partitions int32, configs map[string]*string) metadata.Uuid {
	f.t.Helper()
	res := f.ctl.CreateTopics(context.Background(), []rules.CreateTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: -1, Configs: configs}}, false)
	if res[0].Err != nil {
		f.t.Fatalf("create %s: %v", name, res[0].Err)
	}
	f.sync()
	return res[0].TopicID
}

func (f *fixture) deleteTopic(name string) {
	f.t.Helper()
	if res := f.ctl.DeleteTopics(context.Background(), []string{name}, nil); res[0].Err != nil {
		f.t.Fatalf("delete %s: %v", name, res[0].Err)
	}
	f.sync()
}

func batch(t *testing.T, values ...string) []byte {
	t.Helper()
	var recs []record.Record
	for i, v := range values {
		recs = append(recs, record.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte(v)})
	}
	now := time.Now().UnixMilli()
	b, err := record.BuildBatch(record.Header{LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func str(s string) *string { return &s }

func TestManagerFollowsTheImage(t *testing.T) {
	f := newFixture(t)
	id := f.create("orders", 3, nil)
	for i := int32(0); i < 3; i++ {
		p := f.manager.Get("orders", i)
		if p == nil {
			t.Fatalf("partition %d not opened", i)
		}
		if p.TopicID != id || p.Leader() != 1 || p.LeaderEpoch() != 0 {
			t.Fatalf("partition %d: id %v leader %d epoch %d", i, p.TopicID, p.Leader(), p.LeaderEpoch())
		}
	}
	if got := len(f.manager.All()); got != 3 {
		t.Fatalf("%d partitions hosted, want 3", got)
	}

	// A config change reaches the partition and its log.
	if err := f.ctl.AlterConfigs(context.Background(), []rules.ConfigChange{{ResourceType: 2, ResourceName: "orders", Name: "retention.ms", Value: str("1234")}}, false); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.manager.Get("orders", 0).Config().RetentionMs; got != 1234 {
		t.Fatalf("retention.ms %d after alter, want 1234", got)
	}
	if got := f.manager.Get("orders", 0).Log().Config().RetentionMs; got != 1234 {
		t.Fatalf("log retention %d after alter, want 1234", got)
	}

	// Deleting the topic closes and removes its logs.
	f.deleteTopic("orders")
	if f.manager.Get("orders", 0) != nil || len(f.manager.All()) != 0 {
		t.Fatal("deleted topic's partitions still hosted")
	}
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		if m, _ := filepath.Match("orders-*", e.Name()); m {
			t.Fatalf("log dir %s left after delete", e.Name())
		}
	}
}

func TestRecreatedTopicStartsEmpty(t *testing.T) {
	f := newFixture(t)
	f.create("t", 1, nil)
	if _, err := f.manager.Get("t", 0).Append(batch(t, "old"), 1, 9); err != nil {
		t.Fatal(err)
	}
	f.deleteTopic("t")
	id := f.create("t", 1, nil)
	p := f.manager.Get("t", 0)
	if p.TopicID != id || p.LogEndOffset() != 0 {
		t.Fatalf("recreated topic: id %v, log end %d; want a fresh log", p.TopicID, p.LogEndOffset())
	}
}

func TestAppendAdvancesHighWatermarkAndWakesWaiters(t *testing.T) {
	f := newFixture(t)
	f.create("t", 1, nil)
	p := f.manager.Get("t", 0)
	w := NewWaiter()
	p.Watch(w)
	defer p.Unwatch(w)

	info, err := p.Append(batch(t, "a", "b", "c"), 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	if info.BaseOffset != 0 || info.LastOffset != 2 || p.HighWatermark() != 3 {
		t.Fatalf("append: %+v, high watermark %d", info, p.HighWatermark())
	}
	select {
	case <-w.C:
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not signalled by the append")
	}
	res, err := p.Read(0, 1<<20, true)
	if err != nil || len(res.Data) == 0 {
		t.Fatalf("read: %v, %d bytes", err, len(res.Data))
	}
	region, err := p.ReadRegion(0, 1<<20, true)
	if err != nil || region.Size != int64(len(res.Data)) || region.File == nil {
		t.Fatalf("region: %v, size %d, want %d", err, region.Size, len(res.Data))
	}
}

func TestAppendRules(t *testing.T) {
	f := newFixture(t)
	f.create("strict", 1, map[string]*string{"min.insync.replicas": str("2")})
	f.create("compacted", 1, map[string]*string{"cleanup.policy": str("compact")})
	f.create("small", 1, map[string]*string{"max.message.bytes": str("100")})

	tests := []struct {
		name  string
		topic string
		acks  int16
		data  []byte
		want  *kerr.Error
	}{
		{"acks=all below min.insync.replicas", "strict", -1, batch(t, "v"), kerr.NotEnoughReplicas},
		{"acks=1 ignores min.insync.replicas", "strict", 1, batch(t, "v"), nil},
		{"batch over max.message.bytes", "small", 1, batch(t, string(make([]byte, 200))), kerr.MessageTooLarge},
		{"garbage", "small", 1, []byte("not a batch at all, not at all"), kerr.CorruptMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.manager.Get(tt.topic, 0).Append(tt.data, tt.acks, 9)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("append: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("append: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	f := newFixture(t)
	f.create("t", 1, nil)
	p := f.manager.Get("t", 0)
	for range 4 {
		if _, err := p.Append(batch(t, "v"), 1, 9); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.DeleteRecordsBefore(5); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete beyond the high watermark: %v", err)
	}
	start, err := p.DeleteRecordsBefore(2)
	if err != nil || start != 2 || p.LogStartOffset() != 2 {
		t.Fatalf("delete before 2: start %d, %v", start, err)
	}
	if start, err := p.DeleteRecordsBefore(-1); err != nil || start != 4 {
		t.Fatalf("delete before the high watermark (-1): start %d, %v", start, err)
	}
}

func TestWaitAppliedHonoursContext(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.manager.WaitApplied(ctx, f.meta.Image().Offset()+100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a future offset: %v", err)
	}
}
