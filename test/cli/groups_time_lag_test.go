package cli_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupsDescribeTimeLag checks `groups describe` shows the time lag:
// the age of the record at the committed offset. Record 3 is stamped 90 s
// ago and the group committed 3, so the group is 90 s behind.
func TestGroupsDescribeTimeLag(t *testing.T) {
	b := groupBroker(t)
	ok(t, b, "", "topics", "create", "aged", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic("aged"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stamp := time.Now().Add(-90 * time.Second).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for i := range 6 {
		recs = append(recs, &kgo.Record{Value: []byte{'a' + byte(i)}, Timestamp: stamp.Add(time.Duration(i-3) * time.Second)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "aged", Partition: 0, At: 3, LeaderEpoch: -1})
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "aged-group", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	type desc struct {
		Offsets []struct {
			Lag            int64   `json:"lag"`
			TimeLagSeconds float64 `json:"time_lag_seconds"`
		} `json:"offsets"`
	}
	d := decode[desc](t, ok(t, b, "", "groups", "describe", "aged-group", "--output", "json"))
	age := time.Since(stamp).Seconds()
	if len(d.Offsets) != 1 || d.Offsets[0].Lag != 3 || math.Abs(d.Offsets[0].TimeLagSeconds-age) > 2 {
		t.Fatalf("describe: %+v, want lag 3 and a time lag of %.0f s", d, age)
	}
	if table := ok(t, b, "", "groups", "describe", "aged-group"); !strings.Contains(table, "TIME-LAG") || !strings.Contains(table, "1m3") {
		t.Errorf("describe table has no time lag of about 1m30s: %q", table)
	}
}
