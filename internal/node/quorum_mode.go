package node

// How a node finds its metadata quorum, and the configurations refused
// because they would split the cluster.
//
// Three ways, as in Kafka 4:
//   - static: controller.quorum.voters lists the voters (id@host:port); every
//     voter bootstraps raft with that list. Log dirs are formatted on the
//     first start if they are not yet (Kafka requires storage format; the
//     voters agree by configuration, so auto-formatting cannot split them).
//   - dynamic (KIP-853, Kafka 4's default): controller.quorum.bootstrap.servers
//     names controller endpoints to find the leader through; the voter set
//     lives in the raft configuration and changes with AddRaftVoter and
//     RemoveRaftVoter. Every node must have been formatted (vltava storage
//     format): --standalone or --initial-controllers writes the initial
//     voters, --no-initial-controllers (and brokers) none, so the node
//     joins as an observer. An unformatted node is refused with the command
//     to run, never bootstrapped as a one-voter cluster of its own.
//   - zero-config: neither key, roles broker,controller: a single node that
//     formats itself and is the one voter of its own quorum.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
)

// quorumMode is how the node finds its quorum.
type quorumMode int

const (
	zeroConfigQuorum quorumMode = iota
	staticQuorum
	dynamicQuorum
)

// bootstrapServers is controller.quorum.bootstrap.servers as host:port.
func bootstrapServers(cfg *config.Broker) []string {
	v, _, _ := cfg.Value("controller.quorum.bootstrap.servers")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// modeOf picks the quorum mode and refuses a combination of the two keys
// that would let nodes disagree on the voters.
func modeOf(cfg *config.Broker) (quorumMode, error) {
	bootstrap := bootstrapServers(cfg)
	for _, s := range bootstrap {
		if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
			return 0, fmt.Errorf("controller.quorum.bootstrap.servers: %q is not host:port", s)
		}
	}
	switch {
	case len(cfg.Voters) > 0 && len(bootstrap) > 0:
		// Kafka uses the static voters when both are set; we accept that
		// only when the bootstrap servers are those voters, since a list
		// naming other nodes means the operator expects a dynamic quorum.
		voters := quorumVoters(cfg)
		for _, s := range bootstrap {
			found := false
			for _, a := range voters {
				found = found || sameEndpoint(a, s)
			}
			if !found {
				return 0, fmt.Errorf("controller.quorum.bootstrap.servers lists %s, which is not in controller.quorum.voters (%s): set only controller.quorum.voters for a static quorum, or only controller.quorum.bootstrap.servers (and run `vltava storage format`) for a dynamic one", s, cfg.ControllerQuorumVoters)
			}
		}
		return staticQuorum, nil
	case len(cfg.Voters) > 0:
		return staticQuorum, nil
	case len(bootstrap) > 0:
		return dynamicQuorum, nil
	}
	return zeroConfigQuorum, nil
}

// sameEndpoint reports whether host:port a and b name the same endpoint:
// equal ports and hosts that are equal or resolve to a common address
// ("localhost" and "127.0.0.1").
func sameEndpoint(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil || pa != pb {
		return false
	}
	if strings.EqualFold(ha, hb) {
		return true
	}
	ipsA, errA := net.LookupHost(ha)
	ipsB, errB := net.LookupHost(hb)
	if errA != nil || errB != nil {
		return false
	}
	for _, x := range ipsA {
		if slices.Contains(ipsB, x) {
			return true
		}
	}
	return false
}

// controllerEndpoint is this controller's quorum address as other nodes
// reach it: its controller listener in advertised.listeners, else in
// listeners ("" when it has none).
func controllerEndpoint(cfg *config.Broker) string {
	for _, ls := range [][]config.Listener{cfg.AdvertisedListeners, cfg.Listeners} {
		for _, l := range ls {
			if slices.Contains(cfg.ControllerListenerNames, l.Name) {
				if l.Host == "" || l.Host == "0.0.0.0" || l.Host == "::" {
					host, err := os.Hostname()
					if err != nil {
						host = "localhost"
					}
					l.Host = host
				}
				return l.Addr()
			}
		}
	}
	return ""
}

// storageDirs are the dirs storage format writes meta.properties to:
// log.dirs and metadata.log.dir.
func storageDirs(cfg *config.Broker) []string {
	dirs := slices.Clone(cfg.LogDirs)
	if !slices.Contains(dirs, cfg.MetadataLogDir) {
		dirs = append(dirs, cfg.MetadataLogDir)
	}
	return dirs
}

