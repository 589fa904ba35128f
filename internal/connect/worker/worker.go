package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/connect"
)

// Listener receives the worker's events; its methods are called from the
// worker's goroutines and must not block for long.
type Listener interface {
	// OnStatus reports a connector's or task's new state.
	OnStatus(s Status)
	// OnTopic reports that a connector used a topic (KIP-558).
	OnTopic(connector, topic string)
	// OnReconfigure reports a connector's request for new task configs.
	OnReconfigure(connector string)
}

// Worker runs connector and task instances: the herder tells it what to
// run, it reports their states to the Listener.
type Worker struct {
	cfg      *Config
	log      *slog.Logger
	offsets  OffsetStore
	listener Listener
	id       string

	mu         sync.Mutex // guards connectors, tasks and restarts; never held across a plugin call or I/O
	connectors map[string]*connectorRun
	tasks      map[TaskID]*taskRun
	restarts   map[TaskID]int // automatic restarts since the task last ran well
	closed     bool
}

// New returns a worker; nothing runs until the herder starts connectors.
func New(cfg *Config, offsets OffsetStore, l Listener, log *slog.Logger) *Worker {
	if log == nil {
		log = slog.Default()
	}
	return &Worker{
		cfg: cfg, log: log.With("component", "connect"), offsets: offsets, listener: l, id: cfg.WorkerID(),
		connectors: map[string]*connectorRun{}, tasks: map[TaskID]*taskRun{}, restarts: map[TaskID]int{},
	}
}

// ID is the worker id statuses carry.
func (w *Worker) ID() string { return w.id }

// Config is the worker configuration.
func (w *Worker) Config() *Config { return w.cfg }

// Offsets is the worker's offset store.
func (w *Worker) Offsets() OffsetStore { return w.offsets }

func (w *Worker) report(id TaskID, st State, err error) {
	s := Status{ID: id, State: st, WorkerID: w.id}
	if err != nil {
		s.Trace = errorTrace(err)
	}
	w.listener.OnStatus(s)
}

// ClientOpts are the options of every Kafka client the worker makes:
// bootstrap, client id and the security settings.
func (w *Worker) ClientOpts(clientID string) []kgo.Opt { return w.cfg.ClientOpts(clientID, w.log) }

// ClientOpts are the options of a Kafka client of the worker.
func (c *Config) ClientOpts(clientID string, log *slog.Logger) []kgo.Opt {
	if c.ClientID != "" {
		clientID = c.ClientID + "-" + clientID
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Bootstrap...),
		kgo.ClientID(clientID),
		kgo.MetadataMinAge(500 * time.Millisecond),
		kgo.WithLogger(kgoLogger{log}),
	}
	return append(opts, c.Security.KgoOpts()...)
}

// connectorRun is one running connector instance.
type connectorRun struct {
	name   string
	props  map[string]string
	conn   connect.Connector
	kind   ConnectorKind
	target TargetState
	// started: conn.Start succeeded and Stop is owed. Read and written
	// only by the herder goroutine calling the worker's methods.
	started bool
}

type connCtx struct {
	w    *Worker
	name string
}

func (c connCtx) RequestTaskReconfiguration() { c.w.listener.OnReconfigure(c.name) }
func (c connCtx) RaiseError(err error) {
	c.w.log.Error("connector raised an error", "connector", c.name, "err", err)
	c.w.report(TaskID{c.name, -1}, Failed, err)
}

// StartConnector creates the connector and, unless the target is not
// STARTED, starts it. A failure is reported as the FAILED state, not
// returned: the worker stays up.
func (w *Worker) StartConnector(name string, props map[string]string, target TargetState) {
	w.mu.Lock()
	if w.closed || w.connectors[name] != nil {
		w.mu.Unlock()
		return
	}
	cr := &connectorRun{name: name, props: props, target: target}
	w.connectors[name] = cr
	w.mu.Unlock()
	id := TaskID{name, -1}
	conn, _, err := connect.NewConnector(props[KeyConnectorClass])
	if err != nil {
		w.report(id, Failed, err)
		return
	}
	cr.conn, cr.kind = conn, KindOf(conn)
	conn.Initialize(connCtx{w, name})
	w.transitionConnector(cr, target)
}

