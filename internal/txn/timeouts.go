package txn

import "time"

// AbortTimedOut aborts every ongoing transaction older than its timeout,
// fencing its producer (the epoch is bumped, so the producer's commit gets
// PRODUCER_FENCED), as Kafka's abortTimedOutTransactions does every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
func (c *Coordinator) AbortTimedOut() {
	now := c.now().UnixMilli()
	for _, e := range c.entries() {
		e.mu.Lock()
		m := e.meta
		if m.State != StateOngoing || m.StartTimestamp+int64(m.TimeoutMs) > now || !c.isCurrent(e) {
			e.mu.Unlock()
			continue
		}
		epoch, ok := c.coordinatorEpochOf(e.partition)
		if ok {
			c.logger.Info("aborting a timed-out transaction", "transactional_id", e.id,
				"producer_id", m.ProducerID, "producer_epoch", m.ProducerEpoch, "timeout_ms", m.TimeoutMs)
			if err := c.fenceAndAbortLocked(e, epoch); err != nil {
				c.logger.Warn("aborting a timed-out transaction", "transactional_id", e.id, "err", err)
			}
		}
		e.mu.Unlock()
	}
}

// RemoveExpired removes the transactional ids with no transaction in
// progress that have not been used for transactional.id.expiration.ms: a
// tombstone is written, as Kafka's removeExpiredTransactionalIds does.
func (c *Coordinator) RemoveExpired() {
	now := c.now()
	for _, e := range c.entries() {
		e.mu.Lock()
		m := e.meta
		idle := now.Sub(time.UnixMilli(m.LastUpdateTimestamp))
		if !CanTransition(m.State, StateDead) || idle < c.cfg.IDExpiration || !c.isCurrent(e) {
			e.mu.Unlock()
			continue
		}
		next := m.clone()
		next.State = StateDead
		if err := c.persistLocked(e, next); err != nil {
			c.logger.Warn("removing an expired transactional id", "transactional_id", e.id, "err", err)
			e.mu.Unlock()
			continue
		}
		c.mu.Lock()
		if c.mu.txns[e.id] == e {
			delete(c.mu.txns, e.id)
		}
		c.mu.Unlock()
		e.mu.Unlock()
		c.logger.Info("removed an expired transactional id", "transactional_id", e.id, "idle", idle)
	}
}
