package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/vltava/vltava/internal/mirror"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

func topicExists(t testing.TB, addr, topic string) bool { return partitionCount(t, addr, topic) > 0 }

// TestMirrorActiveActive runs A->B and B->A: each side's topics arrive on
// the other, nothing comes back (no A.B.x or B.A.x), and heartbeats flow
// both ways.
func TestMirrorActiveActive(t *testing.T) {
	a, b := startCluster(t, "A"), startCluster(t, "B")
	createTopic(t, a.addr, "orders", 1, nil)
	createTopic(t, b.addr, "orders", 1, nil)
	produce(t, a.addr, "orders", 1, 0, 20)
	produce(t, b.addr, "orders", 1, 0, 30)
	startMirror(t, mm2Props(a.addr, b.addr, "A->B.enabled = true", "B->A.enabled = true"))
	checkOrdered(t, readAll(t, b.addr, "A.orders", 20), "orders", 1, 20)
	checkOrdered(t, readAll(t, a.addr, "B.orders", 30), "orders", 1, 30)
	for _, c := range []struct{ addr, from string }{{a.addr, "B"}, {b.addr, "A"}} {
		recs := readAll(t, c.addr, c.from+".heartbeats", 1)
		if len(recs) == 0 {
			t.Fatalf("no %s.heartbeats", c.from)
		}
		h, err := mirror.DecodeHeartbeat(recs[0].Key, recs[0].Value)
		if err != nil || h.Target == h.Source {
			t.Fatalf("heartbeat %+v %v", h, err)
		}
	}
	// Several refreshes later, still no cycle.
	time.Sleep(5 * time.Second) // three refresh.topics intervals: the absence of a topic has no event to wait for
	for _, c := range []struct{ addr, topic string }{{a.addr, "A.B.orders"}, {b.addr, "B.A.orders"}, {a.addr, "A.orders"}, {b.addr, "B.orders"}, {a.addr, "A.B.heartbeats"}} {
		if topicExists(t, c.addr, c.topic) {
			t.Fatalf("cycle: %s exists", c.topic)
		}
	}
}

// ledger produces keyed records to topic until stopped and returns the
// keys acknowledged.
type ledger struct {
	stop chan struct{}
	done chan []string
}

