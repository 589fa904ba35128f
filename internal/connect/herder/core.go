package herder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/connect/worker"
)

// clusterState is what the Connect cluster is asked to run.
type clusterState struct {
	configs map[string]map[string]string
	targets map[string]worker.TargetState
	tasks   map[string][]map[string]string
}

func newClusterState() clusterState {
	return clusterState{configs: map[string]map[string]string{}, targets: map[string]worker.TargetState{}, tasks: map[string][]map[string]string{}}
}

func (s clusterState) clone() clusterState {
	c := newClusterState()
	maps.Copy(c.configs, s.configs)
	maps.Copy(c.targets, s.targets)
	maps.Copy(c.tasks, s.tasks)
	return c
}

func (s clusterState) target(name string) worker.TargetState {
	if t, ok := s.targets[name]; ok {
		return t
	}
	return worker.TargetStarted
}

// core is what both herders share: the worker, the cluster state, the
// statuses and topics, and reconciling the worker with the state.
type core struct {
	w   *worker.Worker
	cfg *worker.Config
	log *slog.Logger
	cl  *kgo.Client
	adm *kadm.Client

	clusterID string

	mu       sync.Mutex // guards st, statuses, topics, running*; never held across worker or Kafka calls
	st       clusterState
	statuses map[worker.TaskID]worker.Status
	topics   map[string]map[string]bool
	// runningConns and runningTasks are the configs the worker's instances
	// were started with, to tell a changed config.
	runningConns map[string]map[string]string
	runningTasks map[worker.TaskID]map[string]string
	taskConns    map[worker.TaskID]map[string]string // the connector config each running task started with

	opMu sync.Mutex // serialises reconcile and the operations that change the worker

	// assigned says which connectors and tasks run here (nil: all).
	assigned func() (map[string]bool, map[worker.TaskID]bool)
	// onStatus publishes a status (the status topic), after it is kept.
	onStatus func(worker.Status)
	// onTopic publishes a newly used topic.
	onTopic func(connector, topic string)
	// onReconfigure is called (on its own goroutine) when a connector asks
	// for new task configs.
	onReconfigure func(name string)
}

func newCore(cfg *worker.Config, offsets worker.OffsetStore, log *slog.Logger) (*core, error) {
	c := &core{cfg: cfg, log: log, st: newClusterState(), statuses: map[worker.TaskID]worker.Status{},
		topics: map[string]map[string]bool{}, runningConns: map[string]map[string]string{}, runningTasks: map[worker.TaskID]map[string]string{}, taskConns: map[worker.TaskID]map[string]string{}}
	c.w = worker.New(cfg, offsets, c, log)
	cl, err := kgo.NewClient(c.w.ClientOpts("connect-herder")...)
	if err != nil {
		return nil, err
	}
	c.cl, c.adm = cl, kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := c.adm.BrokerMetadata(ctx)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("connecting to %s: %w", strings.Join(cfg.Bootstrap, ","), err)
	}
	c.clusterID = md.Cluster
	return c, nil
}

// OnStatus implements worker.Listener.
func (c *core) OnStatus(s worker.Status) {
	c.mu.Lock()
	if _, known := c.st.configs[s.ID.Connector]; !known {
		c.mu.Unlock()
		return // a deleted connector's last words
	}
	c.statuses[s.ID] = s
	c.mu.Unlock()
	if c.onStatus != nil {
		c.onStatus(s)
	}
}

// OnTopic implements worker.Listener.
func (c *core) OnTopic(connector, topic string) {
	if !c.cfg.TopicTracking {
		return
	}
	c.mu.Lock()
	if c.topics[connector] == nil {
		c.topics[connector] = map[string]bool{}
	}
	seen := c.topics[connector][topic]
	c.topics[connector][topic] = true
	c.mu.Unlock()
	if !seen && c.onTopic != nil {
		c.onTopic(connector, topic)
	}
}

