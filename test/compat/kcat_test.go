package compat

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// runKcat runs kcat with args and stdin, failing the test on a non-zero exit.
func runKcat(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return runKcatFor(t, 30*time.Second, stdin, args...)
}

// runKcatFor is runKcat with a time limit other than 30 s.
func runKcatFor(t *testing.T, limit time.Duration, stdin string, args ...string) string {
	t.Helper()
	bin := requireTool(t, "kcat")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// TestKcat drives kcat (librdkafka) in its three modes: metadata listing,
// keyed produce from stdin, and consume to the end with a format string.
func TestKcat(t *testing.T) {
	t.Parallel()
	requireTool(t, "kcat")
	b := StartBroker(t)
	adm := newAdmin(t, b)

	t.Run("Metadata", func(t *testing.T) {
		t.Parallel()
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 3, nil)
		out := runKcat(t, "", "-L", "-b", b.Addr(), "-t", topic)
		// The node id is the broker's choice; everything else is fixed.
		for _, want := range []string{
			`(?m)^ 1 brokers:$`,
			`(?m)^  broker (\d+) at ` + regexp.QuoteMeta(b.Addr()),
			`(?m)^  topic "` + regexp.QuoteMeta(topic) + `" with 3 partitions:$`,
			`(?m)^    partition 0, leader \d+, replicas: \d+, isrs: \d+$`,
			`(?m)^    partition 1, leader \d+, replicas: \d+, isrs: \d+$`,
			`(?m)^    partition 2, leader \d+, replicas: \d+, isrs: \d+$`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("kcat -L output does not match %s:\n%s", want, out)
			}
		}
	})

	t.Run("ProduceConsumeOnePartition", func(t *testing.T) {
		t.Parallel()
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 1, nil)
		var in strings.Builder
		for i := range 200 {
			fmt.Fprintf(&in, "key-%d:value %d with spaces, commas and : colons\n", i%7, i)
		}
		runKcat(t, in.String(), "-P", "-b", b.Addr(), "-t", topic, "-K:")
		out := runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%k:%s\n`)
		if out != in.String() {
			t.Fatalf("kcat consumed output differs from its input:\n got %d bytes, want %d\n got first lines %.300q\nwant first lines %.300q",
				len(out), in.Len(), out, in.String())
		}
	})

	t.Run("ProduceConsumeManyPartitions", func(t *testing.T) {
		t.Parallel()
		topic := uniqueTopic(t)
		createTopic(t, adm, topic, 3, nil)
		var lines []string
		for i := range 300 {
			lines = append(lines, fmt.Sprintf("k%d:%d", i%10, i))
		}
		in := strings.Join(lines, "\n") + "\n"
		runKcat(t, in, "-P", "-b", b.Addr(), "-t", topic, "-K:")
		out := runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%p %k:%s\n`)

		// Partitions interleave in the output, so compare the lines as a
		// set, then check that each key stayed in one partition with its
		// values in the order they were produced.
		var got []string
		keyPartition := map[string]string{}
		lastValue := map[string]int{}
		for line := range strings.Lines(out) {
			part, kv, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			got = append(got, kv)
			key, val, _ := strings.Cut(kv, ":")
			if p, ok := keyPartition[key]; ok && p != part {
				t.Fatalf("key %s in partitions %s and %s", key, p, part)
			}
			keyPartition[key] = part
			var v int
			fmt.Sscan(val, &v)
			if last, ok := lastValue[key]; ok && v <= last {
				t.Fatalf("key %s: value %d after %d", key, v, last)
			}
			lastValue[key] = v
		}
		slices.Sort(got)
		want := slices.Clone(lines)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("kcat consumed %d lines, produced %d; contents differ", len(got), len(want))
		}
	})
}
