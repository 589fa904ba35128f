// Command orderspayments is the stream-stream join example of the streams
// package. Orders {"order_id","customer","amount"} on orders and payments
// {"order_id","amount"} on payments, both keyed by order ID, are joined
// when a payment arrives within --window of its order (either way round).
// Orders with a matching payment go to orders_paid; an order with no
// payment once its window and --grace have passed goes to orders_unpaid.
// Outputs are JSON {"order","payment"}, payment null for unpaid orders.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vltava/vltava/streams"
)

// Order is an input order.
type Order struct {
	OrderID  string `json:"order_id"`
	Customer string `json:"customer"`
	Amount   int64  `json:"amount"`
}

// Payment is an input payment.
type Payment struct {
	OrderID string `json:"order_id"`
	Amount  int64  `json:"amount"`
}

// Settlement is an order with its payment (nil: unpaid).
type Settlement struct {
	Order   Order    `json:"order"`
	Payment *Payment `json:"payment"`
}

func topology(window, grace time.Duration) (*streams.Topology, error) {
	b := streams.NewBuilder()
	orders := streams.NewStream(b, "orders", streams.String(), streams.JSON[Order]())
	payments := streams.NewStream(b, "payments", streams.String(), streams.JSON[Payment]())
	settled := streams.LeftJoin(orders, payments,
		func(o Order, p *Payment) Settlement { return Settlement{Order: o, Payment: p} },
		streams.JoinWindowsOfTimeDifferenceAndGrace(window, grace),
		streams.Named("orders-payments"))
	out := settled.Split(streams.Named("settled-")).
		Branch(func(_ string, s Settlement) bool { return s.Payment != nil }, "paid").
		DefaultBranch("unpaid")
	out["settled-paid"].To("orders_paid")
	out["settled-unpaid"].To("orders_unpaid")
	return b.Build()
}

func main() {
	bootstrap := flag.String("bootstrap-server", "127.0.0.1:9092", "Kafka bootstrap servers")
	appID := flag.String("application-id", "orders-payments", "application.id")
	guarantee := flag.String("processing-guarantee", streams.AtLeastOnce, "processing.guarantee")
	stateDir := flag.String("state-dir", "", "state.dir (default: the temp dir)")
	window := flag.Duration("window", 10*time.Minute, "how far apart an order and its payment may be")
	grace := flag.Duration("grace", time.Minute, "how late (in event time) a record may arrive")
	commit := flag.Int("commit-interval-ms", -1, "commit.interval.ms (default: Kafka Streams')")
	flag.Parse()

	topo, err := topology(*window, *grace)
	if err != nil {
		fail(err)
	}
	props := map[string]string{"application.id": *appID, "bootstrap.servers": *bootstrap, "processing.guarantee": *guarantee}
	if *stateDir != "" {
		props["state.dir"] = *stateDir
	}
	if *commit >= 0 {
		props["commit.interval.ms"] = fmt.Sprint(*commit)
	}
	cfg, err := streams.ParseConfig(props)
	if err != nil {
		fail(err)
	}
	app, err := streams.New(topo, cfg, streams.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Start(ctx); err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "orderspayments: running")
	go func() { <-ctx.Done(); _ = app.Close() }()
	if err := app.Wait(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "orderspayments:", err)
	os.Exit(1)
}