// OnReconfigure implements worker.Listener.
func (c *core) OnReconfigure(name string) {
	if c.onReconfigure != nil {
		go c.onReconfigure(name)
	}
}

// ClusterID implements Herder.
func (c *core) ClusterID() string { return c.clusterID }

// reconcile makes the worker run what is assigned to it, with the configs
// and target states of the cluster state. Callers hold opMu.
func (c *core) reconcile() {
	c.mu.Lock()
	st := c.st.clone()
	var conns map[string]bool
	var tasks map[worker.TaskID]bool
	if c.assigned != nil {
		conns, tasks = c.assigned()
	}
	runningConns := maps.Clone(c.runningConns)
	runningTasks := maps.Clone(c.runningTasks)
	c.mu.Unlock()
	wantConn := func(name string) bool {
		_, ok := st.configs[name]
		return ok && (conns == nil || conns[name])
	}
	wantTask := func(id worker.TaskID) (map[string]string, bool) {
		tcs := st.tasks[id.Connector]
		if !wantConn0(st, id.Connector) || id.Task >= len(tcs) || (tasks != nil && !tasks[id]) {
			return nil, false
		}
		return tcs[id.Task], true
	}
	// Stop what is no longer wanted, or runs with another config.
	var stop []worker.TaskID
	for id, props := range runningTasks {
		tc, ok := wantTask(id)
		if !ok || !reflect.DeepEqual(tc, props) || !reflect.DeepEqual(st.configs[id.Connector], runningTaskConn(c, id)) {
			stop = append(stop, id)
		}
	}
	c.w.StopTasks(stop)
	c.mu.Lock()
	for _, id := range stop {
		delete(c.runningTasks, id)
		delete(c.taskConns, id)
	}
	c.mu.Unlock()
	for name, props := range runningConns {
		if !wantConn(name) || !reflect.DeepEqual(st.configs[name], props) {
			c.w.StopConnector(name)
			c.mu.Lock()
			delete(c.runningConns, name)
			c.mu.Unlock()
		}
	}
	// Start what is wanted, set the target of what runs.
	names := make([]string, 0, len(st.configs))
	for n := range st.configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if !wantConn(name) {
			continue
		}
		if c.w.IsRunning(name) {
			c.w.SetConnectorTarget(name, st.target(name))
		} else {
			c.mu.Lock()
			c.runningConns[name] = st.configs[name]
			c.mu.Unlock()
			c.w.StartConnector(name, st.configs[name], st.target(name))
		}
	}
	for _, name := range names {
		for i := range st.tasks[name] {
			id := worker.TaskID{Connector: name, Task: i}
			tc, ok := wantTask(id)
			if !ok {
				continue
			}
			ts := st.target(name)
			if ts == worker.TargetStopped {
				continue
			}
			if c.w.HasTask(id) {
				c.w.SetTaskTarget(id, ts)
				continue
			}
			c.mu.Lock()
			c.runningTasks[id] = tc
			c.taskConns[id] = st.configs[name]
			c.mu.Unlock()
			c.w.StartTask(id, st.configs[name], tc, ts)
		}
	}
}

func wantConn0(st clusterState, name string) bool { _, ok := st.configs[name]; return ok }

func runningTaskConn(c *core, id worker.TaskID) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taskConns[id]
}

// generateTasks asks a running connector for task configs; changed is
// false when they equal the stored ones. Callers hold opMu.
func (c *core) generateTasks(name string) (cfgs []map[string]string, changed bool, err error) {
	c.mu.Lock()
	target := c.st.target(name)
	old := c.st.tasks[name]
	c.mu.Unlock()
	if target != worker.TargetStarted || !c.w.IsRunning(name) {
		return nil, false, nil
	}
	cfgs, err = c.w.TaskConfigs(name)
	if err != nil {
		return nil, false, err
	}
	return cfgs, !reflect.DeepEqual(cfgs, old) && !(len(cfgs) == 0 && len(old) == 0), nil
}

// --- read side, shared by both herders ---

