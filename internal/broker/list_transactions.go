package broker

// ListTransactions (key 66), v0-v2 (KIP-664).
//
// Lists the transactional ids this broker coordinates; clients ask every
// broker. Filters: states (names Kafka does not know are echoed back in
// UnknownStateFilters and match nothing), producer ids, v1 a minimum
// duration since the transaction started (KIP-994), v2 a regular
// expression the whole id must match (KIP-1152; an invalid one is
// INVALID_REGULAR_EXPRESSION). While a __transaction_state partition led
// here is still loading the answer is COORDINATOR_LOAD_IN_PROGRESS.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/txn"
)

func init() { register(kmsg.ListTransactions, 0, 2, (*Broker).handleListTransactions) }

func (b *Broker) handleListTransactions(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	if b.txns == nil {
		return resp, nil // no coordinator here: nothing to list
	}
	f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if r.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, name := range req.StateFilters {
		s, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, s)
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		return resp, nil // only unknown states: nothing matches
	}
	if r.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.IDPattern = re.MatchString
	}
	list, loading := b.txns.List(f)
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	for _, d := range list {
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
