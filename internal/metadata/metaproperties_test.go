package metadata

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestMetaPropertiesCreatedThenVerified(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	mp, err := LoadOrCreateMetaProperties(dirs, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseUuid(mp.ClusterID); err != nil || mp.NodeID != 3 {
		t.Fatalf("meta properties %+v", mp)
	}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, MetaPropertiesFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{"version=1\n", "cluster.id=" + mp.ClusterID + "\n", "node.id=3\n"} {
			if !strings.Contains(string(data), line) {
				t.Fatalf("%s lacks %q:\n%s", d, line, data)
			}
		}
	}

	again, err := LoadOrCreateMetaProperties(dirs, 3)
	if err != nil || again != mp {
		t.Fatalf("second start: %+v, %v; want %+v", again, err, mp)
	}

	// A new, empty dir joins the existing cluster id.
	dirs = append(dirs, filepath.Join(root, "c"))
	if third, err := LoadOrCreateMetaProperties(dirs, 3); err != nil || third.ClusterID != mp.ClusterID {
		t.Fatalf("added dir: %+v, %v", third, err)
	}

	if _, err := LoadOrCreateMetaProperties(dirs, 4); err == nil || !strings.Contains(err.Error(), "node.id") {
		t.Fatalf("node id mismatch accepted: %v", err)
	}
}

func TestMetaPropertiesRejectsInconsistentClusterIDs(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	if _, err := LoadOrCreateMetaProperties([]string{a}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateMetaProperties([]string{b}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateMetaProperties([]string{a, b}, 1); !errors.Is(err, kerr.InconsistentClusterID) {
		t.Fatalf("got %v, want INCONSISTENT_CLUSTER_ID", err)
	}
}

func TestReadMetaPropertiesKafkaWritten(t *testing.T) {
	// As written by Kafka's kafka-storage format (java.util.Properties).
	path := filepath.Join(t.TempDir(), MetaPropertiesFile)
	os.WriteFile(path, []byte("#\n#Thu Jan 01 00:00:00 UTC 2025\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n"), 0o644)
	mp, err := ReadMetaProperties(path)
	if err != nil || mp.ClusterID != "MkU3OEVBNTcwNTJENDM2Qg" || mp.NodeID != 1 {
		t.Fatalf("%+v %v", mp, err)
	}
	for _, bad := range []string{
		"version=0\nbroker.id=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n", // ZooKeeper-era dir
		"version=1\ncluster.id=short\nnode.id=1\n",
		"version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n",
	} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadMetaProperties(path); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestMetaPropertiesDirectoryID: every created dir gets its own directory.id
// (KIP-858), kept across reads; a file without one reads as ZeroUuid.
func TestMetaPropertiesDirectoryID(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	if _, err := LoadOrCreateMetaProperties(dirs, 1); err != nil {
		t.Fatal(err)
	}
	a, errA := ReadMetaProperties(filepath.Join(dirs[0], MetaPropertiesFile))
	b, errB := ReadMetaProperties(filepath.Join(dirs[1], MetaPropertiesFile))
	if errA != nil || errB != nil || a.DirectoryID == ZeroUuid || a.DirectoryID == b.DirectoryID {
		t.Fatalf("directory ids %v %v (%v, %v)", a.DirectoryID, b.DirectoryID, errA, errB)
	}
	old := filepath.Join(root, "old.properties")
	if err := os.WriteFile(old, []byte("version=1\ncluster.id="+a.ClusterID+"\nnode.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if mp, err := ReadMetaProperties(old); err != nil || mp.DirectoryID != ZeroUuid {
		t.Fatalf("file without directory.id: %+v, %v", mp, err)
	}
}
