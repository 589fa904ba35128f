package partition

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// acceptingController accepts every proposed ISR change; the test commits
// ISR changes itself, which clears what is pending.
type acceptingController struct{}

func (acceptingController) AlterPartition(context.Context, ISRChange) error { return nil }

// hwModel is what the high watermark must satisfy, tracked from the
// operations alone: for each ISR member, the offset it bounds the high
// watermark by (the larger of its last fetch in this leadership and the
// high watermark when it joined the ISR or the leadership began).
type hwModel struct {
	lastHW   int64
	bound    map[int32]int64
	isr      []int32
	leading  bool
	epochHW  int64 // the high watermark when this leadership began
	fetched  map[int32]int64
	replicas []int32
}

func (m *hwModel) isrBound() int64 {
	b := int64(1<<62 - 1)
	for _, r := range m.isr {
		if r == 1 {
			continue
		}
		b = min(b, max(m.bound[r], m.fetched[r]))
	}
	return b
}

// TestHighWatermarkModel drives a leader with random appends, follower
// fetches at random positions, ISR shrinks and expansions, DeleteRecords,
// clock moves and leader changes, and checks after each step: log start ≤
// HW ≤ LEO; the HW never moves back; it never passes an ISR member's log
// end (as the leader last learned it); and once every follower has fetched
// up to the log end, it is the log end.
func TestHighWatermarkModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run("", func(t *testing.T) { runHighWatermarkModel(t, seed) })
	}
}

func runHighWatermarkModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	f := newLeaderFixture(t, []int32{1, 2, 3})
	f.m.SetControllerClient(acceptingController{})
	m := &hwModel{bound: map[int32]int64{}, fetched: map[int32]int64{}, isr: []int32{1, 2, 3}, leading: true, replicas: []int32{1, 2, 3}}
	p := f.p()
	for step := range 300 {
		op := rng.IntN(100)
		var what string
		switch {
		case !m.leading:
			one := int32(1)
			f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &one})
			m.leading, m.epochHW = true, p.HighWatermark()
			m.fetched = map[int32]int64{}
			for _, r := range m.isr {
				m.bound[r] = m.epochHW
			}
			what = "leader again"
		case op < 30:
			n := 1 + rng.IntN(5)
			f.append(n)
			what = "append"
		case op < 65:
			r := int32(2 + rng.IntN(2))
			leo := p.LogEndOffset()
			off := leo - rng.Int64N(min(leo, 10)+1)
			f.fetch(r, off)
			m.fetched[r] = off
			what = "fetch"
		case op < 75:
			// The controller changes the ISR (a shrink or an expansion
			// the leader asked for, or one of its own).
			isr := []int32{1}
			for _, r := range []int32{2, 3} {
				if rng.IntN(2) == 0 {
					isr = append(isr, r)
				}
			}
			hw := p.HighWatermark()
			for _, r := range isr {
				if !slices.Contains(m.isr, r) {
					m.bound[r] = hw
				}
			}
			m.isr = isr
			f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, ISR: isr})
			what = "ISR change"
		case op < 82:
			f.advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			p.maybeShrinkISR()
			what = "clock and shrink check"
		case op < 88:
			hw := p.HighWatermark()
			lso := p.LogStartOffset()
			if hw > lso {
				if _, err := p.DeleteRecordsBefore(lso + rng.Int64N(hw-lso+1)); err != nil {
					t.Fatalf("seed %d step %d: DeleteRecords: %v", seed, step, err)
				}
			}
			what = "DeleteRecords"
		case op < 92:
			two := int32(2)
			f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &two})
			m.leading = false
			what = "leader moved away"
		default:
			// Every follower catches up: the HW reaches the log end.
			leo := p.LogEndOffset()
			for _, r := range []int32{2, 3} {
				f.fetch(r, leo)
				m.fetched[r] = leo
			}
			if hw := p.HighWatermark(); hw != leo {
				t.Fatalf("seed %d step %d: every replica at %d, high watermark %d", seed, step, leo, hw)
			}
			what = "all caught up"
		}
		lso, hw, leo := p.LogStartOffset(), p.HighWatermark(), p.LogEndOffset()
		switch {
		case lso > hw || hw > leo:
			t.Fatalf("seed %d step %d (%s): log start %d, high watermark %d, log end %d", seed, step, what, lso, hw, leo)
		case hw < m.lastHW:
			t.Fatalf("seed %d step %d (%s): high watermark moved back from %d to %d", seed, step, what, m.lastHW, hw)
		case m.leading && hw > m.isrBound() && hw > m.lastHW:
			t.Fatalf("seed %d step %d (%s): high watermark %d passed an ISR member (ISR %v, bounds %v, fetched %v)", seed, step, what, hw, m.isr, m.bound, m.fetched)
		}
		m.lastHW = hw
	}
}
