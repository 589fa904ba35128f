package cli

// vltava delete-records: kafka-delete-records.sh over DeleteRecords. The
// log start offset of each partition moves up to the given offset; the
// records before it are no longer readable and their segments are
// deleted once wholly below it.

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deleteRecordsFile is kafka-delete-records.sh's --offset-json-file:
// {"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}.
// Offset -1 means the high watermark (delete everything).
type deleteRecordsFile struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition *int32 `json:"partition"`
		Offset    *int64 `json:"offset"`
	} `json:"partitions"`
}

func readDeleteRecordsFile(path string) (kadm.Offsets, error) {
	var f deleteRecordsFile
	if err := readJSONFile("offset-json-file", path, &f); err != nil {
		return nil, err
	}
	if f.Version != 0 && f.Version != 1 {
		return nil, fmt.Errorf("--offset-json-file %s: unsupported version %d", path, f.Version)
	}
	offs := kadm.Offsets{}
	for i, p := range f.Partitions {
		if p.Topic == "" || p.Partition == nil || p.Offset == nil || *p.Partition < 0 || *p.Offset < -1 {
			return nil, fmt.Errorf("--offset-json-file %s: partition entry %d needs topic, partition and offset (-1 for the high watermark)", path, i)
		}
		if _, dup := offs.Lookup(p.Topic, *p.Partition); dup {
			return nil, fmt.Errorf("--offset-json-file %s: %s-%d appears twice", path, p.Topic, *p.Partition)
		}
		offs.Add(kadm.Offset{Topic: p.Topic, Partition: *p.Partition, At: *p.Offset, LeaderEpoch: -1})
	}
	if len(offs) == 0 {
		return nil, fmt.Errorf("--offset-json-file %s: no partitions", path)
	}
	return offs, nil
}

// deletedRecords is one partition's result.
type deletedRecords struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	LowWatermark int64  `json:"low_watermark"`
	Error        string `json:"error,omitempty"`
}

func newDeleteRecordsCommand() *cobra.Command {
	var (
		file, topic string
		partitions  []int32
		offset      int64
	)
	cmd := &cobra.Command{
		Use:   "delete-records",
		Short: "Delete records before an offset (kafka-delete-records.sh)",
		Long: `Move partitions' log start offsets forward (DeleteRecords): records
before the offset can no longer be read. Give Kafka's --offset-json-file
({"partitions":[{"topic":"t","partition":0,"offset":5}],"version":1}) or
--topic with --offset and optionally --partition (default: every partition).
Offset -1 deletes up to the high watermark.`,
		Example: `  vltava delete-records --topic orders --partition 0 --offset 100
  vltava delete-records --topic orders --offset -1
  vltava delete-records --offset-json-file delete.json`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			fl := in.cmd.Flags()
			if (file != "") == (topic != "") {
				return errors.New("give --offset-json-file or --topic with --offset")
			}
			var offs kadm.Offsets
			if file != "" {
				if fl.Changed("offset") || len(partitions) > 0 {
					return errors.New("--offset-json-file takes no --offset or --partition")
				}
				var err error
				if offs, err = readDeleteRecordsFile(file); err != nil {
					return err
				}
			} else if !fl.Changed("offset") || offset < -1 {
				return errors.New("--offset N is required with --topic (-1: the high watermark)")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			if topic != "" {
				td, err := adm.ListTopics(in.ctx, topic)
				if err != nil {
					return fmt.Errorf("describing topic %q: %w", topic, err)
				}
				d, ok := td[topic]
				if !ok || d.Err != nil {
					return fmt.Errorf("topic %q does not exist", topic)
				}
				offs = kadm.Offsets{}
				ps := partitions
				if len(ps) == 0 {
					ps = d.Partitions.Numbers()
				}
				for _, p := range ps {
					if _, ok := d.Partitions[p]; !ok {
						return fmt.Errorf("topic %q has no partition %d", topic, p)
					}
					offs.Add(kadm.Offset{Topic: topic, Partition: p, At: offset, LeaderEpoch: -1})
				}
			}
			if !in.json {
				fmt.Fprintln(in.stdout, "Executing records delete operation")
			}
			resps, err := adm.DeleteRecords(in.ctx, offs)
			if err != nil {
				return fmt.Errorf("deleting records: %w", err)
			}
			rows := []deletedRecords{}
			failed := 0
			offs.Each(func(o kadm.Offset) {
				r := deletedRecords{Topic: o.Topic, Partition: o.Partition, LowWatermark: -1}
				switch resp, ok := resps.Lookup(o.Topic, o.Partition); {
				case !ok:
					r.Error = "no response from the cluster"
				case resp.Err != nil:
					r.Error = resp.Err.Error()
					if errors.Is(resp.Err, kerr.OffsetOutOfRange) {
						r.Error += " (the offset is past the high watermark)"
					}
				default:
					r.LowWatermark = resp.LowWatermark
				}
				if r.Error != "" {
					failed++
				}
				rows = append(rows, r)
			})
			sortByTopicPartition(rows, func(r deletedRecords) (string, int32) { return r.Topic, r.Partition })
			if in.json {
				if err := writeJSON(in.stdout, rows); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(in.stdout, "Records delete operation completed:")
				for _, r := range rows {
					if r.Error != "" {
						fmt.Fprintf(in.stdout, "partition: %s-%d\terror: %s\n", r.Topic, r.Partition, r.Error)
					} else {
						fmt.Fprintf(in.stdout, "partition: %s-%d\tlow_watermark: %d\n", r.Topic, r.Partition, r.LowWatermark)
					}
				}
			}
			if failed > 0 {
				return fmt.Errorf("deleting records failed for %d of %d partitions", failed, len(rows))
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&file, "offset-json-file", "", "Kafka's JSON file of partitions and offsets")
	f.StringVar(&topic, "topic", "", "topic whose records to delete")
	f.Int32SliceVar(&partitions, "partition", nil, "partition (repeatable; default every partition of --topic)")
	f.Int64Var(&offset, "offset", 0, "delete records before this offset (-1: the high watermark)")
	return cmd
}
