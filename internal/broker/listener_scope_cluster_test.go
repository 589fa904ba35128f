package broker_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/node"
)

// TestReplicationUsesTheInterBrokerListener: in a two-node cluster whose
// nodes have a CLIENT listener and a REPLICATION inter-broker listener,
// followers fetch over REPLICATION (a replica fetch over CLIENT would be
// refused), so a record produced over CLIENT reaches the follower, the high
// watermark passes it, and it reads back.
func TestReplicationUsesTheInterBrokerListener(t *testing.T) {
	const n = 2
	var held []net.Listener
	var ports []int
	for range 3 * n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range held {
		ln.Close()
	}
	voters := fmt.Sprintf("1@127.0.0.1:%d,2@127.0.0.1:%d", ports[2], ports[5])
	var mu sync.Mutex
	var clientAddrs []string
	var nodes []*node.Node
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		id := i + 1
		cfg, _, err := config.ParseBroker(map[string]string{
			"node.id":       fmt.Sprint(id),
			"process.roles": "broker,controller",
			"listeners": fmt.Sprintf("CLIENT://127.0.0.1:%d,REPLICATION://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d",
				ports[3*i], ports[3*i+1], ports[3*i+2]),
			"listener.security.protocol.map":        "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"controller.listener.names":             "CONTROLLER",
			"inter.broker.listener.name":            "REPLICATION",
			"controller.quorum.voters":              voters,
			"controller.quorum.election.timeout.ms": "300",
			"broker.heartbeat.interval.ms":          "100",
			"broker.session.timeout.ms":             "2000",
			"log.dirs":                              t.TempDir(),
			"admin.listeners":                       "",
			"rest.listeners":                        "",
			"schema.registry.listeners":             "",
			"console.listeners":                     "",
			"auto.create.topics.enable":             "false",
		})
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd, err := node.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				errs <- fmt.Errorf("node %d: %w", id, err)
				return
			}
			mu.Lock()
			nodes = append(nodes, nd)
			clientAddrs = append(clientAddrs, nd.Addrs()["CLIENT"].String())
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Closed together, so each controlled shutdown still finds a quorum.
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, nd := range nodes {
			wg.Add(1)
			go func() { defer wg.Done(); nd.Close() }()
		}
		wg.Wait()
	})
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(clientAddrs...), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctx, 1, 2, nil, "replicated")
	if err != nil || res.Err != nil {
		t.Fatalf("creating the topic: %v %v", err, res.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce over the client listener: %v", err)
	}
	// The high watermark passes the record only once the follower, in
	// the ISR since creation, has fetched it.
	deadline := time.Now().Add(15 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, "replicated")
		if err == nil {
			if o, ok := ends.Lookup("replicated", 0); ok && o.Err == nil && o.Offset == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("high watermark never covered the record (the follower did not replicate it): %v %v", ends, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	fetches := cl.PollRecords(ctx, 1)
	if err := fetches.Err(); err != nil {
		t.Fatalf("consuming: %v", err)
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("consumed %v, want the one record", recs)
	}
}
