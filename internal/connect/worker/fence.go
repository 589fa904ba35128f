package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FenceProducers fences transactional ids as Kafka's Admin.fenceProducers
// does: an InitProducerId for each id bumps its producer epoch, so that a
// zombie task still holding the id can neither produce nor commit again,
// and the transaction it left open is aborted. The coordinator answers
// CONCURRENT_TRANSACTIONS while it aborts; that, and the other retriable
// errors, are retried until ctx ends.
func FenceProducers(ctx context.Context, cl *kgo.Client, ids []string) error {
	for _, id := range ids {
		if err := fenceOne(ctx, cl, id); err != nil {
			return fmt.Errorf("fencing the producers of transactional id %s: %w", id, err)
		}
	}
	return nil
}

func fenceOne(ctx context.Context, cl *kgo.Client, id string) error {
	backoff := 50 * time.Millisecond
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = int32(fenceTransactionTimeout / time.Millisecond)
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil {
			return nil
		}
		if !kerr.IsRetriable(err) && !errors.Is(err, kerr.ConcurrentTransactions) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// fenceTransactionTimeout is the transaction timeout an InitProducerId
// that fences carries; the task that takes the id next sets its own.
const fenceTransactionTimeout = 60 * time.Second

// TaskTransactionalIDs are the transactional ids of tasks 0..n-1.
func (c *Config) TaskTransactionalIDs(connector string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = c.TransactionalID(connector, i)
	}
	return ids
}
