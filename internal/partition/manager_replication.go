package partition

import "time"

// SetControllerClient installs the client leaders use to propose ISR
// changes (AlterPartition). The node wires it once the controller channel
// exists; until then no ISR change is proposed.
func (m *Manager) SetControllerClient(c ControllerClient) {
	if c == nil {
		m.env.controller.Store(nil)
		return
	}
	m.env.controller.Store(&controllerRef{c: c})
}

// MaybeShrinkISRs checks every partition led here for followers that have
// not caught up within replica.lag.time.max.ms and proposes removing them
// from the ISR. Kafka runs this every replica.lag.time.max.ms / 2; the
// replication manager does the same.
func (m *Manager) MaybeShrinkISRs() {
	for _, p := range m.All() {
		p.maybeShrinkISR()
	}
}

// ReplicaLagTimeMax is replica.lag.time.max.ms as a duration.
func (m *Manager) ReplicaLagTimeMax() time.Duration { return m.env.lagMax }

// setClock replaces the clock of the manager's partitions (tests).
func (m *Manager) setClock(now func() time.Time) { m.env.now = now }