func (c *core) connectors() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.st.configs))
	for n := range c.st.configs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (c *core) kindOf(cfg map[string]string) worker.ConnectorKind {
	return worker.ClassKind(cfg[worker.KeyConnectorClass])
}

func (c *core) info(name string) (*ConnectorInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.st.configs[name]
	if !ok {
		return nil, notFound("Connector %s not found", name)
	}
	inf := &ConnectorInfo{Name: name, Config: maps.Clone(cfg), Type: c.kindOf(cfg), Tasks: []worker.TaskID{}}
	for i := range c.st.tasks[name] {
		inf.Tasks = append(inf.Tasks, worker.TaskID{Connector: name, Task: i})
	}
	return inf, nil
}

func (c *core) config(name string) (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.st.configs[name]
	if !ok {
		return nil, notFound("Connector %s not found", name)
	}
	return maps.Clone(cfg), nil
}

func (c *core) status(name string) (*StateInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.st.configs[name]
	if !ok {
		return nil, notFound("No status found for connector %s", name)
	}
	si := &StateInfo{Name: name, Type: c.kindOf(cfg), Tasks: []worker.Status{}}
	if s, ok := c.statuses[worker.TaskID{Connector: name, Task: -1}]; ok {
		si.Connector = s
	} else {
		si.Connector = worker.Status{ID: worker.TaskID{Connector: name, Task: -1}, State: worker.Unassigned, WorkerID: c.w.ID()}
	}
	for i := range c.st.tasks[name] {
		id := worker.TaskID{Connector: name, Task: i}
		if s, ok := c.statuses[id]; ok {
			si.Tasks = append(si.Tasks, s)
		} else {
			si.Tasks = append(si.Tasks, worker.Status{ID: id, State: worker.Unassigned, WorkerID: c.w.ID()})
		}
	}
	return si, nil
}

func (c *core) taskStatus(id worker.TaskID) (*worker.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.st.configs[id.Connector]; !ok {
		return nil, notFound("No status found for task %s", id)
	}
	if id.Task < 0 || id.Task >= len(c.st.tasks[id.Connector]) {
		return nil, notFound("No status found for task %s", id)
	}
	if s, ok := c.statuses[id]; ok {
		return &s, nil
	}
	return &worker.Status{ID: id, State: worker.Unassigned, WorkerID: c.w.ID()}, nil
}

func (c *core) taskInfos(name string) ([]TaskInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.st.configs[name]; !ok {
		return nil, notFound("Connector %s not found", name)
	}
	out := []TaskInfo{}
	for i, tc := range c.st.tasks[name] {
		out = append(out, TaskInfo{ID: worker.TaskID{Connector: name, Task: i}, Config: maps.Clone(tc)})
	}
	return out, nil
}

