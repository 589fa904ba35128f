package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
)

// busyCoordinator answers the first busy calls with CONCURRENT_TRANSACTIONS
// (the previous transaction completing), then accepts.
type busyCoordinator struct {
	busy, calls int
}

func (c *busyCoordinator) VerifyTransaction(context.Context, *metadata.Image, TxnPartition) error {
	c.calls++
	if c.calls <= c.busy {
		return fmt.Errorf("%w: completing", kerr.ConcurrentTransactions)
	}
	return nil
}

func (c *busyCoordinator) Close() {}

// TestAddPartitionRetrySettings: a KIP-890 part 2 add refused with
// CONCURRENT_TRANSACTIONS is asked again every
// add.partitions.to.txn.retry.backoff.ms for up to
// add.partitions.to.txn.retry.backoff.max.ms (0: not at all); a
// verification (verify_only) is never retried.
func TestAddPartitionRetrySettings(t *testing.T) {
	for _, tc := range []struct {
		name           string
		backoff, max   string
		add            bool
		busy           int
		wantCalls      int
		wantConcurrent bool
	}{
		{"retried until accepted", "1", "10000", true, 3, 4, false},
		{"no retry with max 0", "1", "0", true, 3, 1, true},
		{"given up at max", "40", "100", true, 100, -1, true},
		{"verification not retried", "1", "10000", false, 3, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := config.ParseBroker(map[string]string{"log.dirs": t.TempDir(),
				"add.partitions.to.txn.retry.backoff.ms": tc.backoff, "add.partitions.to.txn.retry.backoff.max.ms": tc.max})
			if err != nil {
				t.Fatal(err)
			}
			co := &busyCoordinator{busy: tc.busy}
			b := &Broker{cfg: cfg, txnVerifier: co}
			err = b.verifyTransaction(context.Background(), metadata.EmptyImage(), TxnPartition{TransactionalID: "t", Add: tc.add})
			if got := errors.Is(err, kerr.ConcurrentTransactions); got != tc.wantConcurrent || (!got && err != nil) {
				t.Fatalf("err %v, want CONCURRENT_TRANSACTIONS %v", err, tc.wantConcurrent)
			}
			if tc.wantCalls < 0 {
				// Given up: asked again, but not until accepted.
				if co.calls < 2 || co.calls >= tc.busy {
					t.Errorf("%d calls to the coordinator, want a retry that gave up", co.calls)
				}
			} else if co.calls != tc.wantCalls {
				t.Errorf("%d calls to the coordinator, want %d", co.calls, tc.wantCalls)
			}
		})
	}
}