func (w *Worker) transitionConnector(cr *connectorRun, target TargetState) {
	id := TaskID{cr.name, -1}
	cr.target = target
	if cr.conn == nil {
		return // failed at creation
	}
	switch target {
	case TargetStarted:
		if !cr.started {
			if err := safeCall(func() error { return cr.conn.Start(cr.props) }); err != nil {
				w.log.Error("connector failed to start", "connector", cr.name, "err", err)
				w.report(id, Failed, err)
				return
			}
			cr.started = true
		}
		w.report(id, Running, nil)
	case TargetPaused, TargetStopped:
		if cr.started {
			if err := safeCall(cr.conn.Stop); err != nil {
				w.log.Warn("connector stop failed", "connector", cr.name, "err", err)
			}
			cr.started = false
		}
		if target == TargetPaused {
			w.report(id, Paused, nil)
		} else {
			w.report(id, Stopped, nil)
		}
	}
}

// SetConnectorTarget moves a running connector to a target state.
func (w *Worker) SetConnectorTarget(name string, target TargetState) {
	w.mu.Lock()
	cr := w.connectors[name]
	w.mu.Unlock()
	if cr != nil {
		w.transitionConnector(cr, target)
	}
}

// IsRunning reports whether the connector instance is on this worker.
func (w *Worker) IsRunning(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.connectors[name] != nil
}

// ConnectorKind is the kind of a connector running here.
func (w *Worker) ConnectorKind(name string) ConnectorKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cr := w.connectors[name]; cr != nil {
		return cr.kind
	}
	return KindUnknown
}

// TaskConfigs asks a started connector for its task configs (at most
// tasks.max, unless tasks.max.enforce=false). Each gets the connector's
// topics/topic settings the sink loop needs.
func (w *Worker) TaskConfigs(name string) ([]map[string]string, error) {
	w.mu.Lock()
	cr := w.connectors[name]
	w.mu.Unlock()
	if cr == nil || !cr.started {
		return nil, fmt.Errorf("connector %s is not running on this worker", name)
	}
	max := TasksMax(cr.props)
	var cfgs []map[string]string
	err := safeCall(func() error {
		var err error
		cfgs, err = cr.conn.TaskConfigs(max)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(cfgs) > max && cr.props[KeyTasksMaxEnforce] != "false" {
		err := fmt.Errorf("the connector %s has generated %d tasks, which is greater than %d, the maximum number of tasks it is configured to create", name, len(cfgs), max)
		w.report(TaskID{name, -1}, Failed, err)
		return nil, err
	}
	out := make([]map[string]string, len(cfgs))
	for i, c := range cfgs {
		m := make(map[string]string, len(c)+1)
		for k, v := range c {
			m[k] = v
		}
		if cr.kind == KindSink {
			for _, k := range []string{KeyTopics, KeyTopicsRegex} {
				if v, ok := cr.props[k]; ok {
					m[k] = v
				}
			}
		}
		out[i] = m
	}
	return out, nil
}

// StopConnector stops and forgets a connector instance (its tasks are
// stopped separately).
func (w *Worker) StopConnector(name string) {
	w.mu.Lock()
	cr := w.connectors[name]
	delete(w.connectors, name)
	w.mu.Unlock()
	if cr == nil || cr.conn == nil || !cr.started {
		return
	}
	if err := safeCall(cr.conn.Stop); err != nil {
		w.log.Warn("connector stop failed", "connector", name, "err", err)
	}
}

// Connectors lists the connectors running here.
func (w *Worker) Connectors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.connectors))
	for n := range w.connectors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Tasks lists the tasks running here.
func (w *Worker) Tasks() []TaskID {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]TaskID, 0, len(w.tasks))
	for id := range w.tasks {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Connector != out[j].Connector {
			return out[i].Connector < out[j].Connector
		}
		return out[i].Task < out[j].Task
	})
	return out
}

// safeCall runs plugin code, turning a panic into an error so a faulty
// plugin fails its connector or task, never the worker.
func safeCall(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}

// Stop stops every task and connector.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.closed = true
	var tasks []*taskRun
	for _, t := range w.tasks {
		tasks = append(tasks, t)
	}
	var names []string
	for n := range w.connectors {
		names = append(names, n)
	}
	w.mu.Unlock()
	for _, t := range tasks {
		t.stop()
	}
	for _, t := range tasks {
		t.wait(w.cfg.TaskShutdownTimeout)
	}
	w.mu.Lock()
	w.tasks = map[TaskID]*taskRun{}
	w.mu.Unlock()
	for _, n := range names {
		w.StopConnector(n)
	}
}

var errStopped = errors.New("task stopped")

// kgoLogger sends franz-go's warnings and errors to the worker's log.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }
func (k kgoLogger) Log(level kgo.LogLevel, msg string, kv ...any) {
	switch level {
	case kgo.LogLevelError:
		k.l.Error(msg, kv...)
	default:
		k.l.Warn(msg, kv...)
	}
}

var _ = context.Background
