package node

import (
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/storage/vfs"
)

// halt stops the process at once, as Kafka's Exit.halt does when a broker
// can no longer store anything.
var halt = func() { os.Exit(1) }

// dirFailures is the broker's record of its failed log dirs (KIP-858),
// fed by the storage Manager's failure handler and read by the lifecycle's
// heartbeats.
type dirFailures struct {
	mu       sync.Mutex
	ids      map[string]metadata.Uuid // directory.id of every log dir
	offline  []string                 // failed dirs, in failure order
	replicas []partition.OfflineReplica
	poke     func() // the lifecycle's, once it runs
}

// storageFS is the file system of the log dirs: the OS, or under the test
// hook vfs.FaultTriggerFileEnv a fault-injecting one driven by the named
// trigger file.
func (n *Node) storageFS() vfs.FS {
	path := os.Getenv(vfs.FaultTriggerFileEnv)
	if path == "" {
		return vfs.OS
	}
	n.log.Warn("test hook enabled: log dir I/O faults injected from a trigger file", "env", vfs.FaultTriggerFileEnv, "file", path)
	f := vfs.NewFaulty(vfs.OS)
	f.WatchTriggerFile(path, vfs.FaultTriggerPollInterval, nil)
	return f
}

// handleDirFailure takes a failed log dir's partitions out of service and
// has the next heartbeat report it (for a dir offline since start, it is
// called again for each assigned partition not found elsewhere). With every log dir failed, or the one
// holding the metadata log, the broker cannot go on and halts (Kafka's
// behaviour; its partitions' leadership then moves when its session
// expires).
func (n *Node) handleDirFailure(dir string, tps []storage.TopicPartition, all bool) {
	if all || filepath.Clean(dir) == filepath.Clean(n.cfg.MetadataLogDir) {
		n.log.Error("shutting down: no usable log dir is left (or the metadata log's failed)", "dir", dir, "all_dirs_offline", all)
		halt()
		return
	}
	replicas := n.partitions.HandleDirFailure(dir, tps)
	n.dirs.mu.Lock()
	if !slices.Contains(n.dirs.offline, dir) {
		n.dirs.offline = append(n.dirs.offline, dir)
	}
	n.dirs.replicas = append(n.dirs.replicas, replicas...)
	poke := n.dirs.poke
	n.dirs.mu.Unlock()
	if poke != nil {
		poke()
	}
}

// offlineDirs is the lifecycle's view of the failed dirs: their ids and
// the replicas in them the metadata still has this broker serve.
func (n *Node) offlineDirs() controller.OfflineDirs {
	n.dirs.mu.Lock()
	defer n.dirs.mu.Unlock()
	if len(n.dirs.offline) == 0 {
		return controller.OfflineDirs{}
	}
	var out controller.OfflineDirs
	for _, d := range n.dirs.offline {
		out.DirIDs = append(out.DirIDs, n.dirs.ids[d])
	}
	for _, r := range n.partitions.StillServedHere(n.meta.Image(), n.dirs.replicas) {
		if out.Replicas == nil {
			out.Replicas = map[[16]byte][]rules.ReplicaRef{}
		}
		id := n.dirs.ids[r.Dir]
		out.Replicas[id] = append(out.Replicas[id], rules.ReplicaRef{TopicID: r.TopicID, Partition: r.Partition})
	}
	return out
}

// setLifecyclePoke lets failures wake the lifecycle for an early heartbeat.
func (n *Node) setLifecyclePoke(poke func()) {
	n.dirs.mu.Lock()
	n.dirs.poke = poke
	pending := len(n.dirs.offline) > 0
	n.dirs.mu.Unlock()
	if pending {
		poke()
	}
}
