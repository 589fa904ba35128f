package txn

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// State is a transaction's state, numbered as Kafka's TransactionState
// (the value persisted in TransactionLogValue.TransactionStatus).
type State int8

// Kafka's transaction states.
const (
	StateEmpty             State = 0
	StateOngoing           State = 1
	StatePrepareCommit     State = 2
	StatePrepareAbort      State = 3
	StateCompleteCommit    State = 4
	StateCompleteAbort     State = 5
	StateDead              State = 6
	StatePrepareEpochFence State = 7
)

var stateNames = map[State]string{
	StateEmpty:             "Empty",
	StateOngoing:           "Ongoing",
	StatePrepareCommit:     "PrepareCommit",
	StatePrepareAbort:      "PrepareAbort",
	StateCompleteCommit:    "CompleteCommit",
	StateCompleteAbort:     "CompleteAbort",
	StateDead:              "Dead",
	StatePrepareEpochFence: "PrepareEpochFence",
}

// String is the state's name as DescribeTransactions and ListTransactions
// report it.
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// ParseState reads a state name (case-insensitive, as Kafka's
// TransactionState.fromName).
func ParseState(name string) (State, bool) {
	for s, n := range stateNames {
		if strings.EqualFold(n, name) {
			return s, true
		}
	}
	return 0, false
}

// validPrevious is Kafka's TransactionState.validPreviousStates, with
// KIP-890 part 2's abort of an empty transaction (TV2 bumps the epoch on
// every EndTxn, also one that aborts nothing).
var validPrevious = map[State][]State{
	StateEmpty:             {StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StateOngoing:           {StateOngoing, StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StatePrepareCommit:     {StateOngoing},
	StatePrepareAbort:      {StateOngoing, StatePrepareEpochFence, StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StateCompleteCommit:    {StatePrepareCommit},
	StateCompleteAbort:     {StatePrepareAbort},
	StateDead:              {StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StatePrepareEpochFence: {StateOngoing},
}

// CanTransition reports whether from → to is a transition of the state
// machine.
func CanTransition(from, to State) bool { return slices.Contains(validPrevious[to], from) }

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Metadata is one transactional id's state, as persisted in
// __transaction_state plus what Kafka keeps only in memory
// (LastProducerEpoch).
type Metadata struct {
	TransactionalID string
	ProducerID      int64
	// PrevProducerID is the producer id before the last rotation (an
	// epoch overflow), so a retried EndTxn of the old id is recognised
	// (KIP-890); -1 when none.
	PrevProducerID int64
	// NextProducerID is the id a TV2 EndTxn that overflowed the epoch
	// hands out once its markers are written; -1 when none.
	NextProducerID int64
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last bump by the client's
	// own InitProducerId or (TV2) EndTxn, so its retry is answered
	// instead of fenced; -1 when none. Not persisted, as in Kafka.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	Partitions        map[TopicPartition]struct{}
	// StartTimestamp is when the ongoing transaction began (Unix ms), -1
	// when none is ongoing.
	StartTimestamp      int64
	LastUpdateTimestamp int64
	// ClientTransactionVersion is 2 when the client runs KIP-890 part 2
	// (EndTxn v5+), else 0.
	ClientTransactionVersion int16
}

// SortedPartitions returns the transaction's partitions, sorted.
func (m *Metadata) SortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(m.Partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
	return out
}

func (m Metadata) clone() Metadata {
	m.Partitions = maps.Clone(m.Partitions)
	if m.Partitions == nil {
		m.Partitions = map[TopicPartition]struct{}{}
	}
	return m
}

// epochExhausted is Kafka's isProducerEpochExhausted: the epoch can be
// bumped no more (one value is kept for fencing), so a new producer id is
// due.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }
