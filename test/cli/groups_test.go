package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type groupDesc struct {
	Group   string `json:"group"`
	State   string `json:"state"`
	Offsets []struct {
		Topic         string `json:"topic"`
		Partition     int32  `json:"partition"`
		CurrentOffset int64  `json:"current_offset"`
		LogEndOffset  int64  `json:"log_end_offset"`
		Lag           int64  `json:"lag"`
	} `json:"offsets"`
}

func TestGroupsLagAndReset(t *testing.T) {
	b := groupBroker(t)
	ok(t, b, "", "topics", "create", "events", "--partitions", "1")
	var in strings.Builder
	for i := range 10 {
		in.WriteString("v" + string(rune('0'+i)) + "\n")
	}
	ok(t, b, in.String(), "produce", "events")

	// Consume 4 in a group: exactly the printed records are committed.
	if out := ok(t, b, "", "consume", "events", "--group", "g1", "--from-beginning", "--max-messages", "4", "--timeout", "10s"); out != "v0\nv1\nv2\nv3\n" {
		t.Fatalf("group consume printed %q", out)
	}
	d := decode[groupDesc](t, ok(t, b, "", "groups", "describe", "g1", "--output", "json"))
	if len(d.Offsets) != 1 || d.Offsets[0].CurrentOffset != 4 || d.Offsets[0].LogEndOffset != 10 || d.Offsets[0].Lag != 6 {
		t.Fatalf("describe: %+v", d)
	}
	if table := ok(t, b, "", "groups", "describe", "g1"); !strings.Contains(table, "LAG") || !strings.Contains(table, "events") {
		t.Errorf("describe table: %q", table)
	}
	if list := ok(t, b, "", "groups", "list"); !strings.Contains(list, "g1") {
		t.Errorf("list: %q", list)
	}

	// Dry run (the default) prints the plan and changes nothing.
	plan := ok(t, b, "", "groups", "reset-offsets", "g1", "--topic", "events", "--to-offset", "2")
	if !strings.Contains(plan, "NEW-OFFSET") || !strings.Contains(plan, "2") {
		t.Errorf("plan: %q", plan)
	}
	if d := decode[groupDesc](t, ok(t, b, "", "groups", "describe", "g1", "--output", "json")); d.Offsets[0].CurrentOffset != 4 {
		t.Fatalf("dry run moved the offset: %+v", d)
	}
	ok(t, b, "", "groups", "reset-offsets", "g1", "--topic", "events:0", "--to-offset", "2", "--execute")
	if out := ok(t, b, "", "consume", "events", "--group", "g1", "--max-messages", "1", "--timeout", "10s"); out != "v2\n" {
		t.Errorf("after reset to 2, next record %q", out)
	}
	// --shift-by moves relative to the committed offset (now 3), clamped.
	ok(t, b, "", "groups", "reset-offsets", "g1", "--topic", "events", "--shift-by", "-100", "--execute")
	if d := decode[groupDesc](t, ok(t, b, "", "groups", "describe", "g1", "--output", "json")); d.Offsets[0].CurrentOffset != 0 {
		t.Errorf("shift-by -100 not clamped to 0: %+v", d)
	}
	ok(t, b, "", "groups", "reset-offsets", "g1", "--all-topics", "--to-latest", "--execute")
	if d := decode[groupDesc](t, ok(t, b, "", "groups", "describe", "g1", "--output", "json")); d.Offsets[0].Lag != 0 {
		t.Errorf("to-latest leaves lag: %+v", d)
	}

	if stderr := fails(t, b, "", "groups", "describe", "no-such-group"); !strings.Contains(stderr, "does not exist") {
		t.Errorf("unknown group: %q", stderr)
	}
	ok(t, b, "", "groups", "delete", "g1")
}

func TestGroupsResetRefusedWhileActive(t *testing.T) {
	b := groupBroker(t)
	ok(t, b, "", "topics", "create", "busy", "--partitions", "1")
	ok(t, b, "a\nb\n", "produce", "busy")

	// A live member keeps the group non-empty.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("busy"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for got := 0; got < 2; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("consumer did not join and fetch within 20s")
		}
		got += fs.NumRecords()
	}
	stderr := fails(t, b, "", "groups", "reset-offsets", "live", "--topic", "busy", "--to-earliest", "--execute")
	if !strings.Contains(stderr, "inactive") || !strings.Contains(stderr, "Stable") {
		t.Errorf("reset on active group: %q", stderr)
	}
	if stderr := fails(t, b, "", "groups", "delete", "live"); !strings.Contains(stderr, "not empty") {
		t.Errorf("delete active group: %q", stderr)
	}
}
