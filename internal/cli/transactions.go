package cli

// vltava transactions: kafka-transactions.sh's subcommands and flags.
//
//	list               ListTransactions on every broker (--state,
//	                   --producer-id, --duration-filter as KIP-994,
//	                   --transactional-id-pattern as KIP-1152)
//	describe           DescribeTransactions of one --transactional-id
//	describe-producers DescribeProducers of one --topic --partition
//	abort              WriteTxnMarkers (abort) for the open transaction of a
//	                   partition, found by --start-offset through
//	                   DescribeProducers, or named by --producer-id,
//	                   --producer-epoch and --coordinator-epoch
//	find-hanging       open transactions on partitions (--topic
//	                   [--partition], or --broker-id) older than
//	                   --max-transaction-timeout minutes whose coordinator
//	                   no longer has the partition in an ongoing transaction:
//	                   the ones that hold a partition's last stable offset
//	                   back, to be aborted with `abort`

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTransactionsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transactions",
		Short: "List, describe, and abort transactions; find hanging ones (kafka-transactions.sh)",
		Example: `  vltava transactions list --state Ongoing
  vltava transactions describe --transactional-id payments-1
  vltava transactions describe-producers --topic orders --partition 0
  vltava transactions find-hanging --topic orders
  vltava transactions abort --topic orders --partition 0 --start-offset 1234`,
	}
	cmd.AddCommand(newTxnListCommand(), newTxnDescribeCommand(), newTxnDescribeProducersCommand(),
		newTxnAbortCommand(), newTxnFindHangingCommand())
	return cmd
}

type listedTxn struct {
	TransactionalID string `json:"transactional_id"`
	Coordinator     int32  `json:"coordinator"`
	ProducerID      int64  `json:"producer_id"`
	State           string `json:"state"`
}

func newTxnListCommand() *cobra.Command {
	var states []string
	var producerIDs []int64
	var durationMs int64
	var pattern string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the transactional ids of every coordinator",
		Example: `  vltava transactions list --state Ongoing --duration-filter 60000 --output json`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			cl, _, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = states, producerIDs, durationMs
			if pattern != "" {
				req.TransactionalIDPattern = &pattern
			}
			var rows []listedTxn
			var errs []error
			for _, shard := range cl.RequestSharded(in.ctx, req) {
				if shard.Err != nil {
					errs = append(errs, fmt.Errorf("broker %d: %w", shard.Meta.NodeID, shard.Err))
					continue
				}
				resp := shard.Resp.(*kmsg.ListTransactionsResponse)
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					errs = append(errs, fmt.Errorf("broker %d: %w", shard.Meta.NodeID, err))
				}
				for _, st := range resp.TransactionStates {
					rows = append(rows, listedTxn{st.TransactionalID, shard.Meta.NodeID, st.ProducerID, st.TransactionState})
				}
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].TransactionalID < rows[j].TransactionalID })
			if err := errors.Join(errs...); err != nil {
				return fmt.Errorf("listing transactions: %w", err)
			}
			if in.json {
				if rows == nil {
					rows = []listedTxn{}
				}
				return writeJSON(in.stdout, rows)
			}
			t := newTable(in.stdout, "TransactionalId", "Coordinator", "ProducerId", "TransactionState")
			for _, r := range rows {
				t.row(r.TransactionalID, r.Coordinator, r.ProducerID, r.State)
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only transactions in these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort)")
	cmd.Flags().Int64SliceVar(&producerIDs, "producer-id", nil, "only these producer ids")
	cmd.Flags().Int64Var(&durationMs, "duration-filter", -1, "only transactions started at least this many milliseconds ago")
	cmd.Flags().StringVar(&pattern, "transactional-id-pattern", "", "only transactional ids this regular expression matches")
	return cmd
}

type describedTxn struct {
	Coordinator     int32    `json:"coordinator"`
	TransactionalID string   `json:"transactional_id"`
	ProducerID      int64    `json:"producer_id"`
	ProducerEpoch   int16    `json:"producer_epoch"`
	State           string   `json:"state"`
	TimeoutMs       int32    `json:"transaction_timeout_ms"`
	StartTimeMs     int64    `json:"current_transaction_start_time_ms"`
	DurationMs      int64    `json:"transaction_duration_ms"`
	Partitions      []string `json:"topic_partitions"`
}

