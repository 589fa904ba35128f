package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDumpLog dumps the data dir of a real broker run, after stopping it:
// batches and records, the offset and time indexes checked against the
// log, the producer snapshot, checkpoints and __consumer_offsets records;
// then a damaged copy of the segment reports its bad CRC.
func TestDumpLog(t *testing.T) {
	b := groupBroker(t)
	if b.kind != "vltava" {
		t.Skip("dump-log reads Vltava's data dir")
	}
	ok(t, b, "", "topics", "create", "dl", "--partitions", "1")
	ok(t, b, "k1|hello\nk2|world\n", "produce", "dl", "--key-separator", "|", "--header", "h=1", "--linger", "0s")
	// Enough separate batches to pass index.interval.bytes (4096) and get
	// index entries.
	for range 3 {
		ok(t, b, "", "perf", "produce", "dl", "--num-records", "40", "--record-size", "1000", "--throughput", "-1", "--linger", "0s",
			"--batch-max-bytes", "2000", "--json")
	}
	ok(t, b, "", "consume", "dl", "--group", "dumper", "--from-beginning", "--max-messages", "2", "--timeout", "10s")
	b.stop()

	dir := filepath.Join(b.dataDir, "dl-0")
	seg := filepath.Join(dir, "00000000000000000000")

	out := ok(t, nil, "", "dump-log", "--files", seg+".log", "--print-data-log")
	if !strings.Contains(out, "Dumping "+seg+".log") || !strings.Contains(out, "Log starting offset: 0") {
		t.Errorf("header: %.300q", out)
	}
	first := regexp.MustCompile(`baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: \d+ producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: \d+ size: \d+ magic: 2 compresscodec: none crc: \d+ isvalid: true`)
	if !first.MatchString(out) {
		t.Errorf("first batch line missing:\n%.600s", out)
	}
	if !strings.Contains(out, "| offset: 0 CreateTime: ") || !strings.Contains(out, "headerKeys: [h] headers: [h=1] key: k1 payload: hello") ||
		!strings.Contains(out, "| offset: 1 ") || !strings.Contains(out, "key: k2 payload: world") {
		t.Errorf("records:\n%.800s", out)
	}
	if strings.Contains(out, "isvalid: false") {
		t.Errorf("a batch of a healthy log is invalid")
	}
	noData := ok(t, nil, "", "dump-log", seg+".log")
	if strings.Contains(noData, "| offset:") {
		t.Errorf("records printed without --deep-iteration")
	}
	if deep := ok(t, nil, "", "dump-log", seg+".log", "--deep-iteration"); !strings.Contains(deep, "| offset: 0 ") || strings.Contains(deep, "payload: hello") {
		t.Errorf("--deep-iteration prints records without data")
	}

	idx := ok(t, nil, "", "dump-log", "--files", seg+".index,"+seg+".timeindex")
	if !regexp.MustCompile(`(?m)^offset: \d+ position: \d+$`).MatchString(idx) || !regexp.MustCompile(`(?m)^timestamp: \d+ offset: \d+$`).MatchString(idx) {
		t.Errorf("index entries:\n%s", idx)
	}
	if strings.Contains(idx, "Mismatches") {
		t.Errorf("index of a healthy log mismatches:\n%s", idx)
	}
	if sanity := ok(t, nil, "", "dump-log", "--files", seg+".index", "--index-sanity-check"); !strings.Contains(sanity, seg+".index passed sanity check.") {
		t.Errorf("sanity: %q", sanity)
	}

	if v := ok(t, nil, "", "dump-log", seg+".index", "--verify-index-only"); strings.Contains(v, "position:") || strings.Contains(v, "Mismatches") {
		t.Errorf("--verify-index-only on a healthy index: %q", v)
	}
	all := strings.Count(ok(t, nil, "", "dump-log", seg+".log"), "baseOffset:")
	if some := strings.Count(ok(t, nil, "", "dump-log", seg+".log", "--max-bytes", "3000"), "baseOffset:"); some == 0 || some >= all {
		t.Errorf("--max-bytes 3000 printed %d of %d batches", some, all)
	}

	var dumps []struct {
		Kind      string `json:"kind"`
		Producers []struct {
			ProducerID int64 `json:"producer_id"`
		} `json:"producers"`
		LeaderEpochs []struct {
			Epoch int32 `json:"epoch"`
		} `json:"leader_epochs"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal([]byte(ok(t, nil, "", "dump-log", dir, "--output", "json")), &dumps); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, d := range dumps {
		kinds[d.Kind] = true
		if d.Kind == "snapshot" && (len(d.Producers) == 0 || d.Producers[0].ProducerID < 0) {
			t.Errorf("snapshot without producers: %+v", d)
		}
		if d.Kind == "leader-epoch-checkpoint" && len(d.LeaderEpochs) == 0 {
			t.Errorf("empty leader epochs")
		}
	}
	for _, k := range []string{"log", "index", "timeindex", "snapshot", "leader-epoch-checkpoint", "text"} {
		if !kinds[k] {
			t.Errorf("directory dump lacks a %s file: %v", k, kinds)
		}
	}
	if cp := ok(t, nil, "", "dump-log", filepath.Join(b.dataDir, "recovery-point-offset-checkpoint")); !strings.Contains(cp, "topic: dl partition: 0 offset: ") {
		t.Errorf("recovery point checkpoint: %q", cp)
	}

	// The group's commit, decoded from whichever __consumer_offsets
	// partition holds it.
	logs, _ := filepath.Glob(filepath.Join(b.dataDir, "__consumer_offsets-*", "*.log"))
	var decoded string
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil && st.Size() > 0 {
			decoded += ok(t, nil, "", "dump-log", l, "--offsets-decoder")
		}
	}
	if !strings.Contains(decoded, `"group":"dumper","partition":0,"topic":"dl","type":"offset_commit"`) || !strings.Contains(decoded, `"offset":2`) ||
		!strings.Contains(decoded, `"type":"group_metadata"`) {
		t.Errorf("--offsets-decoder:\n%s", decoded)
	}

	// Flip a byte inside the first batch's records: its CRC no longer
	// matches, and the dump says so.
	data, err := os.ReadFile(seg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	data[70] ^= 0xff
	broken := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(broken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := ok(t, nil, "", "dump-log", broken); !strings.Contains(strings.SplitN(out, "\n", 4)[2], "isvalid: false") {
		t.Errorf("damaged batch not reported:\n%.400s", out)
	}
	if stderr := fails(t, nil, "", "dump-log", "--files", filepath.Join(b.dataDir, "meta.properties.nope")); !strings.Contains(stderr, "no such file") {
		t.Errorf("missing file: %q", stderr)
	}
}
