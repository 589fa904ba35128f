package streamstest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestOrdersPaymentsExample runs examples/orderspayments against a broker
// while orders and payments arrive: orders paid within the join window
// land in orders_paid with their payment, the others in orders_unpaid
// once stream time has passed their window and grace.
func TestOrdersPaymentsExample(t *testing.T) {
	addr := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	// One partition each: stream time advances for every order alike.
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "orders", "payments", "orders_paid", "orders_unpaid"); err != nil {
		t.Fatal(err)
	}
	// The application runs while the events arrive in event-time order,
	// as they would live.
	start(t, "orderspayments", build(t, "./examples/orderspayments"),
		"--bootstrap-server", addr, "--window", "10s", "--grace", "5s", "--state-dir", t.TempDir(), "--commit-interval-ms", "100")

	const orders = 300
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	wantPaid, wantUnpaid := map[string]bool{}, map[string]bool{}
	var rs []*kgo.Record
	for i := 0; i < orders; i++ {
		id := fmt.Sprintf("o%03d", i)
		at := base.Add(time.Duration(i) * time.Second)
		o, _ := json.Marshal(map[string]any{"order_id": id, "customer": fmt.Sprintf("c%d", i%7), "amount": 10 + i})
		rs = append(rs, &kgo.Record{Topic: "orders", Key: []byte(id), Value: o, Timestamp: at})
		if i%3 == 0 {
			wantUnpaid[id] = true // never paid
			continue
		}
		delay := 5 * time.Second // paid in time
		if i%3 == 2 {
			delay = 30 * time.Second // paid too late: unpaid, and the payment joins nothing
			wantUnpaid[id] = true
		} else {
			wantPaid[id] = true
		}
		p, _ := json.Marshal(map[string]any{"order_id": id, "amount": 10 + i})
		rs = append(rs, &kgo.Record{Topic: "payments", Key: []byte(id), Value: p, Timestamp: at.Add(delay)})
	}
	// A last order far ahead closes every earlier window.
	last, _ := json.Marshal(map[string]any{"order_id": "end", "customer": "x", "amount": 1})
	rs = append(rs, &kgo.Record{Topic: "orders", Key: []byte("end"), Value: last, Timestamp: base.Add(time.Hour)})
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Timestamp.Before(rs[j].Timestamp) })
	for len(rs) > 0 {
		n := 1
		for n < len(rs) && rs[n].Timestamp.Equal(rs[0].Timestamp) {
			n++
		}
		if err := cl.ProduceSync(ctx, rs[:n]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		rs = rs[n:]
	}
	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("orders_paid", "orders_unpaid"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	gotPaid, gotUnpaid := map[string]int{}, map[string]int{}
	bad := 0
	poll.Until(t, 2*time.Minute, "every order settled", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := out.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			var s struct {
				Order struct {
					OrderID string `json:"order_id"`
					Amount  int64  `json:"amount"`
				} `json:"order"`
				Payment *struct {
					Amount int64 `json:"amount"`
				} `json:"payment"`
			}
			if json.Unmarshal(r.Value, &s) != nil || s.Order.OrderID != string(r.Key) {
				bad++
				return
			}
			if r.Topic == "orders_paid" {
				if s.Payment == nil || s.Payment.Amount != s.Order.Amount {
					bad++
				}
				gotPaid[string(r.Key)]++
			} else {
				if s.Payment != nil {
					bad++
				}
				gotUnpaid[string(r.Key)]++
			}
		})
		if len(gotPaid) < len(wantPaid) || len(gotUnpaid) < len(wantUnpaid) {
			return fmt.Errorf("paid %d/%d, unpaid %d/%d", len(gotPaid), len(wantPaid), len(gotUnpaid), len(wantUnpaid))
		}
		return nil
	})
	for id, n := range gotPaid {
		if !wantPaid[id] || n != 1 {
			t.Errorf("orders_paid %s: %d records, want paid=%v once", id, n, wantPaid[id])
		}
	}
	for id, n := range gotUnpaid {
		if !wantUnpaid[id] || n != 1 {
			t.Errorf("orders_unpaid %s: %d records, want unpaid=%v once", id, n, wantUnpaid[id])
		}
	}
	if bad != 0 {
		t.Errorf("%d malformed or mismatched settlements", bad)
	}
}