func newTxnDescribeCommand() *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:     "describe",
		Short:   "Describe a transactional id",
		Example: `  vltava transactions describe --transactional-id payments-1`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if id == "" {
				return errors.New("--transactional-id is required")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			ds, err := adm.DescribeTransactions(in.ctx, id)
			if err != nil {
				return fmt.Errorf("describing %s: %w", id, err)
			}
			d, ok := ds[id]
			if !ok {
				return fmt.Errorf("describing %s: no answer", id)
			}
			if d.Err != nil {
				return fmt.Errorf("describing %s: %w", id, d.Err)
			}
			row := describedTxn{Coordinator: d.Coordinator, TransactionalID: d.TxnID, ProducerID: d.ProducerID,
				ProducerEpoch: d.ProducerEpoch, State: d.State, TimeoutMs: d.TimeoutMillis, StartTimeMs: d.StartTimestamp,
				DurationMs: -1, Partitions: []string{}}
			if d.StartTimestamp >= 0 && d.State == "Ongoing" {
				row.DurationMs = time.Now().UnixMilli() - d.StartTimestamp
			}
			d.Topics.Sorted().Each(func(t string, p int32) { row.Partitions = append(row.Partitions, fmt.Sprintf("%s-%d", t, p)) })
			if in.json {
				return writeJSON(in.stdout, row)
			}
			t := newTable(in.stdout, "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
				"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions")
			start, dur := "None", "None"
			if row.StartTimeMs >= 0 {
				start = fmt.Sprint(row.StartTimeMs)
			}
			if row.DurationMs >= 0 {
				dur = fmt.Sprint(row.DurationMs)
			}
			t.row(row.Coordinator, row.TransactionalID, row.ProducerID, row.ProducerEpoch, row.State, row.TimeoutMs, start, dur,
				strings.Join(row.Partitions, ","))
			return t.flush()
		}),
	}
	cmd.Flags().StringVar(&id, "transactional-id", "", "the transactional id (required)")
	return cmd
}

type describedProducer struct {
	Topic                 string `json:"topic"`
	Partition             int32  `json:"partition"`
	ProducerID            int64  `json:"producer_id"`
	ProducerEpoch         int16  `json:"producer_epoch"`
	CoordinatorEpoch      int32  `json:"latest_coordinator_epoch"`
	LastSequence          int32  `json:"last_sequence"`
	LastTimestamp         int64  `json:"last_timestamp"`
	CurrentTxnStartOffset int64  `json:"current_transaction_start_offset"`
}

// describeProducers returns the active producers of the partitions in s.
func describeProducers(ctx context.Context, adm *kadm.Client, s kadm.TopicsSet) ([]describedProducer, error) {
	ds, err := adm.DescribeProducers(ctx, s)
	if err != nil {
		return nil, err
	}
	var errs []error
	var out []describedProducer
	for _, p := range ds.SortedPartitions() {
		if p.Err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", p.Topic, p.Partition, p.Err))
			continue
		}
		for _, pr := range p.ActiveProducers.Sorted() {
			out = append(out, describedProducer{pr.Topic, pr.Partition, pr.ProducerID, pr.ProducerEpoch, pr.CoordinatorEpoch,
				pr.LastSequence, pr.LastTimestamp, pr.CurrentTxnStartOffset})
		}
	}
	return out, errors.Join(errs...)
}

