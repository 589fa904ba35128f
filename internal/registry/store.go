package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// StoreConfig says where the registry keeps its state.
type StoreConfig struct {
	// Topic is kafkastore.topic (default _schemas).
	Topic string
	// ReplicationFactor is kafkastore.topic.replication.factor; a cluster
	// with fewer brokers gets the topic with as many replicas as it has.
	ReplicationFactor int
	// Client are the kgo options reaching the cluster: seeds and the
	// kafkastore.security.protocol / sasl / ssl settings.
	Client []kgo.Opt
	// InitTimeout bounds creating the topic and reading it to the end at
	// start (kafkastore.init.timeout.ms).
	InitTimeout time.Duration
	// Timeout bounds one write: produced and read back (kafkastore.timeout.ms).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Store is the _schemas topic: a reader goroutine applying every record to
// the State in log order, and writes that return once read back, so a
// request sees its own write.
type Store struct {
	cfg   StoreConfig
	cl    *kgo.Client
	state *State
	log   *slog.Logger

	progressMu sync.Mutex    // guards next and progress
	next       int64         // offset of the next record to apply
	progress   chan struct{} // closed and replaced each time next advances

	cancel context.CancelFunc
	done   chan struct{}
}

// OpenStore creates the topic if it is missing, starts the reader and
// returns once the topic has been read to its end.
func OpenStore(ctx context.Context, cfg StoreConfig, state *State) (*Store, error) {
	if cfg.Topic == "" {
		cfg.Topic = "_schemas"
	}
	if cfg.InitTimeout <= 0 {
		cfg.InitTimeout = 60 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ictx, icancel := context.WithTimeout(ctx, cfg.InitTimeout)
	defer icancel()
	opts := append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DisableIdempotentWrite(),
	}, cfg.Client...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, cl: cl, state: state, log: cfg.Logger, progress: make(chan struct{}), done: make(chan struct{})}
	end, err := s.ensureTopic(ictx)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("schema registry store %s: %w", cfg.Topic, err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.read(rctx)
	if err := s.waitApplied(ictx, end); err != nil {
		s.Close()
		return nil, fmt.Errorf("schema registry store %s: reading to the end (offset %d): %w", cfg.Topic, end, err)
	}
	// A NOOP written and read back within the start-up bound, as
	// Confluent's store does at start: the producer has its metadata and
	// the first request's write does not spend kafkastore.timeout.ms (500
	// ms by default) on it.
	if err := s.produceAndWait(ictx, noopRecordKey(), nil); err != nil {
		s.Close()
		return nil, fmt.Errorf("schema registry store %s: first write: %w", cfg.Topic, err)
	}
	return s, nil
}

// ensureTopic creates the compacted single-partition topic if missing and
// returns its end offset.
func (s *Store) ensureTopic(ctx context.Context) (int64, error) {
	adm := kadm.NewClient(s.cl)
	for {
		ends, err := adm.ListEndOffsets(ctx, s.cfg.Topic)
		if err == nil {
			if o, ok := ends.Lookup(s.cfg.Topic, 0); ok && o.Err == nil {
				return o.Offset, nil
			} else if ok && !errors.Is(o.Err, kerr.UnknownTopicOrPartition) {
				err = o.Err
			} else {
				err = s.createTopic(ctx, adm)
			}
		}
		if err != nil {
			s.log.Info("schema registry store not ready", "topic", s.cfg.Topic, "err", err)
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return 0, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *Store) createTopic(ctx context.Context, adm *kadm.Client) error {
	rf := max(s.cfg.ReplicationFactor, 1)
	if md, err := adm.BrokerMetadata(ctx); err == nil && len(md.Brokers) > 0 && len(md.Brokers) < rf {
		s.log.Warn("fewer brokers than kafkastore.topic.replication.factor: creating the topic with one replica per broker",
			"topic", s.cfg.Topic, "brokers", len(md.Brokers), "replication.factor", rf)
		rf = len(md.Brokers)
	}
	resp, err := adm.CreateTopic(ctx, 1, int16(rf), map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, s.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}

// read applies the topic's records in order until ctx ends.
func (s *Store) read(ctx context.Context) {
	defer close(s.done)
	for {
		fs := s.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			s.log.Warn("schema registry store fetch", "topic", t, "partition", p, "err", err)
		})
		var last int64 = -1
		fs.EachRecord(func(r *kgo.Record) {
			rec, err := decodeRecord(r.Key, r.Value)
			if err != nil {
				s.log.Warn("schema registry store: skipping a record that is not the registry's", "offset", r.Offset, "err", err)
			} else {
				s.state.apply(rec)
			}
			last = r.Offset
		})
		if last >= 0 {
			s.advance(last + 1)
		}
	}
}

func (s *Store) advance(next int64) {
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	if next > s.next {
		s.next = next
		close(s.progress)
		s.progress = make(chan struct{})
	}
}

// waitApplied waits until every record below offset is applied.
func (s *Store) waitApplied(ctx context.Context, offset int64) error {
	for {
		s.progressMu.Lock()
		next, ch := s.next, s.progress
		s.progressMu.Unlock()
		if next >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-s.done:
			return errors.New("store closed")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// write appends one record and waits until the reader has applied it.
func (s *Store) write(ctx context.Context, key, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	return s.produceAndWait(ctx, key, value)
}

// produceAndWait appends one record and waits, within ctx, until the
// reader has applied it.
func (s *Store) produceAndWait(ctx context.Context, key, value []byte) error {
	r := &kgo.Record{Topic: s.cfg.Topic, Partition: 0, Key: key, Value: value}
	if err := s.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return err
	}
	return s.waitApplied(ctx, r.Offset+1)
}

// sync writes a NOOP and waits for it: afterwards everything written
// before, by any node, is applied here.
func (s *Store) sync(ctx context.Context) error { return s.write(ctx, noopRecordKey(), nil) }

// Close stops the reader and closes the client.
func (s *Store) Close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.cl.Close()
}
