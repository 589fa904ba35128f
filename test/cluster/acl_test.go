package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLsReplicateAndSurviveRestart: ACLs are metadata records, so a
// binding created through one node is enforced by every node, after a
// node restarts (rebuilt from its own copy of the metadata log), and after
// the whole cluster restarts. Every connection is PLAINTEXT, so every
// client is User:ANONYMOUS; allow.everyone.if.no.acl.found keeps the
// cluster (replication, the admin calls) open, and a DENY on one topic is
// what every node must enforce.
func TestACLsReplicateAndSurviveRestart(t *testing.T) {
	c := StartCluster(t,
		WithOverride("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithOverride("allow.everyone.if.no.acl.found", "true"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := c.AdminOf(1)
	for _, topic := range []string{"open", "secret"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("secret").Deny("User:ANONYMOUS").DenyHosts("*").
		Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("creating the ACL through node 1: %v %+v", err, res)
	}

	enforcedEverywhere := func(when string) {
		t.Helper()
		for _, n := range c.Nodes() {
			cl := c.ClientOf([]int32{n.ID}, kgo.RequestRetries(0))
			waitFor(t, 30*time.Second, fmt.Sprintf("%s: node %d enforces the DENY", when, n.ID), func() (bool, string) {
				err := enforcedBy(ctx, cl.Broker(int(n.ID)))
				return err == nil, fmt.Sprint(err)
			})
		}
	}
	enforcedEverywhere("after CreateAcls through node 1")
	// Replication is unaffected: acks=all produces to the open topic.
	produceAll(ctx, t, c, "open", "before restarts")

	c.Node(2).Kill()
	c.Node(2).Restart()
	enforcedEverywhere("after node 2 restarted")

	for _, n := range c.Nodes() {
		n.Kill()
	}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, n := range c.Nodes() {
		if err := n.exec(); err != nil {
			t.Fatalf("restarting node %d: %v", n.ID, err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = n.waitReady() }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("cluster did not restart: %v", err)
	}
	c.WaitFormed()
	enforcedEverywhere("after the whole cluster restarted")
	produceAll(ctx, t, c, "open", "after restarts")

	// DeleteAcls through node 3 lifts it everywhere.
	del, err := c.AdminOf(3).DeleteACLs(ctx, kadm.NewACLs().Topics("secret").Deny().DenyHosts().Allow().AllowHosts().
		Operations().ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(del) == 0 || del[0].Err != nil {
		t.Fatalf("deleting the ACL through node 3: %v %+v", err, del)
	}
	for _, n := range c.Nodes() {
		cl := c.ClientOf([]int32{n.ID}, kgo.RequestRetries(0))
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d lists secret again", n.ID), func() (bool, string) {
			names, err := metadataTopics(ctx, cl.Broker(int(n.ID)))
			return err == nil && names["secret"], fmt.Sprint(names, err)
		})
	}
}

// enforcedBy checks that the broker hides "secret" from Metadata, answers
// it TOPIC_AUTHORIZATION_FAILED when named, and still lists "open".
func enforcedBy(ctx context.Context, br *kgo.Broker) error {
	names, err := metadataTopics(ctx, br)
	if err != nil {
		return err
	}
	if names["secret"] || !names["open"] {
		return fmt.Errorf("metadata lists %v", names)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("secret")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return err
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		return fmt.Errorf("metadata for secret: %v", kerr.ErrorForCode(code))
	}
	return nil
}

func metadataTopics(ctx context.Context, br *kgo.Broker) (map[string]bool, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			out[*t.Topic] = true
		}
	}
	return out, nil
}

// produceAll produces one acks=all record to topic, retrying until the
// cluster serves it (a restarted cluster elects leaders first).
func produceAll(ctx context.Context, t *testing.T, c *Cluster, topic, what string) {
	t.Helper()
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20))
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte(what)}).FirstErr(); err != nil {
		t.Fatalf("producing to %s %s: %v", topic, what, err)
	}
}
