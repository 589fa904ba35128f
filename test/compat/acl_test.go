package compat

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// TestACLsKafkaPython: kafka-python's admin client creates, lists and
// deletes an ACL (CreateAcls, DescribeAcls, DeleteAcls at its old versions)
// and its producer is refused TOPIC_AUTHORIZATION_FAILED while the DENY
// stands.
func TestACLsKafkaPython(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake serves no ACLs")
	requirePythonModule(t, "kafka", "python3-kafka")
	b := StartBroker(t, WithOverride("authorizer.class.name", standardAuthorizer),
		WithOverride("allow.everyone.if.no.acl.found", "true"))
	adm := newAdmin(t, b)
	open, secret := uniqueTopic(t)+"-open", uniqueTopic(t)+"-secret"
	createTopic(t, adm, open, 1, nil)
	createTopic(t, adm, secret, 1, nil)

	var res struct {
		CreateFailed      []string   `json:"create_failed"`
		Described         [][]string `json:"described"`
		Open              string     `json:"open"`
		Secret            string     `json:"secret"`
		Deleted           int        `json:"deleted"`
		SecretAfterDelete string     `json:"secret_after_delete"`
	}
	runPythonScript(t, 2*time.Minute, &res, "kafka_python_acls.py", b.Addr(), open, secret)
	if len(res.CreateFailed) != 0 {
		t.Fatalf("create_acls failed: %v", res.CreateFailed)
	}
	if len(res.Described) != 1 || !slices.Equal(res.Described[0], []string{"User:ANONYMOUS", "*", "ALL", "DENY"}) {
		t.Fatalf("describe_acls: %v", res.Described)
	}
	if res.Open != "ok" || res.Secret != "TopicAuthorizationFailedError" {
		t.Fatalf("produce: open %s, secret %s", res.Open, res.Secret)
	}
	if res.Deleted != 1 || res.SecretAfterDelete != "ok" {
		t.Fatalf("delete_acls removed %d; produce afterwards: %s", res.Deleted, res.SecretAfterDelete)
	}
}

// TestACLsKcat: librdkafka (kcat) sees only the topics it may describe and
// is refused producing to a topic it may not write.
func TestACLsKcat(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake serves no ACLs")
	bin := requireTool(t, "kcat")
	b := StartBroker(t, WithOverride("authorizer.class.name", standardAuthorizer),
		WithOverride("allow.everyone.if.no.acl.found", "true"))
	adm := newAdmin(t, b)
	open, hidden, readOnly := uniqueTopic(t)+"-open", uniqueTopic(t)+"-hidden", uniqueTopic(t)+"-ro"
	for _, topic := range []string{open, hidden, readOnly} {
		createTopic(t, adm, topic, 1, nil)
	}
	runVltavaACLs(t, b, "--add", "--deny-principal", "User:ANONYMOUS", "--operation", "All", "--topic", hidden)
	runVltavaACLs(t, b, "--add", "--allow-principal", "User:ANONYMOUS", "--operation", "Read", "--topic", readOnly)

	list := runKcat(t, "", "-L", "-b", b.Addr())
	if !strings.Contains(list, `topic "`+open+`"`) || !strings.Contains(list, `topic "`+readOnly+`"`) || strings.Contains(list, hidden) {
		t.Fatalf("kcat -L lists:\n%s", list)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-P", "-b", b.Addr(), "-t", readOnly, "-X", "message.timeout.ms=5000")
	cmd.Stdin = strings.NewReader("refused\n")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "Topic authorization failed") {
		t.Fatalf("kcat -P to a read-only topic:\n%s", out)
	}
	runKcat(t, "allowed\n", "-P", "-b", b.Addr(), "-t", open)
	if got := runKcat(t, "", "-C", "-b", b.Addr(), "-t", open, "-o", "beginning", "-e", "-q"); got != "allowed\n" {
		t.Fatalf("consumed %q", got)
	}
}

// runVltavaACLs runs the broker binary's `acls` command against b.
func runVltavaACLs(t *testing.T, b *Broker, args ...string) {
	t.Helper()
	bin, err := brokerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, append([]string{"acls", "--bootstrap-server", b.Addr()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("vltava acls %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
