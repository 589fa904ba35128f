package compat

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requireTransactionCoordinator fails the test when the broker has no
// transaction coordinator: FindCoordinator for a transactional id answers
// COORDINATOR_NOT_AVAILABLE for 10 s. Any other answer (a coordinator, or
// another error, which the test then meets) lets it run.
func requireTransactionCoordinator(t *testing.T, b *Broker) {
	t.Helper()
	cl := newClient(t, b)
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey = 1, "vltava-compat-probe"
		req.CoordinatorKeys = []string{req.CoordinatorKey}
		resp, err := req.RequestWith(testContext(t, 5*time.Second), cl)
		if err == nil {
			code := resp.ErrorCode
			if len(resp.Coordinators) > 0 {
				code = resp.Coordinators[0].ErrorCode
			}
			if !errors.Is(kerr.ErrorForCode(code), kerr.CoordinatorNotAvailable) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no transaction coordinator: FindCoordinator(transaction) answered COORDINATOR_NOT_AVAILABLE for 10 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestKcatReadCommitted: a franz-go transactional producer commits,
// aborts and commits again; kcat with isolation.level=read_committed
// (librdkafka) reads only the committed records, in order, while the
// default read_uncommitted reads the aborted ones too.
func TestKcatReadCommitted(t *testing.T) {
	t.Parallel()
	requireTool(t, "kcat")
	b := StartBroker(t)
	requireTransactionCoordinator(t, b)
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, b), topic, 1, nil)

	cl := newClient(t, b, kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic))
	var committed, all []string
	for txn, commit := range []bool{true, false, true} {
		ctx := testContext(t, 30*time.Second)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			v := fmt.Sprintf("txn%d-%d", txn, i)
			all = append(all, v)
			if commit {
				committed = append(committed, v)
			}
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("produce in transaction %d: %v", txn, err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("ending transaction %d (commit %v): %v", txn, commit, err)
		}
	}

	read := func(isolation string) []string {
		out := runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q",
			"-X", "isolation.level="+isolation, "-f", `%s\n`)
		return strings.Fields(out)
	}
	if got := read("read_committed"); strings.Join(got, " ") != strings.Join(committed, " ") {
		t.Fatalf("read_committed read %q, want %q", got, committed)
	}
	if got := read("read_uncommitted"); strings.Join(got, " ") != strings.Join(all, " ") {
		t.Fatalf("read_uncommitted read %q, want %q", got, all)
	}
}
