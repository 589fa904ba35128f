//go:build !invariants

package storage

// heavyInvariants is set by -tags invariants (invariants_heavy.go).
const heavyInvariants = false

func (l *Log) assertSegmentsLocked(string) {}

func (l *Log) assertRegion(ReadResult, int64, int64) {}

func (l *Log) assertData(ReadResult, int64, int64) {}