func newTxnDescribeProducersCommand() *cobra.Command {
	var topic string
	var partition int32
	cmd := &cobra.Command{
		Use:     "describe-producers",
		Short:   "Describe the active producers of a partition",
		Example: `  vltava transactions describe-producers --topic orders --partition 0`,
		Args:    cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if topic == "" || partition < 0 {
				return errors.New("--topic and --partition are required")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			rows, err := describeProducers(in.ctx, adm, kadm.TopicsSet{topic: {partition: {}}})
			if err != nil {
				return fmt.Errorf("describing producers: %w", err)
			}
			if in.json {
				if rows == nil {
					rows = []describedProducer{}
				}
				return writeJSON(in.stdout, rows)
			}
			t := newTable(in.stdout, "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset")
			for _, r := range rows {
				start := "None"
				if r.CurrentTxnStartOffset >= 0 {
					start = fmt.Sprint(r.CurrentTxnStartOffset)
				}
				t.row(r.ProducerID, r.ProducerEpoch, r.CoordinatorEpoch, r.LastSequence, r.LastTimestamp, start)
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic (required)")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition (required)")
	return cmd
}

func newTxnAbortCommand() *cobra.Command {
	var topic string
	var partition int32
	var startOffset, producerID int64
	var producerEpoch int16
	var coordinatorEpoch int32
	cmd := &cobra.Command{
		Use:   "abort",
		Short: "Abort the open transaction of a partition (writes an abort marker to the partition's leader)",
		Example: `  vltava transactions abort --topic orders --partition 0 --start-offset 1234
  vltava transactions abort --topic orders --partition 0 --producer-id 7 --producer-epoch 3 --coordinator-epoch 5`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if topic == "" || partition < 0 {
				return errors.New("--topic and --partition are required")
			}
			byOffset := in.cmd.Flags().Changed("start-offset")
			byProducer := in.cmd.Flags().Changed("producer-id")
			if byOffset == byProducer {
				return errors.New("give either --start-offset or --producer-id with --producer-epoch and --coordinator-epoch")
			}
			if byProducer && (!in.cmd.Flags().Changed("producer-epoch") || !in.cmd.Flags().Changed("coordinator-epoch")) {
				return errors.New("--producer-id needs --producer-epoch and --coordinator-epoch")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			s := kadm.TopicsSet{topic: {partition: {}}}
			m := kadm.TxnMarkers{ProducerID: producerID, ProducerEpoch: producerEpoch, CoordinatorEpoch: coordinatorEpoch, Topics: s}
			if byOffset {
				producers, err := describeProducers(in.ctx, adm, s)
				if err != nil {
					return fmt.Errorf("describing producers: %w", err)
				}
				i := slices.IndexFunc(producers, func(p describedProducer) bool { return p.CurrentTxnStartOffset == startOffset })
				if i < 0 {
					return fmt.Errorf("no open transaction starts at offset %d of %s-%d", startOffset, topic, partition)
				}
				p := producers[i]
				m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = p.ProducerID, p.ProducerEpoch, p.CoordinatorEpoch
			}
			resp, err := adm.WriteTxnMarkers(in.ctx, m)
			if err != nil {
				return fmt.Errorf("writing the abort marker: %w", err)
			}
			var errs []error
			resp.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
				if p.Err != nil {
					errs = append(errs, fmt.Errorf("%s-%d: %w", p.Topic, p.Partition, p.Err))
				}
			})
			if err := errors.Join(errs...); err != nil {
				return fmt.Errorf("writing the abort marker: %w", err)
			}
			fmt.Fprintf(in.stdout, "Aborted the transaction of producer %d (epoch %d) on %s-%d\n", m.ProducerID, m.ProducerEpoch, topic, partition)
			return nil
		}),
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic (required)")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition (required)")
	cmd.Flags().Int64Var(&startOffset, "start-offset", -1, "the first offset of the transaction to abort (see describe-producers)")
	cmd.Flags().Int64Var(&producerID, "producer-id", -1, "the producer id of the transaction to abort")
	cmd.Flags().Int16Var(&producerEpoch, "producer-epoch", -1, "its producer epoch")
	cmd.Flags().Int32Var(&coordinatorEpoch, "coordinator-epoch", -1, "its coordinator epoch")
	return cmd
}

type hangingTxn struct {
	describedProducer
	DurationMinutes int64 `json:"duration_minutes"`
}

