package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// State is an App's lifecycle state (Kafka Streams' KafkaStreams.State).
type State int32

// App states.
const (
	StateCreated State = iota
	StateRunning
	StatePendingShutdown
	StateNotRunning
	StateError
)

// String names the state as Kafka Streams does.
func (s State) String() string {
	return [...]string{"CREATED", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING", "ERROR"}[s]
}

// RestoreListener hears about state restoration from changelogs (Kafka
// Streams' StateRestoreListener). Calls come from stream threads.
type RestoreListener interface {
	// OnRestoreStart is called before a store's partition is restored
	// from its changelog, between startOffset and endOffset (exclusive).
	OnRestoreStart(store string, partition int32, startOffset, endOffset int64)
	// OnBatchRestored is called after each batch of changelog records is
	// applied: batchEndOffset is the batch's last offset, numRestored the
	// records it held.
	OnBatchRestored(store string, partition int32, batchEndOffset int64, numRestored int64)
	// OnRestoreEnd is called once the partition is restored, with the
	// total number of records applied.
	OnRestoreEnd(store string, partition int32, totalRestored int64)
}

// AppOption configures an App beyond its Config.
type AppOption func(*App)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) AppOption { return func(a *App) { a.log = l } }

// WithRestoreListener sets the restore listener.
func WithRestoreListener(l RestoreListener) AppOption { return func(a *App) { a.restore = l } }

// WithClientOptions adds franz-go options to every client the App creates
// (TLS, SASL, ...).
func WithClientOptions(o ...kgo.Opt) AppOption {
	return func(a *App) { a.clientOpts = append(a.clientOpts, o...) }
}

// App runs a Topology against a Kafka-compatible cluster, Kafka Streams'
// KafkaStreams: num.stream.threads threads in the consumer group
// application.id, each running the tasks the group assigns it.
type App struct {
	topo       *Topology
	cfg        Config
	log        *slog.Logger
	restore    RestoreListener
	clientOpts []kgo.Opt
	processID  string

	// Set by Start before threads run, read-only afterwards.
	topicSub      map[string]int   // resolved source topic -> sub-topology
	subTopics     map[int][]string // sub-topology -> resolved source topics
	subPartitions map[int]int32
	partitions    map[string]int32 // every topic the App writes or reads

	threads []*thread
	global  *globalThread
	state   atomic.Int32
	info    atomic.Pointer[assignmentInfo]
	wg      sync.WaitGroup
	cancel  context.CancelFunc

	mu struct {
		sync.Mutex
		err error // the first thread error
	}
	done chan struct{}
}

// New returns an App for topo with cfg. Nothing connects before Start.
func New(topo *Topology, cfg Config, options ...AppOption) (*App, error) {
	if len(cfg.BootstrapServers) == 0 {
		return nil, errors.New("streams config bootstrap.servers: required")
	}
	if cfg.ApplicationID == "" {
		return nil, errors.New("streams config application.id: required")
	}
	if cfg.NumStreamThreads < 1 {
		cfg.NumStreamThreads = 1
	}
	a := &App{topo: topo, cfg: cfg, log: slog.Default(), done: make(chan struct{})}
	for _, o := range options {
		o(a)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	a.processID = hex.EncodeToString(id[:])
	return a, nil
}

// State is the App's current state.
func (a *App) State() State { return State(a.state.Load()) }

func (a *App) newAdmin() (*kadm.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(a.cfg.BootstrapServers...)}, a.clientOpts...)...)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// Start checks the source topics, creates the internal topics, restores
// global tables and starts the stream threads. It returns once the threads
// run; a thread's later failure moves the App to StateError (see Wait).
func (a *App) Start(ctx context.Context) error {
	if !a.state.CompareAndSwap(int32(StateCreated), int32(StateRunning)) {
		return errors.New("streams: Start called twice")
	}
	adm, err := a.newAdmin()
	if err != nil {
		return a.startFailed(err)
	}
	defer adm.Close()
	if err := a.prepareTopics(ctx, adm); err != nil {
		return a.startFailed(err)
	}
	a.log.Info("streams starting", "process", a.processID, "config", strings.ReplaceAll(a.cfg.String(), "\n", " "))
	runCtx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	if a.topo.global != nil {
		g, err := newGlobalThread(ctx, a)
		if err != nil {
			cancel()
			return a.startFailed(err)
		}
		a.global = g
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.fail(g.run(runCtx)) }()
	}
	for i := 0; i < a.cfg.NumStreamThreads; i++ {
		th, err := newThread(a, i)
		if err != nil {
			cancel()
			a.wg.Wait()
			for _, th := range a.threads {
				th.cl.Close()
			}
			a.threads = nil
			return a.startFailed(err)
		}
		a.threads = append(a.threads, th)
	}
	for _, th := range a.threads {
		a.wg.Add(1)
		go func() { defer a.wg.Done(); a.fail(th.run(runCtx)) }()
	}
	go func() { a.wg.Wait(); close(a.done) }()
	return nil
}

