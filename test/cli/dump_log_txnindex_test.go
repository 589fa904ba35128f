package cli_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpLogTxnIndex: a .txnindex in Kafka's format (34-byte entries:
// version, producer id, first offset, last offset, last stable offset)
// dumps one line per aborted transaction, as kafka-dump-log.sh prints it.
func TestDumpLogTxnIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "00000000000000000000.txnindex")
	var data []byte
	for _, e := range [][4]int64{{7, 2, 6, 5}, {9, 10, 12, 13}} {
		data = binary.BigEndian.AppendUint16(data, 0)
		for _, v := range e {
			data = binary.BigEndian.AppendUint64(data, uint64(v))
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := ok(t, nil, "", "dump-log", path)
	for _, want := range []string{
		"Dumping " + path,
		"version: 0 producerId: 7 firstOffset: 2 lastOffset: 6 lastStableOffset: 5\n",
		"version: 0 producerId: 9 firstOffset: 10 lastOffset: 12 lastStableOffset: 13\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
}