func startLedger(t testing.TB, addr, topic string) *ledger {
	l := &ledger{stop: make(chan struct{}), done: make(chan []string, 1)}
	cl := clientOf(t, addr, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	go func() {
		var keys []string
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				l.done <- keys
				return
			default:
			}
			var recs []*kgo.Record
			for j := 0; j < 50; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d-%d", i, j)), Value: []byte(strings.Repeat("x", 200))})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err == nil {
				for _, r := range recs {
					keys = append(keys, string(r.Key))
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return l
}

func (l *ledger) finish() []string { close(l.stop); return <-l.done }

// TestMirrorKillRestart kills the mirror with SIGKILL mid-stream and
// restarts it: without exactly-once every record is on B at least once;
// with exactly.once.source.support=enabled exactly once, also to a
// three-node B with the replication factors' defaults (internal topics 3,
// remote topics 2).
func TestMirrorKillRestart(t *testing.T) {
	for _, c := range []struct {
		eos, threeNodes bool
	}{{false, false}, {true, false}, {true, true}} {
		eos := c.eos
		t.Run(fmt.Sprintf("exactly.once=%v target.nodes=%d", eos, map[bool]int{false: 1, true: 3}[c.threeNodes]), func(t *testing.T) {
			a := startCluster(t, "A")
			createTopic(t, a.addr, "events", 3, nil)
			extra := []string{"A->B.enabled = true", "emit.checkpoints.enabled = false"}
			if eos {
				extra = append(extra, "exactly.once.source.support = enabled")
			}
			var bAddr string
			var props string
			if c.threeNodes {
				_, bAddr = startCluster3(t, "B")
				// A's internal topic (the offset syncs) has one replica;
				// B's take the defaults.
				props = strings.Join(append([]string{"clusters = A, B", "A.bootstrap.servers = " + a.addr, "B.bootstrap.servers = " + bAddr,
					"A->B.offset-syncs.topic.replication.factor = 1", "B->A.heartbeats.topic.replication.factor = 1", "refresh.topics.interval.seconds = 2", "offset.flush.interval.ms = 500"}, extra...), "\n") + "\n"
			} else {
				bAddr = startCluster(t, "B").addr
				props = mm2Props(a.addr, bAddr, extra...)
			}
			b := struct{ addr string }{bAddr}
			l := startLedger(t, a.addr, "events")
			m, _ := startMirror(t, props)
			poll.Until(t, mirrorTimeout, "records on B", func() error {
				if n := endSum(t, b.addr, "A.events"); n < 500 {
					return fmt.Errorf("%d records", n)
				}
				return nil
			})
			m.kill()
			time.Sleep(500 * time.Millisecond) // records keep arriving on A while the mirror is down
			startMirror(t, props)
			time.Sleep(2 * time.Second)
			keys := l.finish()
			recs := readAll(t, b.addr, "A.events", len(keys))
			seen := map[string]int{}
			for _, r := range recs {
				seen[string(r.Key)]++
			}
			dups := 0
			for _, k := range keys {
				switch n := seen[k]; {
				case n == 0:
					t.Fatalf("record %s acknowledged on A is missing on B (%d of %d records on B)", k, len(recs), len(keys))
				case n > 1:
					dups += n - 1
				}
			}
			t.Logf("exactly.once=%v: %d records produced, %d on B, %d duplicates", eos, len(keys), len(recs), dups)
			if c.threeNodes {
				td, err := admin(t, b.addr).ListTopics(context.Background(), "A.events", "mm2-offsets.A.internal")
				if err != nil {
					t.Fatal(err)
				}
				for topic, want := range map[string]int{"A.events": 2, "mm2-offsets.A.internal": 3} {
					for _, p := range td[topic].Partitions {
						if len(p.Replicas) != want {
							t.Fatalf("%s[%d]: %d replicas, want %d (the default)", topic, p.Partition, len(p.Replicas), want)
						}
					}
				}
			}
			if eos && dups > 0 {
				t.Fatalf("exactly-once mirroring wrote %d duplicates", dups)
			}
		})
	}
}

// endSum is the sum of a topic's end offsets.
func endSum(t testing.TB, addr, topic string) int64 {
	ends, err := admin(t, addr).ListEndOffsets(context.Background(), topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

// TestMirrorFromKfake mirrors from franz-go's in-memory cluster: the mirror
// is a client and works with any Kafka-compatible source.
func TestMirrorFromKfake(t *testing.T) {
	port := freeport.Port(t)
	fake, err := kfake.NewCluster(kfake.Ports(port), kfake.SeedTopics(2, "clicks"))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	src := fake.ListenAddrs()[0]
	b := startCluster(t, "B")
	produce(t, src, "clicks", 2, 0, 100)
	_, cfg := startMirror(t, mm2Props(src, b.addr, "A->B.enabled = true", "sync.topic.acls.enabled = false", "offset.lag.max = 10"))
	checkOrdered(t, readAll(t, b.addr, "A.clicks", 200), "clicks", 2, 100)

	// A group commits on kfake; translate-offsets gives B's offsets from
	// the checkpoints, within offset.lag.max behind and never ahead.
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "clicks", Partition: 0, At: 37, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: "clicks", Partition: 1, At: 64, LeaderEpoch: -1})
	if _, err := admin(t, src).CommitOffsets(context.Background(), "dashboard", commit); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, mirrorTimeout, "the group's checkpoints from kfake", func() error {
		out, err := run(t, "mirror", "translate-offsets", "--config", cfg, "--group", "dashboard", "--source", "A", "--target", "B")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "A.clicks" {
				continue
			}
			var p int32
			var off int64
			fmt.Sscan(f[1], &p)
			fmt.Sscan(f[2], &off)
			want := map[int32]int64{0: 37, 1: 64}[p]
			if off > want || want-off >= 10 {
				return fmt.Errorf("partition %d: committed %d on kfake, translated %d", p, want, off)
			}
			got[f[1]] = true
		}
		if len(got) != 2 {
			return fmt.Errorf("translated: %s", out)
		}
		return nil
	})
}