func newTxnFindHangingCommand() *cobra.Command {
	var topic string
	var partition, brokerID int32
	var maxTimeoutMin int64
	cmd := &cobra.Command{
		Use:   "find-hanging",
		Short: "Find open transactions whose coordinator has moved on (they hold the last stable offset back)",
		Example: `  vltava transactions find-hanging --topic orders
  vltava transactions find-hanging --broker-id 2 --max-transaction-timeout 5`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error {
			if (topic == "") == (brokerID < 0) {
				return errors.New("give either --topic (with an optional --partition) or --broker-id")
			}
			_, adm, err := in.cluster(in.ctx)
			if err != nil {
				return err
			}
			meta, err := adm.Metadata(in.ctx)
			if err != nil {
				return fmt.Errorf("reading metadata: %w", err)
			}
			s := kadm.TopicsSet{}
			for _, td := range meta.Topics.Sorted() {
				if topic != "" && td.Topic != topic {
					continue
				}
				for _, pd := range td.Partitions.Sorted() {
					if (partition >= 0 && pd.Partition != partition) || (brokerID >= 0 && !slices.Contains(pd.Replicas, brokerID)) {
						continue
					}
					s.Add(td.Topic, pd.Partition)
				}
			}
			if len(s) == 0 {
				return errors.New("no partition matches")
			}
			hanging, err := findHanging(in.ctx, adm, s, time.Duration(maxTimeoutMin)*time.Minute)
			if err != nil {
				return err
			}
			if in.json {
				if hanging == nil {
					hanging = []hangingTxn{}
				}
				return writeJSON(in.stdout, hanging)
			}
			t := newTable(in.stdout, "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)")
			for _, h := range hanging {
				t.row(h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch, h.CoordinatorEpoch, h.CurrentTxnStartOffset, h.LastTimestamp, h.DurationMinutes)
			}
			return t.flush()
		}),
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the topic to search")
	cmd.Flags().Int32Var(&partition, "partition", -1, "the partition of --topic to search")
	cmd.Flags().Int32Var(&brokerID, "broker-id", -1, "search the partitions this broker hosts")
	cmd.Flags().Int64Var(&maxTimeoutMin, "max-transaction-timeout", 15, "transactions open longer than this many minutes are candidates (transaction.max.timeout.ms)")
	return cmd
}

// findHanging is kafka-transactions.sh's find-hanging: the open
// transactions of the partitions' producers that started more than
// maxTimeout ago, less those their coordinator still has ongoing with that
// partition (a live transaction the coordinator will time out itself).
func findHanging(ctx context.Context, adm *kadm.Client, s kadm.TopicsSet, maxTimeout time.Duration) ([]hangingTxn, error) {
	producers, err := describeProducers(ctx, adm, s)
	if err != nil {
		return nil, fmt.Errorf("describing producers: %w", err)
	}
	now := time.Now()
	var candidates []hangingTxn
	pids := map[int64]bool{}
	for _, p := range producers {
		if p.CurrentTxnStartOffset < 0 {
			continue
		}
		age := now.Sub(time.UnixMilli(p.LastTimestamp))
		if age < maxTimeout {
			continue
		}
		candidates = append(candidates, hangingTxn{p, int64(age / time.Minute)})
		pids[p.ProducerID] = true
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	var ids []int64
	for id := range pids {
		ids = append(ids, id)
	}
	listed, err := adm.ListTransactions(ctx, ids, nil)
	if err != nil {
		return nil, fmt.Errorf("listing transactions: %w", err)
	}
	described, err := adm.DescribeTransactions(ctx, listed.TransactionalIDs()...)
	if err != nil && len(listed) > 0 {
		return nil, fmt.Errorf("describing transactions: %w", err)
	}
	var out []hangingTxn
	for _, c := range candidates {
		live := false
		for _, d := range described {
			if d.Err != nil || d.ProducerID != c.ProducerID || d.State != "Ongoing" {
				continue
			}
			if _, ok := d.Topics[c.Topic][c.Partition]; ok {
				live = true
			}
		}
		if !live {
			out = append(out, c)
		}
	}
	return out, nil
}
