package cli

// vltava dump-log: kafka-dump-log.sh. It reads a partition directory's
// files offline (the broker may be stopped) with the decoders the broker
// itself loads them with (internal/storage, internal/record,
// internal/group), and never writes them. With --remote it reads the
// segments tiered storage copied to the S3 store (dump_log_remote.go).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/storage"
)

// dumpOptions are dump-log's flags, with kafka-dump-log.sh's names.
type dumpOptions struct {
	printData       bool // --print-data-log: keys, values, headers
	deep            bool // --deep-iteration: every record, not only batches
	indexSanity     bool // --index-sanity-check: check indexes, print no entries
	verifyIndexOnly bool // --verify-index-only: report mismatches only
	offsetsDecoder  bool // --offsets-decoder: decode __consumer_offsets records
	maxBytes        int64
}

// dumpedFile is one file's dump (the --output json shape).
type dumpedFile struct {
	File             string                          `json:"file"`
	Kind             string                          `json:"kind"`
	BaseOffset       *int64                          `json:"base_offset,omitempty"`
	Batches          []dumpedBatch                   `json:"batches,omitempty"`
	IndexEntries     []storage.OffsetIndexEntry      `json:"index_entries,omitempty"`
	TimeIndexEntries []storage.TimeIndexEntry        `json:"time_index_entries,omitempty"`
	Producers        []storage.ProducerSnapshotEntry `json:"producers,omitempty"`
	AbortedTxns      []storage.AbortedTxn            `json:"aborted_transactions,omitempty"`
	LeaderEpochs     []storage.LeaderEpochEntry      `json:"leader_epochs,omitempty"`
	Checkpoint       []checkpointEntry               `json:"checkpoint,omitempty"`
	Text             string                          `json:"text,omitempty"`
	Mismatches       []string                        `json:"mismatches,omitempty"`
	Sanity           string                          `json:"sanity,omitempty"`
	Error            string                          `json:"error,omitempty"`
	// Remote is the remote segment the file is an object of (--remote).
	Remote *remoteSegmentInfo `json:"remote_segment,omitempty"`

	// sanityFailed is set with a failed --index-sanity-check verdict.
	sanityFailed bool
}

