package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is one transactional id as DescribeTransactions and
// ListTransactions report it.
type Description struct {
	Metadata
}

// Describe returns the state of id (DescribeTransactions):
// TRANSACTIONAL_ID_NOT_FOUND if it is unknown here, or the coordinator
// errors if it is not coordinated here.
func (c *Coordinator) Describe(id string) (Description, error) {
	e, _, err := c.lockTxn(id, nil)
	if err != nil {
		return Description{}, err
	}
	if e == nil {
		return Description{}, fmt.Errorf("%w: %q", kerr.TransactionalIDNotFound, id)
	}
	defer e.mu.Unlock()
	return Description{e.meta.clone()}, nil
}

// ListFilter selects transactions for ListTransactions; zero values match
// everything.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs (ListTransactions v1, KIP-994) keeps transactions
	// whose start is at least this long ago, as Kafka compares it; -1:
	// all.
	MinDurationMs int64
	// IDPattern (v2, KIP-1152) keeps ids the pattern matches; nil: all.
	IDPattern func(string) bool
}

// List returns the loaded transactional ids that match f, sorted by id,
// and the ids of the __transaction_state partitions still loading (their
// ids are missing; Kafka answers COORDINATOR_LOAD_IN_PROGRESS then).
func (c *Coordinator) List(f ListFilter) ([]Description, bool) {
	loading := false
	c.mu.Lock()
	for _, s := range c.mu.shards {
		if !s.loaded {
			loading = true
		}
	}
	c.mu.Unlock()
	now := c.now().UnixMilli()
	var out []Description
	for _, e := range c.entries() {
		e.mu.Lock()
		m := e.meta.clone()
		e.mu.Unlock()
		if m.State == StateDead || m.ProducerEpoch < 0 {
			continue
		}
		if len(f.States) > 0 && !containsState(f.States, m.State) {
			continue
		}
		if len(f.ProducerIDs) > 0 && !containsID(f.ProducerIDs, m.ProducerID) {
			continue
		}
		if f.MinDurationMs >= 0 && now-m.StartTimestamp < f.MinDurationMs {
			continue
		}
		if f.IDPattern != nil && !f.IDPattern(m.TransactionalID) {
			continue
		}
		out = append(out, Description{m})
	}
	return out, loading
}

func containsState(ss []State, s State) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
