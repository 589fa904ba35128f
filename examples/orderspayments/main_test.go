package main

import (
	"testing"
	"time"

	"github.com/vltava/vltava/streams"
)

func TestOrdersPaymentsTopology(t *testing.T) {
	const window, grace = 10 * time.Second, time.Second
	topo, err := topology(window, grace)
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.TestDriverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	orders := streams.CreateInputTopic(d, "orders", streams.String(), streams.JSON[Order]())
	payments := streams.CreateInputTopic(d, "payments", streams.String(), streams.JSON[Payment]())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(orders.PipeInput("o1", Order{"o1", "ann", 100}, 1_000))
	must(payments.PipeInput("o1", Payment{"o1", 100}, 5_000))   // within 10 s: paid
	must(orders.PipeInput("o2", Order{"o2", "bob", 50}, 2_000)) // never paid
	must(payments.PipeInput("o3", Payment{"o3", 70}, 3_000))    // payment first
	must(orders.PipeInput("o3", Order{"o3", "cyd", 70}, 12_000))
	must(orders.PipeInput("o4", Order{"o4", "dan", 10}, 30_000)) // advances stream time past o2's window + grace

	paid, err := streams.CreateOutputTopic(d, "orders_paid", streams.String(), streams.JSON[Settlement]()).ReadRecordsToList()
	must(err)
	var ids []string
	for _, r := range paid {
		if r.Value.Payment == nil || r.Value.Payment.Amount != r.Value.Order.Amount {
			t.Errorf("orders_paid %s: %+v", r.Key, r.Value)
		}
		ids = append(ids, r.Key)
	}
	if len(ids) != 2 || ids[0] != "o1" || ids[1] != "o3" {
		t.Errorf("orders_paid keys %v, want [o1 o3]", ids)
	}
	unpaid, err := streams.CreateOutputTopic(d, "orders_unpaid", streams.String(), streams.JSON[Settlement]()).ReadRecordsToList()
	must(err)
	if len(unpaid) != 1 || unpaid[0].Key != "o2" || unpaid[0].Value.Payment != nil {
		t.Errorf("orders_unpaid %+v, want o2 alone with no payment", unpaid)
	}
}
