package metadata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// BootstrapRecordsFile holds records `storage format` wrote for the
// cluster's first active controller to commit (kafka-storage.sh's
// bootstrap.checkpoint: --add-scram credentials), in the metadata log
// directory. Its content is one batch as EncodeBatch writes it.
const BootstrapRecordsFile = "bootstrap.records"

// WriteBootstrapRecords writes recs to dir/BootstrapRecordsFile.
func WriteBootstrapRecords(dir string, recs []Record) error {
	data, err := EncodeBatch(0, recs)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, BootstrapRecordsFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, BootstrapRecordsFile))
}

// ReadBootstrapRecords reads dir/BootstrapRecordsFile; none (nil, nil)
// when there is no such file.
func ReadBootstrapRecords(dir string) ([]Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, BootstrapRecordsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	_, recs, err := DecodeBatch(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, BootstrapRecordsFile), err)
	}
	return recs, nil
}