// TestMirrorBadInput: an invalid regex stops the mirror at start naming
// the key; an unreachable target is retried (status says so) and nothing
// is lost once it is up; a topic deleted on the source stops being
// mirrored while the others go on.
func TestMirrorBadInput(t *testing.T) {
	out, err := run(t, "mirror", "--config", writeFile(t, mm2Props("127.0.0.1:1", "127.0.0.1:2", "A->B.enabled = true", "A->B.topics = orders[")))
	if err == nil || !strings.Contains(out, "topics") || !strings.Contains(out, "invalid regex") {
		t.Fatalf("invalid regex: err %v, output %s", err, out)
	}

	a := startCluster(t, "A")
	bAddr := freeport.Addr(t)
	createTopic(t, a.addr, "kept", 1, nil)
	createTopic(t, a.addr, "doomed", 1, nil)
	produce(t, a.addr, "kept", 1, 0, 100)
	produce(t, a.addr, "doomed", 1, 0, 10)
	m, cfg := startMirror(t, mm2Props(a.addr, bAddr, "A->B.enabled = true"))
	out, err = run(t, "mirror", "status", "--config", cfg)
	if err == nil || !strings.Contains(out, "unreachable") {
		t.Fatalf("status with the target down: err %v, output %s", err, out)
	}
	time.Sleep(3 * time.Second) // the mirror retries against the absent target
	if !m.running() {
		t.Fatal("the mirror exited while the target was unreachable")
	}
	b := startClusterAt(t, "B", bAddr)
	checkOrdered(t, readAll(t, b.addr, "A.kept", 100), "kept", 1, 100)
	checkOrdered(t, readAll(t, b.addr, "A.doomed", 10), "doomed", 1, 10)

	if _, err := admin(t, a.addr).DeleteTopics(context.Background(), "doomed"); err != nil {
		t.Fatal(err)
	}
	produce(t, a.addr, "kept", 1, 100, 100)
	checkOrdered(t, readAll(t, b.addr, "A.kept", 200), "kept", 1, 200)
	if !m.running() {
		t.Fatal("the mirror exited after a source topic was deleted")
	}
}