func (c *core) topicsOf(name string) ([]string, error) {
	if !c.cfg.TopicTracking {
		return nil, forbidden("Topic tracking is disabled.")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.st.configs[name]; !ok {
		return nil, notFound("Connector %s not found", name)
	}
	out := []string{}
	for t := range c.topics[name] {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

func (c *core) resetTopics(name string) error {
	if !c.cfg.TopicTracking {
		return forbidden("Topic tracking is disabled.")
	}
	if !c.cfg.TopicTrackingReset {
		return forbidden("Topic tracking reset is disabled.")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.st.configs[name]; !ok {
		return notFound("Connector %s not found", name)
	}
	delete(c.topics, name)
	return nil
}

// validate checks a config for create or update; a bad config is 400 with
// Kafka's message listing every error.
func (c *core) validate(name string, cfg map[string]string) error {
	if strings.TrimSpace(name) == "" {
		return badRequest("Connector name must not be empty")
	}
	if n, ok := cfg[worker.KeyName]; ok && n != name {
		return badRequest("Connector name configuration (%s) doesn't match connector name in the URL (%s)", n, name)
	}
	v, err := worker.ValidateConnectorConfig(cfg, c.cfg.OverridePolicy, c.cfg.ExactlyOnce())
	if err != nil {
		return badRequest("%v", err)
	}
	if v.ErrorCount > 0 {
		errs := v.Errors()
		return &ValidationError{Code: 400, Msg: fmt.Sprintf("Connector configuration is invalid and contains the following %d error(s):\n%s\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`", len(errs), strings.Join(errs, "\n")), Validation: v}
	}
	return nil
}

// ValidationError is a 400 for an invalid config, with the validation.
type ValidationError struct {
	Code       int
	Msg        string
	Validation *worker.Validation
}

func (e *ValidationError) Error() string { return e.Msg }

func (c *core) validateOnly(cfg map[string]string) (*worker.Validation, error) {
	v, err := worker.ValidateConnectorConfig(cfg, c.cfg.OverridePolicy, c.cfg.ExactlyOnce())
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return v, nil
}

// offsets reads a connector's offsets: the offset store for a source, the
// consumer group connect-<name> for a sink.
func (c *core) offsets(name string) (Offsets, worker.ConnectorKind, error) {
	cfg, err := c.config(name)
	if err != nil {
		return nil, "", err
	}
	kind := c.kindOf(cfg)
	if kind == worker.KindSink {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.adm.FetchOffsets(ctx, "connect-"+name)
		if err != nil {
			return nil, kind, &Error{500, fmt.Sprintf("Failed to retrieve consumer group offsets for sink connector %s: %v", name, err)}
		}
		out := Offsets{}
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				out = append(out, worker.OffsetEntry{
					Partition: map[string]any{"kafka_topic": o.Topic, "kafka_partition": int64(o.Partition)},
					Offset:    map[string]any{"kafka_offset": o.At},
				})
			}
		})
		sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i].Partition) < fmt.Sprint(out[j].Partition) })
		return out, kind, nil
	}
	all, err := c.w.Offsets().All(name)
	if err != nil {
		return nil, kind, err
	}
	out := Offsets{}
	for _, e := range all {
		if e.Offset != nil {
			out = append(out, e)
		}
	}
	return out, kind, nil
}

// Kafka's KIP-875 messages.
const (
	msgAlteredSink   = "The offsets for this connector have been altered successfully"
	msgAlteredSource = "The Connect framework-managed offsets for this connector have been altered successfully. However, if this connector manages offsets externally, they will need to be manually altered in the system that the connector uses."
	msgResetSink     = "The offsets for this connector have been reset successfully"
	msgResetSource   = "The Connect framework-managed offsets for this connector have been reset successfully. However, if this connector manages offsets externally, they will need to be manually reset in the system that the connector uses."
)

