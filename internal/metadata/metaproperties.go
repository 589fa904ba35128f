package metadata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MetaPropertiesFile is the name of the identity file in every log dir.
const MetaPropertiesFile = "meta.properties"

// MetaProperties is the content of a log dir's meta.properties in Kafka's
// KRaft format (version 1), a Java properties file:
//
//	version=1
//	cluster.id=<22-char base64 uuid>
//	node.id=<int>
//	directory.id=<22-char base64 uuid>
//
// It ties a log dir to one cluster and one node so a disk moved between
// machines or clusters is refused instead of silently served. directory.id
// (KIP-858) names the dir itself; the metadata log dir's is part of the
// node's replica key in a dynamic metadata quorum (KIP-853). Files written
// before directory ids have none (ZeroUuid).
type MetaProperties struct {
	ClusterID string
	NodeID    int32
	// DirectoryID is the log dir's directory.id (KIP-858), zero when the
	// file has none; see EnsureDirectoryIDs.
	DirectoryID Uuid
}

// LoadOrCreateMetaProperties reads meta.properties in each of dirs,
// creating dirs and files that are missing. All existing files must agree on
// cluster.id and carry node.id == nodeID; missing files get the existing
// cluster id, or a newly generated one if no dir has one (first start).
func LoadOrCreateMetaProperties(dirs []string, nodeID int32) (MetaProperties, error) {
	if len(dirs) == 0 {
		return MetaProperties{}, errors.New("metadata: no log dirs")
	}
	var clusterID, clusterIDDir string
	var missing []string
	for _, dir := range dirs {
		path := filepath.Join(dir, MetaPropertiesFile)
		mp, err := ReadMetaProperties(path)
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, dir)
			continue
		}
		if err != nil {
			return MetaProperties{}, err
		}
		if mp.NodeID != nodeID {
			return MetaProperties{}, fmt.Errorf("metadata: %s has node.id=%d but this node is configured with node.id=%d", path, mp.NodeID, nodeID)
		}
		if clusterID != "" && mp.ClusterID != clusterID {
			return MetaProperties{}, fmt.Errorf("%w: %s has cluster.id=%s but %s has cluster.id=%s",
				kerr.InconsistentClusterID, path, mp.ClusterID, clusterIDDir, clusterID)
		}
		clusterID, clusterIDDir = mp.ClusterID, path
	}
	if clusterID == "" {
		clusterID = NewUuid().String()
	}
	mp := MetaProperties{ClusterID: clusterID, NodeID: nodeID}
	for _, dir := range missing {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return MetaProperties{}, err
		}
		dmp := mp
		dmp.DirectoryID = NewUuid()
		if err := WriteMetaProperties(filepath.Join(dir, MetaPropertiesFile), dmp); err != nil {
			return MetaProperties{}, err
		}
	}
	return mp, nil
}

// ReadMetaProperties parses a meta.properties file. An error wrapping
// os.ErrNotExist means there is none.
func ReadMetaProperties(path string) (MetaProperties, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return MetaProperties{}, err
	}
	props := parseJavaProperties(data)
	if v := props["version"]; v != "1" {
		return MetaProperties{}, fmt.Errorf("metadata: %s: unsupported version %q (want 1, a KRaft log dir)", path, v)
	}
	mp := MetaProperties{ClusterID: props["cluster.id"]}
	if _, err := ParseUuid(mp.ClusterID); err != nil {
		return MetaProperties{}, fmt.Errorf("metadata: %s: invalid cluster.id %q", path, mp.ClusterID)
	}
	id, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil || id < 0 {
		return MetaProperties{}, fmt.Errorf("metadata: %s: invalid node.id %q", path, props["node.id"])
	}
	mp.NodeID = int32(id)
	if v, ok := props["directory.id"]; ok {
		if mp.DirectoryID, err = ParseUuid(v); err != nil {
			return MetaProperties{}, fmt.Errorf("metadata: %s: invalid directory.id %q", path, v)
		}
	}
	return mp, nil
}

// WriteMetaProperties durably writes mp to path (atomic replace).
func WriteMetaProperties(path string, mp MetaProperties) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#\n#Written by vltava\nversion=1\ncluster.id=%s\nnode.id=%d\n", mp.ClusterID, mp.NodeID)
	if mp.DirectoryID != ZeroUuid {
		fmt.Fprintf(&b, "directory.id=%s\n", mp.DirectoryID)
	}
	return writeFileAtomic(path, b.Bytes())
}

// parseJavaProperties handles the subset of java.util.Properties syntax
// Kafka writes: comment lines starting with '#' or '!', and key=value or
// key:value lines with surrounding whitespace.
func parseJavaProperties(data []byte) map[string]string {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[line] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return props
}