// raftDir is the metadata partition's dir (raft.db, snapshots, bootstrap
// voters).
func raftDir(cfg *config.Broker) string {
	return filepath.Join(cfg.MetadataLogDir, metadata.MetadataPartitionDir)
}

// formatCommand is the storage format command an unformatted node of a
// dynamic quorum should run.
func formatCommand(cfg *config.Broker, clusterID string) string {
	if clusterID == "" {
		clusterID = "<cluster id>"
	}
	base := "vltava storage format --config <server.properties> --cluster-id " + clusterID
	if !isController(cfg) {
		return "`" + base + "`"
	}
	self := controllerEndpoint(cfg)
	if self == "" {
		self = "<host:port>"
	}
	return fmt.Sprintf("`%s --standalone` on the first controller (its controller.quorum.bootstrap.servers must list its own %s), "+
		"`%s --initial-controllers id@host:port:directory-id,...` with the same list on every initial controller, "+
		"or `%s --no-initial-controllers` on a controller joining an existing quorum (then `vltava cluster add-controller`)",
		base, self, base, base)
}

// dynamicStorage checks that a node of a dynamic quorum has been formatted
// and returns its metadata dir's identity and, for a controller formatted
// with initial voters, those voters. It refuses the start that would
// split the cluster: unformatted dirs, dirs formatted for different
// clusters, and a standalone voter whose
// bootstrap servers do not list it (it would lead a quorum of its own
// while the others look for the leader elsewhere).
func dynamicStorage(cfg *config.Broker) (metadata.MetaProperties, []quorum.Member, error) {
	var mp metadata.MetaProperties
	var clusterID, clusterIDPath, unformatted string
	for _, d := range storageDirs(cfg) {
		path := filepath.Join(d, metadata.MetaPropertiesFile)
		got, err := metadata.ReadMetaProperties(path)
		if errors.Is(err, os.ErrNotExist) {
			if unformatted == "" {
				unformatted = d
			}
			continue
		}
		if err != nil {
			return mp, nil, err
		}
		if got.NodeID != cfg.NodeID {
			return mp, nil, fmt.Errorf("%s has node.id=%d but this node is configured with node.id=%d", path, got.NodeID, cfg.NodeID)
		}
		if clusterID != "" && got.ClusterID != clusterID {
			return mp, nil, fmt.Errorf("%w: %s has cluster.id=%s but %s has cluster.id=%s",
				kerr.InconsistentClusterID, path, got.ClusterID, clusterIDPath, clusterID)
		}
		clusterID, clusterIDPath = got.ClusterID, path
		if d == cfg.MetadataLogDir {
			mp = got
		}
	}
	if unformatted != "" {
		return mp, nil, fmt.Errorf("node %d: log dir %s is not formatted, and controller.quorum.bootstrap.servers (a dynamic quorum, KIP-853) requires formatted storage; run %s",
			cfg.NodeID, unformatted, formatCommand(cfg, clusterID))
	}
	if mp.DirectoryID == metadata.ZeroUuid {
		return mp, nil, fmt.Errorf("node %d: %s has no directory.id, which a dynamic quorum needs; reformat it: %s",
			cfg.NodeID, filepath.Join(cfg.MetadataLogDir, metadata.MetaPropertiesFile), formatCommand(cfg, mp.ClusterID))
	}
	if !isController(cfg) {
		return mp, nil, nil
	}
	voters, err := quorum.ReadBootstrapVoters(raftDir(cfg))
	if errors.Is(err, os.ErrNotExist) {
		return mp, nil, nil // --no-initial-controllers: joins as an observer
	}
	if err != nil {
		return mp, nil, err
	}
	if _, err := os.Stat(filepath.Join(raftDir(cfg), quorum.RaftStoreFile)); err == nil {
		return mp, voters, nil // bootstrapped already; the voters are raft's
	}
	if err := checkInitialVoters(cfg, mp.DirectoryID, voters); err != nil {
		return mp, nil, err
	}
	return mp, voters, nil
}

