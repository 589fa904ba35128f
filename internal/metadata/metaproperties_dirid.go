package metadata

import (
	"fmt"
	"path/filepath"
)

// EnsureDirectoryIDs returns each log dir's directory.id (KIP-858: the
// identity a broker reports its offline log dirs by), giving a dir whose
// meta.properties has none a new random one, written back. The files must
// exist (LoadOrCreateMetaProperties runs first).
func EnsureDirectoryIDs(dirs []string) (map[string]Uuid, error) {
	ids := make(map[string]Uuid, len(dirs))
	seen := make(map[Uuid]string, len(dirs))
	for _, dir := range dirs {
		path := filepath.Join(dir, MetaPropertiesFile)
		mp, err := ReadMetaProperties(path)
		if err != nil {
			return nil, err
		}
		if mp.DirectoryID == (Uuid{}) {
			mp.DirectoryID = NewUuid()
			if err := WriteMetaProperties(path, mp); err != nil {
				return nil, err
			}
		}
		if other, dup := seen[mp.DirectoryID]; dup {
			return nil, fmt.Errorf("metadata: %s and %s have the same directory.id %s", other, path, mp.DirectoryID)
		}
		seen[mp.DirectoryID] = path
		ids[dir] = mp.DirectoryID
	}
	return ids, nil
}
