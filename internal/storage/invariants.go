package storage

import "fmt"

// Invariants of a log, asserted where the offsets move (a violation is a
// bug in this package or its caller, never client input, so it panics with
// what broke rather than being clamped away):
//
//   - log start offset ≤ high watermark ≤ log end offset;
//   - the log end offset only grows, except by truncation;
//   - on a leader the high watermark never moves back (AdvanceHighWatermark);
//   - the leader-epoch cache increases in epoch and start offset.
//
// The checks here are cheap (a few atomic loads). Heavier ones, built with
// -tags invariants (the unit tier runs with it; invariants_heavy.go), walk
// the segment list on every append and the batches of every region read.

// assertOffsetsLocked checks log start ≤ HW ≤ LEO; the append lock is
// held, so no mutation races the loads.
func (l *Log) assertOffsetsLocked(where string) {
	lso, hw, leo := l.logStartOffset.Load(), l.highWatermark.Load(), l.logEndOffset.Load()
	if lso > hw || hw > leo {
		panic(fmt.Sprintf("storage: %s: %s broke log start %d ≤ high watermark %d ≤ log end %d", l.dir, where, lso, hw, leo))
	}
	if heavyInvariants {
		l.assertSegmentsLocked(where)
	}
}

// assertAppendOffset checks that an append moves the log end offset
// forward from prev to next.
func (l *Log) assertAppendOffset(prev, next int64) {
	if next <= prev {
		panic(fmt.Sprintf("storage: %s: append moved the log end offset from %d to %d", l.dir, prev, next))
	}
}
