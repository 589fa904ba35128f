package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/s3server"
)

// remoteDumpFile is what this test reads of dump-log --output json.
type remoteDumpFile struct {
	File    string `json:"file"`
	Kind    string `json:"kind"`
	Error   string `json:"error"`
	Batches []struct {
		Records []struct {
			Offset int64   `json:"offset"`
			Value  *string `json:"value"`
		} `json:"records"`
	} `json:"batches"`
}

// runDumpLogRemote runs the binary's dump-log --remote with the AWS
// environment the broker has, returning stdout, stderr and the error.
func runDumpLogRemote(t *testing.T, srv *s3server.Server, args ...string) (string, string, error) {
	t.Helper()
	bin, err := brokerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	none := filepath.Join(t.TempDir(), "none")
	cmd := exec.CommandContext(ctx, bin, append([]string{"dump-log"}, args...)...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey,
		"AWS_CONFIG_FILE="+none, "AWS_SHARED_CREDENTIALS_FILE="+none)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// TestTieredDumpLogReadsTheRemoteSegments tiers a topic, then dumps its
// remote segments with `vltava dump-log --remote`, configured by the
// broker's own rsm.config.* keys: every record below the earliest-local
// offset appears once with its value. A byte flipped in one stored log is
// then reported as that object's checksum failure, with a non-zero exit.
func TestTieredDumpLogReadsTheRemoteSegments(t *testing.T) {
	skipOnKfake(t, "tiered storage is Vltava's")
	b, srv := startTieredBroker(t)
	adm := newAdmin(t, b)
	topic := createOutageTopic(t, adm)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(64<<10))
	const records = 2048
	produceRange(t, prod, 0, records)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var earliestLocal int64
	if err := poll.Err(2*time.Minute, func() error {
		el, err := listOffset(ctx, b, topic, -4)
		if err != nil {
			return err
		}
		if el == 0 {
			return fmt.Errorf("earliest-local offset still 0")
		}
		earliestLocal = el
		return nil
	}); err != nil {
		t.Fatalf("nothing tiered: %v", err)
	}

	// The store's settings as the broker has them, in a properties file
	// with a broker key beside them.
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.s3.bucket.name=tiered",
		"rsm.config.storage.s3.endpoint.url=" + srv.Endpoint,
		"rsm.config.storage.s3.region=" + srv.Region,
		"rsm.config.storage.s3.path.style.access.enabled=true",
		"rsm.config.key.prefix=cluster-a/",
	}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	part := topic + "-0"
	out, stderr, err := runDumpLogRemote(t, srv, "--remote", part, "--remote-config", props,
		"--deep-iteration", "--print-data-log", "--output", "json")
	if err != nil {
		t.Fatalf("dump-log --remote %s: %v\n%s", part, err, stderr)
	}
	var dumps []remoteDumpFile
	if err := json.Unmarshal([]byte(out), &dumps); err != nil {
		t.Fatalf("dump-log json: %v\n%.500s", err, out)
	}
	seen := map[int64]int{}
	var firstLog string
	for _, d := range dumps {
		if d.Error != "" {
			t.Fatalf("%s: %s", d.File, d.Error)
		}
		if d.Kind != "log" {
			continue
		}
		if !strings.HasPrefix(d.File, "cluster-a/"+topic+"-") {
			t.Fatalf("dump names %q, not the object key", d.File)
		}
		if firstLog == "" {
			firstLog = d.File
		}
		for _, bt := range d.Batches {
			for _, r := range bt.Records {
				if r.Value == nil || *r.Value != string(tieredValue(int(r.Offset))) {
					t.Fatalf("%s: offset %d has value %.12q…, want %.12q…", d.File, r.Offset, nullableString(r.Value), tieredValue(int(r.Offset)))
				}
				seen[r.Offset]++
			}
		}
	}
	for off := int64(0); off < earliestLocal; off++ {
		if seen[off] != 1 {
			t.Fatalf("offset %d appears %d times in the remote dump, want once (earliest-local offset %d)", off, seen[off], earliestLocal)
		}
	}
	t.Logf("remote dump: %d files, %d records, earliest-local offset %d", len(dumps), len(seen), earliestLocal)

	// Corrupt the first segment's log in the bucket directory.
	bucket := filepath.Join(srv.Root, "tiered")
	path := filepath.Join(bucket, filepath.FromSlash(firstLog))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the object %s is not at %s: %v", firstLog, path, err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = runDumpLogRemote(t, srv, "--remote", part, "--remote-config", props, "--offset", "0")
	if err == nil {
		t.Fatalf("dump-log of a corrupted object exited 0\n%.500s", out)
	}
	if !strings.Contains(stderr, firstLog+": remote object corrupt: ") || !strings.Contains(stderr, "fails its checksum") {
		t.Fatalf("stderr does not report %s's checksum failure:\n%s", firstLog, stderr)
	}
	if strings.Contains(out, "baseOffset: 0 ") {
		t.Fatalf("the corrupted log was decoded:\n%.500s", out)
	}
}

func nullableString(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
