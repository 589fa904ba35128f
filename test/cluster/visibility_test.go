package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// visibilityRounds is how many topics TestAdminChangesVisibleOnEveryNode
// creates; every fifth also gets partitions added and is deleted.
const visibilityRounds = 50

// TestAdminChangesVisibleOnEveryNode (issue item 4) checks that CreateTopics,
// CreatePartitions and DeleteTopics answer only once every live broker
// serves the change: each request goes to node 1 (which forwards it when it
// is not the active controller), and right after the answer kcat (librdkafka)
// asks each of the three nodes for the topic's metadata. Every node must
// list a created topic with all its partitions and a leader for each, the
// new partition count after CreatePartitions, and no topic after
// DeleteTopics, every time.
func TestAdminChangesVisibleOnEveryNode(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed")
	}
	c := StartCluster(t)
	ids := []int32{1, 2, 3}
	node1 := c.ClientOf([]int32{1}, kgo.RequestRetries(0))

	var took []time.Duration
	for i := range visibilityRounds {
		topic := fmt.Sprintf("visible-%02d", i)
		start := time.Now()
		// Odd rounds send timeout_ms 0, librdkafka's default
		// (operation_timeout unset): the change must be visible all the
		// same.
		timeout := int32(10000)
		if i%2 == 1 {
			timeout = 0
		}
		createThrough(t, node1, topic, 3, 3, timeout)
		took = append(took, time.Since(start))
		for id, md := range kcatMetadataAll(t, c, ids, topic) {
			if err := md.hasPartitions(topic, 3); err != nil {
				t.Fatalf("round %d: right after CreateTopics returned, node %d: %v", i, id, err)
			}
		}
		if i%5 != 0 {
			continue
		}
		createPartitionsThrough(t, node1, topic, 5)
		for id, md := range kcatMetadataAll(t, c, ids, topic) {
			if err := md.hasPartitions(topic, 5); err != nil {
				t.Fatalf("round %d: right after CreatePartitions returned, node %d: %v", i, id, err)
			}
		}
		deleteThrough(t, node1, topic)
		for id, md := range kcatMetadataAll(t, c, ids, topic) {
			if err := md.lacks(topic); err != nil {
				t.Fatalf("round %d: right after DeleteTopics returned, node %d: %v", i, id, err)
			}
		}
	}
	var total time.Duration
	for _, d := range took {
		total += d
	}
	logf(t, "%d creates through node 1, mean %v each", len(took), (total / time.Duration(len(took))).Round(time.Microsecond))
}

// TestTopicCreatedWhileABrokerHangsAnswersSuccessAtTimeout: a broker that
// is alive in the metadata but answers nothing (SIGSTOP, with a session
// timeout long enough that it is not fenced) cannot report the new topic,
// so CreateTopics waits for it until its timeout_ms, then answers success:
// the topic is committed, and a committed change is never reported as
// failed. Once resumed, the broker lists the topic too.
func TestTopicCreatedWhileABrokerHangsAnswersSuccessAtTimeout(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat not installed")
	}
	c := StartCluster(t, WithOverride("broker.session.timeout.ms", "60000"))
	q, err := c.quorum()
	if err != nil {
		t.Fatalf("DescribeQuorum: %v", err)
	}
	var followers []int32
	for _, id := range []int32{1, 2, 3} {
		if id != q.Leader {
			followers = append(followers, id)
		}
	}
	hung, via := followers[0], followers[1]
	c.Node(hung).Pause()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			c.Node(hung).Resume()
		}
	})

	const timeout = 1500 * time.Millisecond
	start := time.Now()
	createThrough(t, c.ClientOf([]int32{via}, kgo.RequestRetries(0)), "while-hung", 3, 2, int32(timeout/time.Millisecond))
	took := time.Since(start)
	logf(t, "CreateTopics through node %d with node %d hung answered success after %v", via, hung, took.Round(time.Millisecond))
	if took < timeout {
		t.Errorf("CreateTopics answered after %v, before its timeout_ms of %v, although node %d cannot have applied it", took, timeout, hung)
	}
	for id, md := range kcatMetadataAll(t, c, []int32{q.Leader, via}, "while-hung") {
		if err := md.hasPartitions("while-hung", 3); err != nil {
			t.Errorf("node %d after CreateTopics returned: %v", id, err)
		}
	}

	c.Node(hung).Resume()
	resumed = true
	waitFor(t, 20*time.Second, fmt.Sprintf("node %d listing the topic after it resumed", hung), func() (bool, string) {
		md, err := kcatMetadataFrom(c.Node(hung).Addr(), "while-hung")
		if err != nil {
			return false, err.Error()
		}
		if err := md.hasPartitions("while-hung", 3); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// createThrough sends CreateTopics to the client's one seed broker (not to
// the controller kgo would pick) and fails the test unless it succeeded.
func createThrough(t *testing.T, cl *kgo.Client, topic string, partitions int32, rf int16, timeoutMillis int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = timeoutMillis
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, err := seedRequest(cl, req)
	if err != nil {
		t.Fatalf("CreateTopics %s: %v", topic, err)
	}
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics %s: %+v", topic, r.Topics)
	}
}

func createPartitionsThrough(t *testing.T, cl *kgo.Client, topic string, count int32) {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	resp, err := seedRequest(cl, req)
	if err != nil {
		t.Fatalf("CreatePartitions %s: %v", topic, err)
	}
	r := resp.(*kmsg.CreatePartitionsResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreatePartitions %s: %+v", topic, r.Topics)
	}
}

func deleteThrough(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := seedRequest(cl, req)
	if err != nil {
		t.Fatalf("DeleteTopics %s: %v", topic, err)
	}
	r := resp.(*kmsg.DeleteTopicsResponse)
	if len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics %s: %+v", topic, r.Topics)
	}
}

