package txn

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/testing/poll"
)

// TestRandomSequences drives seeded random sequences of InitProducerId,
// AddPartitionsToTxn (TV1 and TV2), VerifyOnly, EndTxn (v4 and v5), the
// timeout abort, expiry, held and released markers and coordinator
// restarts over a few transactional ids, and checks after every step:
// only Kafka's errors for these APIs come back; a transition never breaks
// the state machine (the coordinator panics if it would); a restart loads
// exactly the state that was acknowledged; and once markers flow again no
// transaction stays prepared. The seed is logged; VLTAVA_MODEL_SEED reruns
// one.
func TestRandomSequences(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VLTAVA_MODEL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	t.Logf("seed %d (VLTAVA_MODEL_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	h := newHarness(t)
	ctx := context.Background()
	ids := []string{"a", "b", "c"}
	held := map[string]ProducerIDAndEpoch{} // the producer each id's client holds
	allowed := []*kerr.Error{kerr.InvalidProducerIDMapping, kerr.ProducerFenced, kerr.ConcurrentTransactions,
		kerr.InvalidTxnState, kerr.InvalidTransactionTimeout, kerr.TransactionalIDNotFound}
	check := func(step int, what string, err error) {
		if err == nil {
			return
		}
		for _, a := range allowed {
			if errors.Is(err, a) {
				return
			}
		}
		t.Fatalf("seed %d step %d %s: unexpected error %v", seed, step, what, err)
	}
	snapshot := func() map[string]Metadata {
		out := map[string]Metadata{}
		list, _ := h.c.List(ListFilter{MinDurationMs: -1})
		for _, d := range list {
			m := d.Metadata
			m.LastProducerEpoch = -1 // kept in memory only, as Kafka
			out[d.TransactionalID] = m
		}
		return out
	}
	tps := []TopicPartition{tpA, tpB, {"c", 2}}
	for step := range 400 {
		id := ids[rng.IntN(len(ids))]
		p := held[id]
		switch op := rng.IntN(12); op {
		case 0, 1:
			got, err := h.c.InitProducerID(ctx, id, int32(1000+rng.IntN(2000)), noProducer)
			check(step, "init", err)
			if err == nil {
				held[id] = got
			}
		case 2, 3, 4:
			err := h.c.AddPartitions(id, p, []TopicPartition{tps[rng.IntN(len(tps))]}, rng.IntN(2) == 0)
			check(step, "add", err)
		case 5:
			res, err := h.c.VerifyPartitions(id, p, tps)
			check(step, "verify", err)
			for _, e := range res {
				check(step, "verify partition", e)
			}
		case 6, 7:
			tv2 := rng.IntN(2) == 0
			next, err := h.c.EndTxn(ctx, id, p, rng.IntN(3) > 0, tv2)
			check(step, "end", err)
			if err == nil && tv2 {
				held[id] = next
			}
		case 8:
			h.clock.add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			h.c.AbortTimedOut()
		case 9:
			h.leader.setHold(rng.IntN(2) == 0)
		case 10:
			if rng.IntN(4) == 0 {
				h.clock.add(2 * time.Hour)
				h.c.RemoveExpired()
			}
		case 11:
			// A restart: what was acknowledged is what loads.
			h.leader.setHold(true)
			before := snapshot()
			h.start(int32(step + 2))
			after := snapshot()
			for id, m := range before {
				// A prepared transaction with no partitions (a TV2
				// abort of nothing) needs no marker: the new
				// coordinator may have completed it already.
				if a, ok := after[id]; ok && len(m.Partitions) == 0 &&
					((m.State == StatePrepareAbort && a.State == StateCompleteAbort) ||
						(m.State == StatePrepareCommit && a.State == StateCompleteCommit)) {
					m.State, m.LastUpdateTimestamp = a.State, a.LastUpdateTimestamp
					before[id] = m
				}
				// While a transaction completes, the coordinator's
				// memory keeps only the partitions still to be marked;
				// its log keeps them all until the Complete record, so
				// the new coordinator marks them all again.
				if a, ok := after[id]; ok && a.State == m.State && (m.State == StatePrepareAbort || m.State == StatePrepareCommit) {
					for tp := range m.Partitions {
						if _, ok := a.Partitions[tp]; !ok {
							t.Fatalf("seed %d step %d: %s reloaded without partition %v still to be marked", seed, step, id, tp)
						}
					}
					m.Partitions = a.Partitions
					before[id] = m
				}
			}
			if !reflect.DeepEqual(before, after) {
				t.Fatalf("seed %d step %d: reload changed the state:\nbefore %+v\nafter  %+v", seed, step, before, after)
			}
		}
	}
	h.leader.setHold(false)
	poll.True(t, 5*time.Second, "no transaction prepared once markers flow", func() bool {
		for _, m := range snapshot() {
			if m.State == StatePrepareCommit || m.State == StatePrepareAbort {
				return false
			}
		}
		return true
	})
}
