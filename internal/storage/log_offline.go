package storage

// closeHandlers closes the log's files without writing anything, for a log
// whose dir went offline (Kafka's closeHandlers): appends and reads then
// fail with KAFKA_STORAGE_ERROR.
func (l *Log) closeHandlers() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return
	}
	for _, s := range l.segmentList() {
		s.closeNoFlush()
	}
	l.mu.closed = true
}

// isClosed reports whether the log was closed (or deleted).
func (l *Log) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.closed
}