// seedRequest sends req to cl's first seed broker itself.
func seedRequest(cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// kcatMetadata is the part of `kcat -L -J` output the test reads.
type kcatMetadata struct {
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32  `json:"partition"`
			Leader    int32  `json:"leader"`
			Error     string `json:"error"`
		} `json:"partitions"`
	} `json:"topics"`
	raw string
}

// hasPartitions checks that topic is listed with partitions 0..n-1, each
// with a leader and no error.
func (m kcatMetadata) hasPartitions(topic string, n int) error {
	for _, t := range m.Topics {
		if t.Topic != topic {
			continue
		}
		if t.Error != "" {
			return fmt.Errorf("topic %s listed with error %q: %s", topic, t.Error, m.raw)
		}
		if len(t.Partitions) != n {
			return fmt.Errorf("topic %s has %d partitions, want %d: %s", topic, len(t.Partitions), n, m.raw)
		}
		seen := make([]bool, n)
		for _, p := range t.Partitions {
			if p.Partition < 0 || int(p.Partition) >= n || p.Leader < 0 || p.Error != "" {
				return fmt.Errorf("topic %s partition %d: leader %d error %q: %s", topic, p.Partition, p.Leader, p.Error, m.raw)
			}
			seen[p.Partition] = true
		}
		for p, ok := range seen {
			if !ok {
				return fmt.Errorf("topic %s partition %d missing: %s", topic, p, m.raw)
			}
		}
		return nil
	}
	return fmt.Errorf("topic %s not listed: %s", topic, m.raw)
}

// lacks checks that topic is not listed, or only with an error.
func (m kcatMetadata) lacks(topic string) error {
	for _, t := range m.Topics {
		if t.Topic == topic && t.Error == "" {
			return fmt.Errorf("deleted topic %s still listed: %s", topic, m.raw)
		}
	}
	return nil
}

// kcatMetadataAll runs `kcat -L -J -t topic` against each node at once.
func kcatMetadataAll(t *testing.T, c *Cluster, ids []int32, topic string) map[int32]kcatMetadata {
	t.Helper()
	out := make(map[int32]kcatMetadata, len(ids))
	errs := make(map[int32]error, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			md, err := kcatMetadataFrom(c.Node(id).Addr(), topic)
			mu.Lock()
			defer mu.Unlock()
			out[id], errs[id] = md, err
		}()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			t.Fatalf("kcat -L against node %d: %v", id, err)
		}
	}
	return out
}

// kcatMetadataFrom asks one broker for topic's metadata with kcat.
// librdkafka learns the other brokers from the first answer but asks the
// bootstrap broker first, so the answer is that node's view.
func kcatMetadataFrom(addr, topic string) (kcatMetadata, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", "-L", "-J", "-b", addr, "-t", topic, "-m", "10")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return kcatMetadata{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	md := kcatMetadata{raw: strings.TrimSpace(stdout.String())}
	if err := json.Unmarshal(stdout.Bytes(), &md); err != nil {
		return kcatMetadata{}, fmt.Errorf("parsing kcat -J output: %v: %s", err, md.raw)
	}
	return md, nil
}