// alterOffsets changes a stopped connector's offsets (callers check the
// state). For a source, put writes to the offset store.
func (c *core) alterOffsets(name string, offs Offsets, reset bool, put func(context.Context, []worker.OffsetEntry) error) (string, error) {
	cfg, err := c.config(name)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	target := c.st.target(name)
	c.mu.Unlock()
	if target != worker.TargetStopped {
		return "", badRequest("Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", name)
	}
	if !reset && len(offs) == 0 {
		return "", badRequest("The offsets to be modified must be specified")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.kindOf(cfg) == worker.KindSink {
		return c.alterSinkOffsets(ctx, name, offs, reset)
	}
	if reset {
		all, err := c.w.Offsets().All(name)
		if err != nil {
			return "", err
		}
		offs = nil
		for _, e := range all {
			offs = append(offs, worker.OffsetEntry{Partition: e.Partition})
		}
	}
	for _, e := range offs {
		if e.Partition == nil {
			return "", badRequest("Source partitions may not be null")
		}
	}
	if err := put(ctx, offs); err != nil {
		return "", &Error{500, fmt.Sprintf("Failed to write offsets for connector %s: %v", name, err)}
	}
	if reset {
		return msgResetSource, nil
	}
	return msgAlteredSource, nil
}

func (c *core) alterSinkOffsets(ctx context.Context, name string, offs Offsets, reset bool) (string, error) {
	group := "connect-" + name
	if reset {
		resp, err := c.adm.DeleteGroup(ctx, group)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !isGroupIDNotFound(err) {
			return "", &Error{500, fmt.Sprintf("Failed to reset offsets for sink connector %s: %v", name, err)}
		}
		return msgResetSink, nil
	}
	commit := kadm.Offsets{}
	var del []kadm.TopicsSet
	for _, e := range offs {
		topic, ok1 := e.Partition["kafka_topic"].(string)
		part, ok2 := asInt(e.Partition["kafka_partition"])
		if !ok1 || !ok2 {
			return "", badRequest("Partitions for sink connectors must have a 'kafka_topic' (string) and a 'kafka_partition' (integer) key")
		}
		if e.Offset == nil {
			ts := kadm.TopicsSet{}
			ts.Add(topic, int32(part))
			del = append(del, ts)
			continue
		}
		off, ok := asInt(e.Offset["kafka_offset"])
		if !ok || off < 0 {
			return "", badRequest("Offsets for sink connectors must have a non-negative integer 'kafka_offset' key")
		}
		commit.Add(kadm.Offset{Topic: topic, Partition: int32(part), At: off, LeaderEpoch: -1})
	}
	if len(commit) > 0 {
		resp, err := c.adm.CommitOffsets(ctx, group, commit)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return "", &Error{500, fmt.Sprintf("Failed to alter consumer group offsets for connector %s: %v", name, err)}
		}
	}
	for _, ts := range del {
		resp, err := c.adm.DeleteOffsets(ctx, group, ts)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !isGroupIDNotFound(err) {
			return "", &Error{500, fmt.Sprintf("Failed to delete consumer group offsets for connector %s: %v", name, err)}
		}
	}
	return msgAlteredSink, nil
}

func isGroupIDNotFound(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "GROUP_ID_NOT_FOUND") || errors.Is(err, kerr.GroupIDNotFound))
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	case int:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// restartPlan is Kafka's RestartPlan: which of a connector's instances a
// restart request restarts.
func (c *core) restartPlan(name string, includeTasks, onlyFailed bool) (*StateInfo, bool, []worker.TaskID, error) {
	si, err := c.status(name)
	if err != nil {
		return nil, false, nil, notFound("Unknown connector: %s", name)
	}
	conn := !onlyFailed || si.Connector.State == worker.Failed
	if conn {
		si.Connector.State = worker.Restarting
		si.Connector.Trace = ""
	}
	var tasks []worker.TaskID
	if includeTasks {
		for i := range si.Tasks {
			if !onlyFailed || si.Tasks[i].State == worker.Failed {
				tasks = append(tasks, si.Tasks[i].ID)
				si.Tasks[i].State = worker.Restarting
				si.Tasks[i].Trace = ""
			}
		}
	}
	return si, conn, tasks, nil
}

// restartLocal restarts the connector and tasks that run here.
func (c *core) restartLocal(name string, conn bool, tasks []worker.TaskID) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if len(tasks) > 0 {
		var here []worker.TaskID
		for _, id := range tasks {
			if c.w.HasTask(id) {
				here = append(here, id)
			}
		}
		c.w.StopTasks(here)
		c.mu.Lock()
		for _, id := range here {
			delete(c.runningTasks, id)
			c.statuses[id] = worker.Status{ID: id, State: worker.Restarting, WorkerID: c.w.ID()}
		}
		c.mu.Unlock()
	}
	if conn && c.w.IsRunning(name) {
		c.w.StopConnector(name)
		c.mu.Lock()
		delete(c.runningConns, name)
		c.mu.Unlock()
	}
	c.reconcile()
}

// forget removes what the core keeps of a deleted connector.
func (c *core) forget(name string) {
	for id := range c.statuses {
		if id.Connector == name {
			delete(c.statuses, id)
		}
	}
	delete(c.topics, name)
}
