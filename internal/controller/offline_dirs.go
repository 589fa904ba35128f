package controller

import (
	"context"
	"slices"

	"github.com/vltava/vltava/internal/controller/rules"
)

// AssignReplicasToDirs serves a broker's AssignReplicasToDirs (KIP-858):
// replicas assigned to a dir that the broker's last heartbeat reported
// offline are moved away (rules.Controller.MoveOfflineReplicas); the
// others need nothing, as this controller does not record placements. A
// broker keeps reporting until its metadata shows the replicas moved, so
// an assignment that arrives before the heartbeat naming its dir (a new
// controller) is simply sent again.
func (a *Active) AssignReplicasToDirs(ctx context.Context, broker int32, epoch int64, dirs map[[16]byte][]rules.ReplicaRef) (map[rules.ReplicaRef]error, error) {
	if !a.IsActive() {
		return nil, a.notActive()
	}
	a.mu.Lock()
	var offline [][16]byte
	if s, ok := a.mu.sessions[broker]; ok && s.epoch == epoch {
		offline = slices.Clone(s.offlineDirs)
	}
	a.mu.Unlock()
	verdicts := map[rules.ReplicaRef]error{}
	var move []rules.ReplicaRef
	for dir, refs := range dirs {
		if slices.Contains(offline, dir) {
			move = append(move, refs...)
			continue
		}
		for _, r := range refs {
			verdicts[r] = nil
		}
	}
	if len(move) == 0 {
		return verdicts, nil
	}
	moved, err := a.o.Controller.MoveOfflineReplicas(ctx, broker, epoch, move)
	if err != nil {
		return nil, err
	}
	for r, err := range moved {
		verdicts[r] = err
	}
	return verdicts, nil
}
