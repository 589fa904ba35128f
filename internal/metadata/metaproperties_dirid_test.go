package metadata

import (
	"path/filepath"
	"testing"
)

// TestEnsureDirectoryIDs: every log dir gets its own directory.id, kept
// across calls and across a rewrite that carries it (a cluster id change).
func TestEnsureDirectoryIDs(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	mp, err := LoadOrCreateMetaProperties(dirs, 3)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := EnsureDirectoryIDs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if ids[dirs[0]] == (Uuid{}) || ids[dirs[0]] == ids[dirs[1]] {
		t.Fatalf("directory ids %v: want two distinct non-zero ids", ids)
	}
	again, err := EnsureDirectoryIDs(dirs)
	if err != nil || again[dirs[0]] != ids[dirs[0]] || again[dirs[1]] != ids[dirs[1]] {
		t.Fatalf("ids changed between calls: %v then %v (%v)", ids, again, err)
	}
	path := filepath.Join(dirs[0], MetaPropertiesFile)
	if err := WriteMetaProperties(path, MetaProperties{ClusterID: NewUuid().String(), NodeID: mp.NodeID, DirectoryID: ids[dirs[0]]}); err != nil {
		t.Fatal(err)
	}
	read, err := ReadMetaProperties(path)
	if err != nil || read.DirectoryID != ids[dirs[0]] || read.NodeID != 3 {
		t.Fatalf("read back %+v (%v), want directory.id %s", read, err, ids[dirs[0]])
	}
}