// startFailed ends a Start that could not start the threads: the App is
// in ERROR, and Wait and Close return at once.
func (a *App) startFailed(err error) error {
	a.mu.Lock()
	a.mu.err = err
	a.mu.Unlock()
	a.state.Store(int32(StateError))
	close(a.done)
	return err
}

func (a *App) fail(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	a.mu.Lock()
	if a.mu.err == nil {
		a.mu.err = err
	}
	a.mu.Unlock()
	a.log.Error("stream thread failed", "err", err)
	a.state.Store(int32(StateError))
	a.cancel()
}

// Wait blocks until every thread stopped (after Close, or a failure) and
// returns the first thread error.
func (a *App) Wait() error {
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.err
}

// Close commits and closes every task, leaves the group and stops.
func (a *App) Close() error {
	if a.State() == StateCreated {
		a.state.Store(int32(StateNotRunning))
		return nil
	}
	if a.State() == StateRunning {
		a.state.Store(int32(StatePendingShutdown))
	}
	if a.cancel != nil {
		a.cancel()
	}
	err := a.Wait()
	if a.State() != StateError {
		a.state.Store(int32(StateNotRunning))
	}
	return err
}

// Metrics sums the counters of the tasks this instance runs now.
func (a *App) Metrics() TaskMetrics {
	var m TaskMetrics
	for _, th := range a.threads {
		th.mu.Lock()
		for _, t := range th.mu.tasks {
			m.add(t.metrics)
		}
		m.Processed += th.mu.closedProcessed
		th.mu.Unlock()
	}
	return m
}

// ThreadMetadata describes one stream thread of this instance (Kafka
// Streams' ThreadMetadata).
type ThreadMetadata struct {
	// ThreadName is the thread's client ID,
	// <client.id>-<process>-StreamThread-<n>.
	ThreadName string
	// ActiveTasks are the tasks the thread runs, sorted.
	ActiveTasks []TaskID
	// StandbyTasks are the standby tasks the thread keeps, sorted.
	StandbyTasks []TaskID
}

// LocalThreadsMetadata describes this instance's stream threads (Kafka
// Streams' KafkaStreams.metadataForLocalThreads).
func (a *App) LocalThreadsMetadata() []ThreadMetadata {
	clientID := a.cfg.ClientID
	if clientID == "" {
		clientID = a.cfg.ApplicationID
	}
	var out []ThreadMetadata
	for i, th := range a.threads {
		md := ThreadMetadata{ThreadName: fmt.Sprintf("%s-%s-StreamThread-%d", clientID, a.processID, i+1)}
		th.mu.Lock()
		for id := range th.mu.tasks {
			md.ActiveTasks = append(md.ActiveTasks, id)
		}
		th.mu.Unlock()
		th.standby.Lock()
		md.StandbyTasks = append(md.StandbyTasks, th.standby.running...)
		th.standby.Unlock()
		sort.Slice(md.ActiveTasks, func(i, j int) bool { return md.ActiveTasks[i].String() < md.ActiveTasks[j].String() })
		out = append(out, md)
	}
	return out
}

