package compat

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
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

// TestAuthorizedOperationsFranz (KIP-430): DescribeGroups and
// DescribeCluster fill their authorized-operations fields from the ACLs of
// the principal asking, with the operations they imply: alice, over
// SASL_SSL with SCRAM, may READ one group (and so DESCRIBE it) and
// ALTER_CONFIGS and DESCRIBE the cluster (and so DESCRIBE_CONFIGS it), and
// is refused the group she has no ACL for with GROUP_AUTHORIZATION_FAILED.
func TestAuthorizedOperationsFranz(t *testing.T) {
	sb := startSecureBroker(t,
		WithOverride("authorizer.class.name", standardAuthorizer),
		WithOverride("super.users", "User:ANONYMOUS")) // the harness's PLAINTEXT admin
	ctx := testContext(t, time.Minute)
	adm := newAdmin(t, sb.Broker)
	group, other := uniqueTopic(t)+"-group", uniqueTopic(t)+"-other"
	for _, a := range []*kadm.ACLBuilder{
		kadm.NewACLs().Groups(group).Allow("User:alice").Operations(kadm.OpRead),
		kadm.NewACLs().Clusters().Allow("User:alice").Operations(kadm.OpAlterConfigs, kadm.OpDescribe),
	} {
		res, err := adm.CreateACLs(ctx, a.ResourcePatternType(kadm.ACLPatternLiteral))
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("CreateAcls: %v", err)
		}
	}
	alice := newClient(t, sb.Broker, kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
		kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha512Mechanism()))
	ops := func(os []kadm.ACLOperation) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.String())
		}
		slices.Sort(out)
		return out
	}

	eventually(t, 30*time.Second, func() error {
		described, err := kadm.NewClient(alice).DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := described[group]
		if g.Err != nil {
			return g.Err
		}
		if got, want := ops(g.AuthorizedOperations), []string{"DESCRIBE", "READ"}; !slices.Equal(got, want) {
			t.Fatalf("DescribeGroups: authorized operations %v, want %v", got, want)
		}
		return nil
	})
	// The group without an ACL: franz-go's FindCoordinator for it is
	// refused already (DESCRIBE on the group), as Kafka refuses it.
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups, req.IncludeAuthorizedOperations = []string{other}, true
	resp, err := req.RequestWith(ctx, alice)
	if err == nil && len(resp.Groups) == 1 {
		err = kerr.ErrorForCode(resp.Groups[0].ErrorCode)
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("DescribeGroups of a group without an ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dcr, err := dc.RequestWith(ctx, alice)
	if err == nil {
		err = kerr.ErrorForCode(dcr.ErrorCode)
	}
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	got := ops(kadm.DecodeACLOperations(dcr.ClusterAuthorizedOperations))
	if want := []string{"ALTER_CONFIGS", "DESCRIBE", "DESCRIBE_CONFIGS"}; !slices.Equal(got, want) {
		t.Fatalf("DescribeCluster: authorized operations %v, want %v", got, want)
	}
	// Not asked for: the field keeps Kafka's "omitted" value.
	dc.IncludeClusterAuthorizedOperations = false
	if dcr, err = dc.RequestWith(ctx, alice); err != nil || dcr.ClusterAuthorizedOperations != -2147483648 {
		t.Fatalf("DescribeCluster without authorized operations: %v, field %d", err, dcr.ClusterAuthorizedOperations)
	}
}