type checkpointEntry struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func newDumpLogCommand() *cobra.Command {
	var (
		o      dumpOptions
		files  []string
		remote remoteOptions
	)
	cmd := &cobra.Command{
		Use:   "dump-log [FILE|DIR...]",
		Short: "Print the batches, records, indexes and snapshots of log files offline (kafka-dump-log.sh)",
		Long: `Decode a partition directory's files without a broker:

  .log         batches (offsets, count, producer id/epoch, sequences,
               transactional/control, compression, CRC validity, size,
               position); --deep-iteration adds every record, and
               --print-data-log its key, value and headers; --offsets-decoder
               decodes __consumer_offsets records.
  .index       offset -> position entries, checked against the .log
  .timeindex   timestamp -> offset entries, checked against the .log
  .snapshot    producer state snapshots
  leader-epoch-checkpoint, recovery-point-offset-checkpoint,
  replication-offset-checkpoint, log-start-offset-checkpoint, partition.metadata

Give files with --files a,b (Kafka's form) or as arguments; a directory
stands for every file in it. --index-sanity-check only checks the indexes.

--remote TOPIC-PARTITION dumps the segments tiered storage copied to the
S3 store instead, found by listing the bucket (no broker needed), each
object checked against the CRC32C its manifest recorded and named by its
key; --offset N dumps only the segment holding offset N. --remote-config
FILE gives the store as the broker has it: the rsm.config.* keys (the
broker's server.properties will do; other keys are ignored), credentials
from the AWS default chain.`,
		Example: `  vltava dump-log --files /var/lib/vltava/orders-0/00000000000000000000.log --print-data-log
  vltava dump-log /var/lib/vltava/orders-0 --deep-iteration
  vltava dump-log --files 00000000000000000000.index --index-sanity-check
  vltava dump-log /var/lib/vltava/__consumer_offsets-7 --offsets-decoder
  vltava dump-log --remote orders-0 --remote-config /etc/vltava/server.properties --print-data-log
  vltava dump-log --remote orders-0 --remote-config s3.properties --offset 120000 --output json`,
		RunE: clusterCommand(func(in *invocation) error {
			if o.offsetsDecoder {
				o.printData = true
			}
			if o.printData {
				o.deep = true
			}
			remote.offsetSet = in.cmd.Flags().Changed("offset")
			if remote.partition != "" || remote.config != "" || remote.offsetSet {
				if len(files) > 0 || len(in.args) > 0 {
					return errors.New("--remote dumps a partition's remote segments: give no files with it")
				}
				return dumpRemote(in, &o, &remote)
			}
			paths, err := dumpPaths(append(splitCommaList(files), in.args...))
			if err != nil {
				return err
			}
			var dumps []dumpedFile
			failed := 0
			for _, p := range paths {
				d := dumpFile(p, &o)
				if d.Error != "" || d.sanityFailed {
					failed++
				}
				if in.json {
					dumps = append(dumps, d)
					continue
				}
				printDump(in, d, &o)
			}
			if in.json {
				if err := writeJSON(in.stdout, dumps); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d files could not be read", failed, len(paths))
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&files, "files", nil, "comma-separated files to dump (Kafka's --files)")
	f.BoolVar(&o.printData, "print-data-log", false, "print record keys, values and headers (implies --deep-iteration)")
	f.BoolVar(&o.deep, "deep-iteration", false, "print every record, not only batch headers")
	f.BoolVar(&o.indexSanity, "index-sanity-check", false, "only check that index files are sound")
	f.BoolVar(&o.verifyIndexOnly, "verify-index-only", false, "check index entries against the log, printing only mismatches")
	f.BoolVar(&o.offsetsDecoder, "offsets-decoder", false, "decode __consumer_offsets records (implies --print-data-log)")
	f.Int64Var(&o.maxBytes, "max-bytes", 0, "read at most this many bytes of each .log (0: all)")
	f.StringVar(&remote.partition, "remote", "", "dump the partition's segments in the remote tier (TOPIC-PARTITION, e.g. orders-0)")
	f.StringVar(&remote.config, "remote-config", "", "properties file with the broker's rsm.config.* keys (its server.properties will do)")
	f.Int64Var(&remote.offset, "offset", 0, "with --remote: dump only the segment holding this offset")
	return cmd
}

func splitCommaList(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// dumpPaths expands directories into their files, sorted by name.
func dumpPaths(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("give files with --files or as arguments")
	}
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range ents {
			if !e.IsDir() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, filepath.Join(a, n))
		}
	}
	return out, nil
}

// dumpFile decodes one file according to its name.
func dumpFile(path string, o *dumpOptions) dumpedFile { return dumpFileAs(path, path, o) }

// dumpFileAs decodes the file at path, naming it name in the dump (a
// remote segment's object key for its downloaded copy).
func dumpFileAs(path, name string, o *dumpOptions) dumpedFile {
	d := dumpedFile{File: name}
	base, suffix, ok := storage.ParseLogFileName(path)
	if ok {
		d.BaseOffset = &base
	}
	var err error
	switch name := filepath.Base(path); {
	case (ok && suffix == storage.LogFileSuffix) || (!ok && strings.HasSuffix(name, storage.LogFileSuffix)):
		// A .log needs no base offset from its name (batches carry
		// theirs), so a renamed copy dumps as well.
		d.Kind = "log"
		if !o.indexSanity && !o.verifyIndexOnly {
			err = dumpSegment(&d, path, o)
		}
	case ok && suffix == storage.IndexFileSuffix:
		d.Kind = "index"
		err = dumpOffsetIndex(&d, path, base, o)
	case ok && suffix == storage.TimeIndexFileSuffix:
		d.Kind = "timeindex"
		err = dumpTimeIndex(&d, path, base, o)
	case ok && suffix == storage.SnapshotFileSuffix:
		d.Kind = "snapshot"
		d.Producers, err = storage.ReadProducerSnapshot(path)
	case ok && suffix == storage.TxnIndexFileSuffix:
		d.Kind = "txnindex"
		d.AbortedTxns, err = storage.ReadTxnIndex(path)
	case name == storage.LeaderEpochCheckpointFile:
		d.Kind = "leader-epoch-checkpoint"
		d.LeaderEpochs, err = storage.ReadLeaderEpochCheckpoint(path)
	case name == storage.RecoveryPointCheckpointFile, name == storage.HighWatermarkCheckpointFile,
		name == storage.LogStartOffsetCheckpointFile, name == storage.CleanerCheckpointFile:
		d.Kind = "offset-checkpoint"
		var m map[storage.TopicPartition]int64
		if m, err = storage.ReadOffsetCheckpoint(path); err == nil {
			for tp, off := range m {
				d.Checkpoint = append(d.Checkpoint, checkpointEntry{Topic: tp.Topic, Partition: tp.Partition, Offset: off})
			}
			sortByTopicPartition(d.Checkpoint, func(c checkpointEntry) (string, int32) { return c.Topic, c.Partition })
		}
	case name == storage.PartitionMetadataFile, name == metadata.MetaPropertiesFile:
		d.Kind = "text"
		var b []byte
		if b, err = os.ReadFile(path); err == nil {
			d.Text = string(b)
		}
	default:
		err = errors.New("not a file dump-log knows (.log, .index, .timeindex, .txnindex, .snapshot, checkpoints, partition.metadata)")
	}
	if err != nil {
		d.Error = err.Error()
	}
	return d
}

// printDump writes a dump in the layout of kafka-dump-log.sh.
func printDump(in *invocation, d dumpedFile, o *dumpOptions) {
	w := in.stdout
	fmt.Fprintf(w, "Dumping %s\n", d.File)
	switch {
	case d.Kind == "log":
		if o.indexSanity || o.verifyIndexOnly {
			break
		}
		if d.BaseOffset != nil {
			fmt.Fprintf(w, "Log starting offset: %d\n", *d.BaseOffset)
		}
		for _, b := range d.Batches {
			printBatch(w, b, o)
		}
	case o.indexSanity && (d.Kind == "index" || d.Kind == "timeindex"):
		// Only the verdict below.
	case d.Kind == "index":
		if !o.verifyIndexOnly {
			for _, e := range d.IndexEntries {
				fmt.Fprintf(w, "offset: %d position: %d\n", e.Offset, e.Position)
			}
		}
	case d.Kind == "timeindex":
		if !o.verifyIndexOnly {
			for _, e := range d.TimeIndexEntries {
				fmt.Fprintf(w, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
			}
		}
	case d.Kind == "txnindex":
		// kafka-dump-log.sh's line per AbortedTxn.
		for _, a := range d.AbortedTxns {
			fmt.Fprintf(w, "version: 0 producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
				a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
		}
	case d.Kind == "snapshot":
		for _, p := range d.Producers {
			txn := "None"
			if p.CurrentTxnFirstOffset >= 0 {
				txn = fmt.Sprint(p.CurrentTxnFirstOffset)
			}
			fmt.Fprintf(w, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d batchMetadata: [",
				p.ProducerID, p.Epoch, p.CoordinatorEpoch, txn, p.LastTimestamp)
			for i, b := range p.Batches {
				if i > 0 {
					fmt.Fprint(w, ", ")
				}
				fmt.Fprintf(w, "firstSeq: %d lastSeq: %d firstOffset: %d lastOffset: %d timestamp: %d",
					b.FirstSequence, b.LastSequence, b.FirstOffset, b.LastOffset, b.MaxTimestamp)
			}
			fmt.Fprintln(w, "]")
		}
	case d.Kind == "leader-epoch-checkpoint":
		for _, e := range d.LeaderEpochs {
			fmt.Fprintf(w, "epoch: %d offset: %d\n", e.Epoch, e.StartOffset)
		}
	case d.Kind == "offset-checkpoint":
		for _, c := range d.Checkpoint {
			fmt.Fprintf(w, "topic: %s partition: %d offset: %d\n", c.Topic, c.Partition, c.Offset)
		}
	case d.Kind == "unfinished-upload":
		fmt.Fprintln(w, d.Text)
	case d.Kind == "text":
		fmt.Fprint(w, d.Text)
		if !strings.HasSuffix(d.Text, "\n") {
			fmt.Fprintln(w)
		}
	}
	if len(d.Mismatches) > 0 {
		fmt.Fprintf(w, "Mismatches in :%s\n", d.File)
		for _, m := range d.Mismatches {
			fmt.Fprintf(w, "  %s\n", m)
		}
	}
	if d.Sanity != "" {
		fmt.Fprintln(w, d.Sanity)
	}
	if d.Error != "" {
		fmt.Fprintf(in.stderr, "%s: %s\n", d.File, d.Error)
	}
}