// prepareTopics checks that the source topics exist and are
// co-partitioned, sizes the repartition topics and creates the internal
// topics.
func (a *App) prepareTopics(ctx context.Context, adm *kadm.Client) error {
	user := a.topo.SourceTopics()
	details, err := adm.ListTopics(ctx, user...)
	if err != nil {
		return fmt.Errorf("streams: listing source topics: %w", err)
	}
	a.partitions = map[string]int32{}
	var missing []string
	for _, t := range user {
		d, ok := details[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) || len(d.Partitions) == 0 {
			missing = append(missing, t)
			continue
		}
		if d.Err != nil {
			return fmt.Errorf("streams: source topic %q: %w", t, d.Err)
		}
		a.partitions[t] = int32(len(d.Partitions))
	}
	if len(missing) > 0 {
		return fmt.Errorf("streams: source topics missing: %s (create them before starting %q; Kafka Streams' MissingSourceTopicException)", strings.Join(missing, ", "), a.cfg.ApplicationID)
	}
	a.topicSub, a.subTopics, a.subPartitions = map[string]int{}, map[int][]string{}, map[int]int32{}
	// Repartition topics take their count from the sub-topology writing
	// them (the max of its sources), unless given; iterate to a fixpoint
	// since a writer may itself read a repartition topic.
	writer := map[string]*subtopology{}
	fixed := map[string]int32{}
	sizeFrom := map[string][]*node{}
	for _, st := range a.topo.subs {
		for _, n := range st.nodes {
			if n.sink != nil && n.sink.internal {
				writer[n.sink.topic] = st
				if n.sink.numParts > 0 {
					fixed[n.sink.topic] = n.sink.numParts
				}
				if n.sink.sizeFrom != nil {
					sizeFrom[n.sink.topic] = n.sink.sizeFrom
				}
			}
		}
	}
	for range a.topo.subs {
		for topic, st := range writer {
			full := a.cfg.ApplicationID + "-" + topic
			if n, ok := fixed[topic]; ok {
				a.partitions[full] = n
				continue
			}
			var m int32
			if srcs, ok := sizeFrom[topic]; ok {
				for _, src := range srcs {
					for _, tp := range src.topics {
						m = max(m, a.partitions[resolveTopic(a.cfg.ApplicationID, src, tp)])
					}
				}
			} else {
				for tp, src := range st.sources {
					m = max(m, a.partitions[resolveTopic(a.cfg.ApplicationID, src, tp)])
				}
			}
			a.partitions[full] = m
		}
	}
	for _, st := range a.topo.subs {
		var n int32 = -1
		var first string
		for tp, src := range st.sources {
			full := resolveTopic(a.cfg.ApplicationID, src, tp)
			a.topicSub[full] = st.id
			a.subTopics[st.id] = append(a.subTopics[st.id], full)
			p := a.partitions[full]
			if p <= 0 {
				return fmt.Errorf("streams: cannot size %q", full)
			}
			if n == -1 {
				n, first = p, full
			} else if n != p {
				// Kafka Streams' TopologyException: co-partitioning.
				return fmt.Errorf("streams: topics %q (%d partitions) and %q (%d partitions) are joined or merged in sub-topology %d and must be co-partitioned (same partition count)", first, n, full, p, st.id)
			}
		}
		sort.Strings(a.subTopics[st.id])
		a.subPartitions[st.id] = n
	}
	// Internal topics: repartition (delete) and changelogs (compact).
	type want struct {
		parts   int32
		configs map[string]*string
	}
	compact, del := "compact", "delete"
	wants := map[string]want{}
	for topic := range writer {
		full := a.cfg.ApplicationID + "-" + topic
		wants[full] = want{a.partitions[full], map[string]*string{"cleanup.policy": &del}}
	}
	for _, st := range a.topo.subs {
		for _, s := range st.stores {
			spec := a.topo.stores[s]
			if spec.logged && !spec.global {
				full := changelogTopic(a.cfg.ApplicationID, s)
				a.partitions[full] = a.subPartitions[st.id]
				wants[full] = want{a.subPartitions[st.id], map[string]*string{"cleanup.policy": &compact}}
			}
		}
	}
	var names []string
	for n := range wants {
		names = append(names, n)
	}
	sort.Strings(names)
	existing, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return fmt.Errorf("streams: listing internal topics: %w", err)
	}
	for _, n := range names {
		w := wants[n]
		if d, ok := existing[n]; ok && d.Err == nil {
			if int32(len(d.Partitions)) != w.parts {
				return fmt.Errorf("streams: internal topic %q has %d partitions, want %d", n, len(d.Partitions), w.parts)
			}
			continue
		}
		resp, err := adm.CreateTopic(ctx, w.parts, a.cfg.ReplicationFactor, w.configs, n)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("streams: creating internal topic %q: %w", n, err)
		}
		if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("streams: creating internal topic %q: %w", n, resp.Err)
		}
	}
	return nil
}

func (a *App) setAssignmentInfo(i *assignmentInfo) { a.info.Store(i) }

// partitionsOf serves the collectors of stream threads.
func (a *App) partitionsOf(topic string) int32 { return a.partitions[topic] }

// localStores serves interactive queries from the tasks running here.
func (a *App) localStores(name string) (*storeSpec, []*storeInst, error) {
	spec, ok := a.topo.stores[name]
	if !ok {
		return nil, nil, fmt.Errorf("streams: no store %q", name)
	}
	if spec.global {
		if a.global == nil {
			return nil, nil, fmt.Errorf("streams: global store %q not running", name)
		}
		return spec, []*storeInst{a.global.stores[name]}, nil
	}
	var out []*storeInst
	for _, th := range a.threads {
		th.mu.Lock()
		for _, t := range th.mu.tasks {
			if s, ok := t.stores[name]; ok {
				out = append(out, s)
			}
		}
		th.mu.Unlock()
	}
	return spec, out, nil
}
