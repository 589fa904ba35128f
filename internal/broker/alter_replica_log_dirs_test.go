package broker_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAlterReplicaLogDirsMovesUnderLoad moves a partition between the two
// log dirs of a broker (JBOD) with franz-go's admin client while a franz-go
// producer writes to it: DescribeLogDirs shows it in the new dir, and every
// acknowledged record is read back, in order, none twice.
func TestAlterReplicaLogDirsMovesUnderLoad(t *testing.T) {
	root := t.TempDir()
	d1, d2 := filepath.Join(root, "a"), filepath.Join(root, "b")
	tn := startNode(t, map[string]string{"log.dirs": d1 + "," + d2})
	c := tn.dial()
	createTopic(c, "mv", 1, map[string]string{"segment.bytes": "20000"})

	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr), kgo.DefaultProduceTopic("mv"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	dirOf := func() (dir string, future bool) {
		t.Helper()
		described, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"mv": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for d, ld := range described {
			if p, ok := ld.Topics["mv"][0]; ok {
				if p.IsFuture {
					future = true
				} else {
					dir = d
				}
			}
		}
		return dir, future
	}
	src, _ := dirOf()
	dst := d2
	if src == d2 {
		dst = d1
	}

	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("v%06d", i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v + string(make([]byte, 200)))}).FirstErr(); err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	}()
	within(t, 20*time.Second, "records acknowledged before the move", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 300
	})

	var req kadm.AlterReplicaLogDirsReq
	req.Add(dst, kadm.TopicsSet{"mv": {0: {}}})
	res, err := adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["mv"][0]; r.Err != nil {
		t.Fatalf("AlterReplicaLogDirs: %v", r.Err)
	}
	within(t, 30*time.Second, "the partition in its new log dir", func() bool {
		dir, future := dirOf()
		return dir == dst && !future
	})
	n := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	after := n()
	within(t, 20*time.Second, "records acknowledged after the move", func() bool { return n() >= after+200 })
	close(stop)
	wg.Wait()

	// Read everything back with a consumer.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(tn.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"mv": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	for len(got) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d acknowledged records", len(got), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value[:7])) })
	}
	for i, v := range acked {
		if got[i] != v {
			t.Fatalf("record %d is %s, acknowledged %s", i, got[i], v)
		}
	}

	// Kafka's refusals.
	req = nil
	req.Add(filepath.Join(root, "elsewhere"), kadm.TopicsSet{"mv": {0: {}}})
	req.Add(dst, kadm.TopicsSet{"absent": {0: {}}})
	res, err = adm.AlterBrokerReplicaLogDirs(ctx, 1, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := res["mv"][0].Err; !errors.Is(err, kerr.LogDirNotFound) {
		t.Errorf("move to a dir outside log.dirs: %v, want LOG_DIR_NOT_FOUND", err)
	}
	if err := res["absent"][0].Err; !errors.Is(err, kerr.ReplicaNotAvailable) {
		t.Errorf("move of a partition not hosted: %v, want REPLICA_NOT_AVAILABLE", err)
	}
}
