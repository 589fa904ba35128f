package streams

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// globalThread keeps the global tables' stores: it reads every partition
// of their topics from the start, outside any group (Kafka Streams'
// GlobalStreamThread). Start returns after it caught up with the topics'
// end offsets. Its goroutine owns the global task; stream threads read the
// stores concurrently (both backends allow that).
type globalThread struct {
	a      *App
	cl     *kgo.Client
	t      *task
	stores map[string]*storeInst
}

func newGlobalThread(ctx context.Context, a *App) (*globalThread, error) {
	g := &globalThread{a: a, stores: map[string]*storeInst{}}
	dir := filepath.Join(a.cfg.StateDir, a.cfg.ApplicationID, a.processID, "global")
	for _, name := range a.topo.global.stores {
		s, err := openStore(a.cfg.ApplicationID, a.topo.stores[name], dir, "", nil)
		if err != nil {
			return nil, err
		}
		g.stores[name] = s
	}
	var topics []string
	for t := range a.topo.global.sources {
		topics = append(topics, t)
	}
	t, err := newTask(TaskID{Subtopology: -1}, a.topo, a.topo.global, a.cfg.ApplicationID, g, g.stores, nil, a.cfg.DeserializationHandler, a.cfg.TimestampExtractor, a.log, func() int64 { return time.Now().UnixMilli() })
	if err != nil {
		return nil, err
	}
	g.t = t
	opts := append([]kgo.Opt{kgo.SeedBrokers(a.cfg.BootstrapServers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, a.clientOpts...)
	if a.cfg.ProcessingGuarantee == ExactlyOnceV2 {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	g.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	adm, err := a.newAdmin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		g.cl.Close()
		return nil, fmt.Errorf("streams: global tables: %w", err)
	}
	// Bootstrap: apply everything up to the end offsets seen now.
	remaining := map[string]map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			if remaining[o.Topic] == nil {
				remaining[o.Topic] = map[int32]int64{}
			}
			remaining[o.Topic][o.Partition] = o.Offset
		}
	})
	idleSince := time.Now()
	for len(remaining) > 0 {
		pctx, cancel := context.WithTimeout(ctx, restoreIdle)
		fs := g.cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			g.cl.Close()
			return nil, err
		}
		if err := g.apply(fs); err != nil {
			g.cl.Close()
			return nil, err
		}
		if fs.NumRecords() > 0 {
			idleSince = time.Now()
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := remaining[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining[r.Topic], r.Partition)
				if len(remaining[r.Topic]) == 0 {
					delete(remaining, r.Topic)
				}
			}
		})
		if time.Since(idleSince) >= restoreIdle && a.cfg.ProcessingGuarantee == ExactlyOnceV2 {
			break // only markers or aborted records remain
		}
	}
	return g, nil
}

func (g *globalThread) apply(fs kgo.Fetches) error {
	var err error
	fs.EachRecord(func(r *kgo.Record) {
		if err == nil {
			err = g.t.process(r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Timestamp.UnixMilli(), r.Headers)
		}
	})
	return err
}

func (g *globalThread) run(ctx context.Context) error {
	defer func() {
		g.cl.Close()
		g.t.close()
	}()
	for {
		fs := g.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		if err := g.apply(fs); err != nil {
			return err
		}
	}
}

// Global tables write nothing.
func (g *globalThread) send(topic string, _, _ []byte, _ int64, _ []kgo.RecordHeader, _ int32) {
	panic(processingError{fmt.Errorf("streams: global table processor wrote to %q", topic)})
}

func (g *globalThread) partitions(string) int32 { return 0 }
