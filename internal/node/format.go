package node

// Storage formatting, as kafka-storage.sh format: meta.properties in every
// log dir and the metadata log dir, and for a dynamic quorum's initial
// controllers the voter set their first start bootstraps raft with.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
)

// FormatOptions are storage format's flags.
type FormatOptions struct {
	// ClusterID is --cluster-id (a 22-character base64 uuid).
	ClusterID string
	// Standalone makes this controller the only initial voter.
	Standalone bool
	// InitialControllers is --initial-controllers, parsed.
	InitialControllers []quorum.Member
	// NoInitialControllers formats a controller that joins an existing
	// quorum as an observer.
	NoInitialControllers bool
	// IgnoreFormatted skips dirs that are formatted already instead of
	// failing.
	IgnoreFormatted bool
	// Bootstrap are records for the cluster's first commit (--add-scram,
	// ParseAddScram), written beside the metadata log.
	Bootstrap []metadata.Record
}

// FormatResult says what Format wrote.
type FormatResult struct {
	Formatted []string // dirs given a meta.properties
	Skipped   []string // dirs formatted already (IgnoreFormatted)
	// InitialVoters is the voter set written, if any.
	InitialVoters []quorum.Member
}

// Format formats the node's storage for cfg. It refuses, with the reason
// and what to run instead, every combination that would let the node split
// from its cluster or disagree with its configuration.
func Format(cfg *config.Broker, o FormatOptions) (FormatResult, error) {
	var res FormatResult
	if _, err := metadata.ParseUuid(o.ClusterID); err != nil {
		return res, fmt.Errorf("--cluster-id %q is not a cluster id (22 base64 characters; `vltava storage random-uuid` makes one)", o.ClusterID)
	}
	mode, err := modeOf(cfg)
	if err != nil {
		return res, err
	}
	flags := 0
	for _, set := range []bool{o.Standalone, len(o.InitialControllers) > 0, o.NoInitialControllers} {
		if set {
			flags++
		}
	}
	switch {
	case flags > 1:
		return res, errors.New("--standalone, --initial-controllers and --no-initial-controllers are exclusive")
	case flags > 0 && !isController(cfg):
		return res, fmt.Errorf("--standalone, --initial-controllers and --no-initial-controllers are for controllers; process.roles=%s: format a broker with --cluster-id only", strings.Join(cfg.ProcessRoles, ","))
	case flags > 0 && mode == staticQuorum:
		return res, fmt.Errorf("--standalone, --initial-controllers and --no-initial-controllers set up a dynamic quorum, but controller.quorum.voters is set (%s): format without them, or replace controller.quorum.voters with controller.quorum.bootstrap.servers", cfg.ControllerQuorumVoters)
	case flags == 0 && mode == dynamicQuorum && isController(cfg):
		return res, fmt.Errorf("controller.quorum.voters is not set on this controller, so storage format needs one of --standalone (the first controller), --initial-controllers id@host:port:directory-id,... (the same list on every initial controller) or --no-initial-controllers (a controller that joins later)")
	}
	self := controllerEndpoint(cfg)
	var metaDirID metadata.Uuid
	switch {
	case o.Standalone:
		if self == "" {
			return res, fmt.Errorf("--standalone: listeners has no controller listener (controller.listener.names=%s)", strings.Join(cfg.ControllerListenerNames, ","))
		}
		metaDirID = metadata.NewUuid()
		res.InitialVoters = []quorum.Member{{Key: quorum.ReplicaKey{ID: cfg.NodeID, DirectoryID: metaDirID}, Addr: self, Voter: true}}
	case len(o.InitialControllers) > 0:
		res.InitialVoters = o.InitialControllers
		for _, v := range o.InitialControllers {
			if v.Key.ID == cfg.NodeID {
				metaDirID = v.Key.DirectoryID
				if self != "" && !sameEndpoint(v.Addr, self) {
					return res, fmt.Errorf("--initial-controllers gives node %d the endpoint %s, but its controller listener is %s", cfg.NodeID, v.Addr, self)
				}
			}
		}
		if metaDirID == metadata.ZeroUuid {
			return res, fmt.Errorf("node %d is not in --initial-controllers; format a controller that joins later with --no-initial-controllers", cfg.NodeID)
		}
	}
	if len(res.InitialVoters) > 0 {
		if err := checkInitialVoters(cfg, metaDirID, res.InitialVoters); err != nil {
			return res, err
		}
	}

	for _, d := range storageDirs(cfg) {
		path := filepath.Join(d, metadata.MetaPropertiesFile)
		mp, err := metadata.ReadMetaProperties(path)
		if err == nil {
			if !o.IgnoreFormatted {
				return res, fmt.Errorf("log directory %s is already formatted; use --ignore-formatted to skip formatted directories and format the others", d)
			}
			// A skipped dir must belong to this node of this cluster,
			// else the node would refuse to start with it.
			if mp.ClusterID != o.ClusterID || mp.NodeID != cfg.NodeID {
				return res, fmt.Errorf("log directory %s is formatted with cluster.id=%s node.id=%d, not --cluster-id %s and node.id=%d; remove its %s to format it again",
					d, mp.ClusterID, mp.NodeID, o.ClusterID, cfg.NodeID, metadata.MetaPropertiesFile)
			}
			res.Skipped = append(res.Skipped, d)
			continue
		}
		if !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
	}
	for _, d := range storageDirs(cfg) {
		if slices.Contains(res.Skipped, d) {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return res, err
		}
		mp := metadata.MetaProperties{ClusterID: o.ClusterID, NodeID: cfg.NodeID, DirectoryID: metadata.NewUuid()}
		if d == cfg.MetadataLogDir && metaDirID != metadata.ZeroUuid {
			mp.DirectoryID = metaDirID
		}
		if err := metadata.WriteMetaProperties(filepath.Join(d, metadata.MetaPropertiesFile), mp); err != nil {
			return res, err
		}
		res.Formatted = append(res.Formatted, d)
		if d == cfg.MetadataLogDir && len(res.InitialVoters) > 0 {
			if err := quorum.WriteBootstrapVoters(raftDir(cfg), res.InitialVoters); err != nil {
				return res, err
			}
		}
		if d == cfg.MetadataLogDir && len(o.Bootstrap) > 0 {
			if err := metadata.WriteBootstrapRecords(raftDir(cfg), o.Bootstrap); err != nil {
				return res, err
			}
		}
	}
	if len(res.Formatted) == 0 {
		return res, errors.New("all of the log directories are already formatted")
	}
	return res, nil
}

// StorageInfo describes the node's dirs, as kafka-storage.sh info: each
// dir's meta.properties, or why it has none.
func StorageInfo(cfg *config.Broker) []string {
	var out []string
	for _, d := range storageDirs(cfg) {
		path := filepath.Join(d, metadata.MetaPropertiesFile)
		mp, err := metadata.ReadMetaProperties(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			out = append(out, fmt.Sprintf("%s: not formatted", d))
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", d, err))
		default:
			out = append(out, fmt.Sprintf("%s: cluster.id=%s node.id=%d directory.id=%s", d, mp.ClusterID, mp.NodeID, mp.DirectoryID))
		}
	}
	if voters, err := quorum.ReadBootstrapVoters(raftDir(cfg)); err == nil {
		out = append(out, "initial controllers: "+formatVoters(voters))
	}
	return out
}