// TestMirrorSecureSource mirrors from a cluster whose listener is
// SASL_PLAINTEXT with PLAIN, with the source's client settings under its
// alias (A.security.protocol, A.sasl.mechanism, A.sasl.jaas.config) while
// B stays PLAINTEXT; with a wrong password nothing is copied.
func TestMirrorSecureSource(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_mirror="mirror-secret";`
	auth := []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())}
	a := startClusterWith(t, "A", freeport.Addr(t), auth,
		"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.inter.broker.protocol=PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config="+jaas)
	b := startCluster(t, "B")
	adm := kadm.NewClient(clientOf(t, a.addr, auth...))
	if resp, err := adm.CreateTopic(context.Background(), 2, 1, nil, "secrets"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	prod := clientOf(t, a.addr, append(auth, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 50; i++ {
			recs = append(recs, &kgo.Record{Topic: "secrets", Partition: p, Key: []byte(fmt.Sprintf("secrets-%d-%d", p, i)),
				Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(fmt.Sprint(i))}}})
		}
	}
	if err := prod.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	secure := func(password string) []string {
		return []string{"A->B.enabled = true", "A.security.protocol = SASL_PLAINTEXT", "A.sasl.mechanism = PLAIN",
			`A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="` + password + `";`,
			"A->B.offset-syncs.topic.location = target", "sync.topic.acls.enabled = false", "B->A.emit.heartbeats.enabled = false"}
	}
	wrong, _ := startMirror(t, mm2Props(a.addr, b.addr, secure("not-the-password")...))
	poll.Until(t, mirrorTimeout, "the mirror to report the failed authentication", func() error {
		if !strings.Contains(wrong.out.String(), "SASL_AUTHENTICATION_FAILED") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if topicExists(t, b.addr, "A.secrets") {
		t.Fatal("a mirror with a wrong password created A.secrets on B")
	}
	wrong.kill()
	startMirror(t, mm2Props(a.addr, b.addr, secure("mirror-secret")...))
	checkOrdered(t, readAll(t, b.addr, "A.secrets", 100), "secrets", 2, 50)
}

// TestMirrorIdentityFiltersACLs: with IdentityReplicationPolicy topics keep
// their names on B; topics.exclude and groups.exclude keep a topic and a
// group out; a READ ACL on a mirrored topic reaches B (sync.topic.acls),
// a WRITE ACL does not, as in Kafka.
func TestMirrorIdentityFiltersACLs(t *testing.T) {
	// The harness and the mirror connect as User:ANONYMOUS, a super user.
	authz := []string{"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:ANONYMOUS"}
	a := startClusterWith(t, "A", freeport.Addr(t), nil, authz...)
	b := startClusterWith(t, "B", freeport.Addr(t), nil, authz...)
	createTopic(t, a.addr, "orders", 1, nil)
	createTopic(t, a.addr, "scratch", 1, nil)
	produce(t, a.addr, "orders", 1, 0, 30)
	produce(t, a.addr, "scratch", 1, 0, 5)
	acls := kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:reader").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe)
	writeACL := kadm.NewACLs().Topics("orders").ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:writer").AllowHosts("*").Operations(kadm.OpWrite)
	for _, b := range []*kadm.ACLBuilder{acls, writeACL} {
		res, err := admin(t, a.addr).CreateACLs(context.Background(), b)
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"kept-group", "skip-group"} {
		commit := kadm.Offsets{}
		commit.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 30, LeaderEpoch: -1})
		if _, err := admin(t, a.addr).CommitOffsets(context.Background(), g, commit); err != nil {
			t.Fatal(err)
		}
	}
	startMirror(t, mm2Props(a.addr, b.addr, "A->B.enabled = true", "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"A->B.topics.exclude = scratch", "A->B.groups.exclude = skip-.*", "sync.topic.acls.interval.seconds = 1", "B->A.emit.heartbeats.enabled = false"))
	checkOrdered(t, readAll(t, b.addr, "orders", 30), "orders", 1, 30)
	poll.Until(t, mirrorTimeout, "the READ ACL on B", func() error {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(context.Background(), clientOf(t, b.addr))
		if err != nil {
			return err
		}
		var got []string
		for _, r := range resp.Resources {
			for _, x := range r.ACLs {
				if r.ResourceName == "orders" {
					got = append(got, x.Principal+":"+x.Operation.String())
				}
			}
		}
		s := strings.Join(got, ",")
		if !strings.Contains(s, "User:reader:READ") || !strings.Contains(s, "User:reader:DESCRIBE") {
			return fmt.Errorf("ACLs on B: %s", s)
		}
		if strings.Contains(s, "User:writer") {
			t.Fatalf("a WRITE ACL was copied: %s", s)
		}
		return nil
	})
	var cps []mirror.Checkpoint
	poll.Until(t, mirrorTimeout, "kept-group's checkpoint", func() error {
		cps = cps[:0]
		for _, r := range readAll(t, b.addr, "A.checkpoints.internal", 1) {
			if cp, err := mirror.DecodeCheckpoint(r.Key, r.Value); err == nil {
				cps = append(cps, cp)
			}
		}
		for _, cp := range cps {
			if cp.Group == "kept-group" && cp.Topic == "orders" && cp.Downstream == 30 {
				return nil
			}
		}
		return fmt.Errorf("checkpoints %+v", cps)
	})
	for _, cp := range cps {
		if cp.Group == "skip-group" {
			t.Fatalf("an excluded group was checkpointed: %+v", cp)
		}
	}
	if topicExists(t, b.addr, "scratch") || topicExists(t, b.addr, "A.scratch") || topicExists(t, b.addr, "A.orders") {
		t.Fatal("an excluded topic was mirrored, or a remote name is not the identity")
	}
}