// checkInitialVoters refuses initial voters this node cannot bootstrap
// safely with.
func checkInitialVoters(cfg *config.Broker, dir metadata.Uuid, voters []quorum.Member) error {
	var self *quorum.Member
	for i, v := range voters {
		if v.Key.ID == cfg.NodeID {
			self = &voters[i]
		}
	}
	switch {
	case self == nil:
		return fmt.Errorf("node %d is not among its initial controllers (%s); to join an existing quorum format it with --no-initial-controllers", cfg.NodeID, formatVoters(voters))
	case self.Key.DirectoryID != dir:
		return fmt.Errorf("node %d: its initial controller entry has directory id %s but %s has directory.id=%s; format again with the same --initial-controllers on every controller",
			cfg.NodeID, self.Key.DirectoryID, filepath.Join(cfg.MetadataLogDir, metadata.MetaPropertiesFile), dir)
	case len(voters) == 1:
		// --standalone: this node alone. It must be where the others
		// look for the leader, else it forms a cluster of its own.
		listed := false
		for _, s := range bootstrapServers(cfg) {
			listed = listed || sameEndpoint(s, self.Addr)
		}
		if !listed {
			return fmt.Errorf("node %d was formatted --standalone at %s, but controller.quorum.bootstrap.servers (%s) does not list it, so it would form a cluster of its own; add %s to controller.quorum.bootstrap.servers, or remove %s so that the node joins the quorum at those servers as an observer (%s), then `vltava cluster add-controller`",
				cfg.NodeID, self.Addr, strings.Join(bootstrapServers(cfg), ","), self.Addr, filepath.Join(raftDir(cfg), quorum.BootstrapVotersFile), sameClusterHint)
		}
		if err := refuseSecondQuorum(cfg, self.Addr); err != nil {
			return err
		}
	}
	return nil
}

// sameClusterHint completes the advice to a --standalone node that should
// join an existing quorum instead: the quorum admits only nodes formatted
// with its cluster id.
const sameClusterHint = "its log dirs must carry that cluster's id; if they do not, remove their meta.properties and format them again with `vltava storage format --cluster-id <that cluster's id> --no-initial-controllers`"

// probeTimeout bounds asking one bootstrap server who leads.
const probeTimeout = 2 * time.Second

// refuseSecondQuorum fails when another bootstrap server already belongs
// to a quorum with a leader: a --standalone node bootstrapping now would
// lead a second cluster beside it. Servers that do not answer are skipped
// (on the very first start none is up yet).
func refuseSecondQuorum(cfg *config.Broker, self string) error {
	tlsc, err := quorumTLS(cfg)
	if err != nil {
		return err
	}
	for _, s := range bootstrapServers(cfg) {
		if sameEndpoint(s, self) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		leader, err := quorum.ProbeLeader(ctx, s, tlsc)
		cancel()
		if err == nil && leader != "" && !sameEndpoint(leader, self) {
			return fmt.Errorf("node %d was formatted --standalone, but a metadata quorum already runs (bootstrap server %s knows leader %s), so it would form a second cluster; remove %s so that the node joins that quorum as an observer (%s), then `vltava cluster add-controller`",
				cfg.NodeID, s, leader, filepath.Join(raftDir(cfg), quorum.BootstrapVotersFile), sameClusterHint)
		}
	}
	return nil
}

func formatVoters(voters []quorum.Member) string {
	var s []string
	for _, v := range voters {
		s = append(s, quorum.FormatInitialController(v))
	}
	return strings.Join(s, ",")
}

// dynamicRaftConfig fills rc for a node of a dynamic quorum.
func dynamicRaftConfig(cfg *config.Broker, rc *quorum.RaftConfig, mp metadata.MetaProperties, voters []quorum.Member) {
	rc.Voters = nil
	rc.BootstrapServers = bootstrapServers(cfg)
	rc.DirectoryID, rc.ClusterID = mp.DirectoryID, mp.ClusterID
	rc.InitialVoters = voters
	if self := controllerEndpoint(cfg); isController(cfg) && self != "" {
		rc.AdvertiseAddr = self
	}
}

// kraftVersion is the kraft.version feature level of a quorum mode: 1 for a
// dynamic quorum (KIP-853), 0 for a static one. The zero-config node is a
// one-voter quorum bootstrapped from its own configuration, as a static one.
func kraftVersion(m quorumMode) int16 {
	if m == dynamicQuorum {
		return 1
	}
	return 0
}
