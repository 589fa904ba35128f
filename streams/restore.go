package streams

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// restoreIdle is how long a read_committed restore waits for more records
// below the last stable offset before taking the rest for transaction
// markers and aborted records, which a consumer never sees.
const restoreIdle = time.Second

// restoreStores replays changelogs into stores: stores[topic][partition].
// Under exactly_once_v2 it reads committed records up to the last stable
// offset, so an aborted transaction's writes never reach a store.
func (a *App) restoreStores(ctx context.Context, stores map[string]map[int32]*storeInst) error {
	if len(stores) == 0 {
		return nil
	}
	adm, err := a.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	var topics []string
	for t := range stores {
		topics = append(topics, t)
	}
	eos := a.cfg.ProcessingGuarantee == ExactlyOnceV2
	var ends kadm.ListedOffsets
	// A partition leader may be moving (a broker down): retry for a while
	// before failing the thread, as Kafka Streams' restore consumer does.
	deadline := time.Now().Add(2 * time.Minute)
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
		if eos {
			ends, err = adm.ListCommittedOffsets(ctx, topics...) // the last stable offsets
		} else {
			ends, err = adm.ListEndOffsets(ctx, topics...)
		}
		if err == nil {
			err = ends.Error()
		}
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		a.log.Warn("listing changelog end offsets; retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
	if err != nil {
		return fmt.Errorf("streams: listing changelog end offsets: %w", err)
	}
	consume := map[string]map[int32]kgo.Offset{}
	type prog struct {
		end, next, n int64
		s            *storeInst
	}
	todo := map[string]map[int32]*prog{}
	for t, parts := range stores {
		for p, s := range parts {
			end := int64(0)
			if lo, ok := ends.Lookup(t, p); ok {
				end = lo.Offset
			}
			from := s.restoreFrom
			if a.restore != nil {
				a.restore.OnRestoreStart(s.spec.name, p, from, end)
			}
			if end <= from {
				if a.restore != nil {
					a.restore.OnRestoreEnd(s.spec.name, p, 0)
				}
				continue
			}
			if consume[t] == nil {
				consume[t] = map[int32]kgo.Offset{}
				todo[t] = map[int32]*prog{}
			}
			consume[t][p] = kgo.NewOffset().At(from)
			todo[t][p] = &prog{end: end, next: from, s: s}
		}
	}
	if len(consume) == 0 {
		return nil
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(a.cfg.BootstrapServers...), kgo.ConsumePartitions(consume)}, a.clientOpts...)
	if eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	remaining := 0
	for _, ps := range todo {
		remaining += len(ps)
	}
	lastRecord := time.Now()
	for remaining > 0 {
		pctx, cancel := context.WithTimeout(ctx, restoreIdle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		got := false
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err != nil {
				return
			}
			pr := todo[fp.Topic][fp.Partition]
			if pr == nil || pr.next >= pr.end {
				return
			}
			var batch int64
			for _, r := range fp.Records {
				if r.Offset >= pr.end {
					break
				}
				pr.s.bs.put(r.Key, r.Value)
				batch++
				pr.next = r.Offset + 1
				got = true
			}
			pr.n += batch
			if a.restore != nil && batch > 0 {
				// Kafka's onBatchRestored: the batch's last offset and
				// its record count.
				a.restore.OnBatchRestored(pr.s.spec.name, fp.Partition, pr.next-1, batch)
			}
		})
		if err := fetchErr(fs); err != nil {
			return fmt.Errorf("streams: restoring: %w", err)
		}
		if got {
			lastRecord = time.Now()
		}
		idle := time.Since(lastRecord) >= restoreIdle
		for t, ps := range todo {
			for p, pr := range ps {
				if pr.next >= pr.end || eos && idle {
					if a.restore != nil {
						a.restore.OnRestoreEnd(pr.s.spec.name, p, pr.n)
					}
					delete(ps, p)
					remaining--
				}
			}
			if len(ps) == 0 {
				delete(todo, t)
			}
		}
	}
	return nil
}

// fetchErr is the first fetch error that is not a poll deadline.
func fetchErr(fs kgo.Fetches) error {
	var out error
	fs.EachError(func(t string, p int32, err error) {
		if out == nil && err != context.DeadlineExceeded && err != context.Canceled {
			out = fmt.Errorf("%s-%d: %w", t, p, err)
		}
	})
	return out
}
