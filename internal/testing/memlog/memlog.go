// Package memlog is an in-memory partitioned log for the tests of the
// coordinators that keep their state in an internal topic (the group
// coordinator's __consumer_offsets, the transaction coordinator's
// __transaction_state): per partition, the appended batches with offsets
// assigned, read back by offset as the coordinators' loads do.
package memlog

import (
	"errors"
	"sync"

	"github.com/vltava/vltava/internal/record"
)

// Log implements the coordinators' Append, Bounds and Read. Its zero
// value is not usable; use New.
type Log struct {
	mu       sync.Mutex
	parts    map[int32][][]byte
	next     map[int32]int64
	failNext error
	block    chan struct{}
}

// New returns an empty log.
func New() *Log {
	return &Log{parts: map[int32][][]byte{}, next: map[int32]int64{}}
}

// Append assigns batch the next offsets of partition p and keeps a copy,
// unless FailNext set an error for it.
func (l *Log) Append(p int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.failNext; err != nil {
		l.failNext = nil
		return err
	}
	h, err := record.ParseHeader(batch)
	if err != nil {
		return err
	}
	b := append([]byte(nil), batch...)
	record.SetBaseOffset(b, l.next[p])
	l.next[p] += int64(h.LastOffsetDelta) + 1
	l.parts[p] = append(l.parts[p], b)
	return nil
}

// Bounds returns 0 and partition p's next offset, once a Hold, if any,
// is released.
func (l *Log) Bounds(p int32) (int64, int64, error) {
	l.mu.Lock()
	block := l.block
	l.mu.Unlock()
	if block != nil {
		<-block
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.next[p], nil
}

// Read returns the batches of partition p from the one holding offset
// on, at least one and then as many as fit in maxBytes.
func (l *Log) Read(p int32, offset int64, maxBytes int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.parts[p] {
		h, _ := record.ParseHeader(b)
		if h.LastOffset() < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > maxBytes {
			break
		}
		out = append(out, b...)
	}
	if out == nil {
		return nil, errors.New("read past the end")
	}
	return out, nil
}

// FailNext makes the next Append return err and append nothing.
func (l *Log) FailNext(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failNext = err
}

// Hold makes Bounds, the start of a coordinator's load, wait until the
// returned release is called.
func (l *Log) Hold() (release func()) {
	block := make(chan struct{})
	l.mu.Lock()
	l.block = block
	l.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(block) }) }
}

// End is partition p's next offset.
func (l *Log) End(p int32) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next[p]
}

// Batches returns the batches appended to partition p, in order.
func (l *Log) Batches(p int32) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]byte(nil), l.parts[p]...)
}

// All returns every appended batch, partition by partition in no
// particular order.
func (l *Log) All() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]byte
	for _, bs := range l.parts {
		out = append(out, bs...)
	}
	return out
}
