package herder

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/connect/worker"
)

// Distributed is the herder of `vltava connect distributed`: the workers
// of one group.id share connectors and tasks through the Connect group
// protocol (member.go), and keep configs, offsets and statuses in the three
// internal topics in Kafka Connect's record formats, so that any worker,
// restarted anywhere, resumes from them. Changes to configs and target
// states are made by the group's leader (a follower forwards the REST
// request); the worker running a connector writes its task configs.
type Distributed struct {
	*core
	offs      *worker.TopicOffsets
	configs   *worker.TopicLog
	statusLog *worker.TopicLog
	m         *member

	staged map[string]map[int]map[string]string // task configs read but not committed; config reader goroutine only
	// fenceCounts is each source connector's task count record
	// (tasks-fencing-<name>): how many tasks its last generation that ran
	// any had, whose transactional ids are fenced before the next
	// generation is committed. Guarded by core.mu.
	fenceCounts map[string]int
	// loggerLevels are the logger-cluster-<namespace> records read after
	// start-up and before onLogger was set, in order, replayed to it when
	// it is. Those read at start-up (started false) are ignored, as
	// Kafka's KafkaConfigBackingStore ignores them: a cluster-wide level
	// reaches the workers running when it is set, not later ones. Guarded
	// by core.mu.
	loggerLevels [][2]string
	onLogger     func(namespace, level string)
	started      bool

	kick   chan struct{} // asks the herder goroutine to reconcile (buffered 1)
	cancel context.CancelFunc
	done   chan struct{}
}

// NewDistributed opens the internal topics, reads them, and joins the group.
func NewDistributed(cfg *worker.Config, log *slog.Logger) (*Distributed, error) {
	offs, err := worker.OpenTopicOffsets(cfg, log)
	if err != nil {
		return nil, err
	}
	c, err := newCore(cfg, offs, log)
	if err != nil {
		offs.Close()
		return nil, err
	}
	d := &Distributed{core: c, offs: offs, staged: map[string]map[int]map[string]string{}, fenceCounts: map[string]int{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	// The member exists before the config topic is read: a record read at
	// start (a connector's tasks, a target state) asks it to rejoin.
	d.m = newMember(d)
	fail := func(err error) (*Distributed, error) {
		d.m.cl.Close()
		if d.configs != nil {
			d.configs.Close()
		}
		if d.statusLog != nil {
			d.statusLog.Close()
		}
		offs.Close()
		c.cl.Close()
		return nil, err
	}
	if d.statusLog, err = worker.OpenTopicLog(cfg, log, cfg.StatusTopic, cfg.StatusPartitions, cfg.StatusRF, d.applyStatus); err != nil {
		return fail(err)
	}
	if d.configs, err = worker.OpenTopicLog(cfg, log, cfg.ConfigTopic, 1, cfg.ConfigRF, d.applyConfig); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := d.configs.ReadToEnd(ctx); err != nil {
		return fail(err)
	}
	if err := d.statusLog.ReadToEnd(ctx); err != nil {
		return fail(err)
	}
	d.mu.Lock()
	d.started = true
	d.mu.Unlock()
	c.onStatus = d.publishStatus
	c.onTopic = d.publishTopic
	c.onReconfigure = func(string) { d.poke() }
	c.assigned = d.m.assignedSets
	lctx, lcancel := context.WithCancel(context.Background())
	d.cancel = lcancel
	go d.loop(lctx)
	go d.m.run(lctx)
	return d, nil
}

// Close leaves the group and stops everything.
func (d *Distributed) Close() {
	d.cancel()
	<-d.done
	d.m.wait()
	d.opMu.Lock()
	d.w.Stop()
	d.opMu.Unlock()
	d.configs.Close()
	d.statusLog.Close()
	d.offs.Close()
	d.cl.Close()
}

func (d *Distributed) poke() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// loop is the herder goroutine: it reconciles the worker with the state and
// its assignment, and writes the task configs of the connectors it runs.
func (d *Distributed) loop(ctx context.Context) {
	defer close(d.done)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		case <-tick.C:
		}
		if d.m.rebalancing() {
			continue
		}
		d.opMu.Lock()
		d.reconcile()
		for _, name := range d.w.Connectors() {
			cfgs, changed, err := d.generateTasks(name)
			if err != nil {
				d.log.Error("generating task configs failed", "connector", name, "err", err)
				continue
			}
			if changed {
				if err := d.writeTaskConfigs(ctx, name, cfgs); err != nil {
					d.log.Error("writing task configs failed", "connector", name, "err", err)
				}
			}
		}
		d.opMu.Unlock()
	}
}

// --- the config topic (Kafka's KafkaConfigBackingStore records) ---

type propsValue struct {
	Properties map[string]string `json:"properties"`
}

func (d *Distributed) writeConfig(ctx context.Context, kvs ...[2]any) error {
	recs := make([]*kgo.Record, 0, len(kvs))
	for _, kv := range kvs {
		r := &kgo.Record{Key: []byte(kv[0].(string))}
		if kv[1] != nil {
			b, err := json.Marshal(kv[1])
			if err != nil {
				return err
			}
			r.Value = b
		}
		recs = append(recs, r)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := d.configs.Write(wctx, recs...); err != nil {
		return err
	}
	return d.configs.ReadToEnd(wctx)
}

func (d *Distributed) writeTaskConfigs(ctx context.Context, name string, cfgs []map[string]string) error {
	fencing := d.fencingSource(name)
	if fencing {
		if err := d.fenceZombies(ctx, name, len(cfgs)); err != nil {
			return err
		}
	}
	var kvs [][2]any
	for i, c := range cfgs {
		kvs = append(kvs, [2]any{fmt.Sprintf("task-%s-%d", name, i), propsValue{c}})
	}
	kvs = append(kvs, [2]any{"commit-" + name, map[string]int{"tasks": len(cfgs)}})
	if fencing && len(cfgs) > 0 {
		kvs = append(kvs, [2]any{"tasks-fencing-" + name, map[string]int{"task-count": len(cfgs)}})
	}
	return d.writeConfig(ctx, kvs...)
}

// fencingSource reports whether name is a source connector whose task
// generations are fenced (exactly.once.source.support preparing or enabled).
func (d *Distributed) fencingSource(name string) bool {
	if !d.cfg.Fencing() {
		return false
	}
	cfg, err := d.config(name)
	return err == nil && d.kindOf(cfg) == worker.KindSource
}

// fenceZombies fences the transactional ids from..n-1 of the tasks of the
// connector's earlier generations (KIP-618's zombie fencing), so that a
// task instance that outlived its generation, on a worker that has not
// noticed, can write nothing more. The ids below from belong to tasks of
// the next generation: each new instance fences its own id before it
// reads the offsets it resumes from (runSourceTransactional), and an
// instance whose config did not change keeps running as that task.
func (d *Distributed) fenceZombies(ctx context.Context, name string, from int) error {
	d.mu.Lock()
	n := max(len(d.st.tasks[name]), d.fenceCounts[name])
	d.mu.Unlock()
	if n <= from {
		return nil
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return worker.FenceProducers(fctx, d.cl, d.cfg.TaskTransactionalIDs(name, n)[from:])
}

// cutIndex splits "<name>-<n>".
func cutIndex(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// applyConfig applies one config-topic record (the reader goroutine).
func (d *Distributed) applyConfig(r *kgo.Record) {
	key := string(r.Key)
	rejoin, changed := false, false
	switch {
	case strings.HasPrefix(key, "connector-"):
		name := strings.TrimPrefix(key, "connector-")
		d.mu.Lock()
		_, had := d.st.configs[name]
		if r.Value == nil {
			delete(d.st.configs, name)
			delete(d.st.tasks, name)
			delete(d.st.targets, name)
			d.forget(name)
			rejoin = had
		} else {
			var v propsValue
			if err := json.Unmarshal(r.Value, &v); err != nil || v.Properties == nil {
				d.mu.Unlock()
				d.log.Warn("skipping a malformed connector config record", "key", key, "err", err)
				return
			}
			d.st.configs[name] = v.Properties
			rejoin = !had
		}
		d.mu.Unlock()
		changed = true
	case strings.HasPrefix(key, "task-"):
		name, n, ok := cutIndex(strings.TrimPrefix(key, "task-"))
		var v propsValue
		if !ok || r.Value == nil || json.Unmarshal(r.Value, &v) != nil {
			return
		}
		if d.staged[name] == nil {
			d.staged[name] = map[int]map[string]string{}
		}
		d.staged[name][n] = v.Properties
	case strings.HasPrefix(key, "commit-"):
		name := strings.TrimPrefix(key, "commit-")
		var v struct {
			Tasks int `json:"tasks"`
		}
		if r.Value == nil || json.Unmarshal(r.Value, &v) != nil {
			return
		}
		cfgs := make([]map[string]string, 0, v.Tasks)
		for i := 0; i < v.Tasks; i++ {
			c, ok := d.staged[name][i]
			if !ok {
				d.log.Warn("task configs commit without every task config; ignored", "connector", name)
				return
			}
			cfgs = append(cfgs, c)
		}
		delete(d.staged, name)
		d.mu.Lock()
		if _, ok := d.st.configs[name]; ok {
			rejoin = len(d.st.tasks[name]) != len(cfgs)
			d.st.tasks[name] = cfgs
		}
		if len(cfgs) == 0 {
			for id := range d.statuses {
				if id.Connector == name && id.Task >= 0 {
					delete(d.statuses, id)
				}
			}
		}
		d.mu.Unlock()
		changed = true
	case strings.HasPrefix(key, "target-state-"):
		name := strings.TrimPrefix(key, "target-state-")
		d.mu.Lock()
		if r.Value == nil {
			delete(d.st.targets, name)
		} else {
			var v map[string]string
			if json.Unmarshal(r.Value, &v) == nil {
				s := v["state.v2"]
				if s == "" {
					s = v["state"]
				}
				d.st.targets[name] = worker.TargetState(s)
			}
		}
		d.mu.Unlock()
		changed = true
	case strings.HasPrefix(key, "restart-connector-"):
		name := strings.TrimPrefix(key, "restart-connector-")
		var v struct {
			IncludeTasks bool `json:"include-tasks"`
			OnlyFailed   bool `json:"only-failed"`
		}
		if r.Value == nil || json.Unmarshal(r.Value, &v) != nil {
			return
		}
		if _, conn, tasks, err := d.restartPlan(name, v.IncludeTasks, v.OnlyFailed); err == nil {
			go d.restartLocal(name, conn, tasks)
		}
	case strings.HasPrefix(key, "tasks-fencing-"):
		name := strings.TrimPrefix(key, "tasks-fencing-")
		var v struct {
			TaskCount int `json:"task-count"`
		}
		d.mu.Lock()
		if r.Value == nil {
			delete(d.fenceCounts, name)
		} else if json.Unmarshal(r.Value, &v) == nil {
			d.fenceCounts[name] = v.TaskCount
		}
		d.mu.Unlock()
	case strings.HasPrefix(key, "logger-cluster-"):
		var v struct {
			Level *string `json:"level"`
		}
		ns := strings.TrimPrefix(key, "logger-cluster-")
		if r.Value == nil || json.Unmarshal(r.Value, &v) != nil || v.Level == nil {
			d.log.Warn("skipping a malformed logging level record", "key", key)
			return
		}
		d.mu.Lock()
		switch {
		case !d.started:
			d.log.Debug("ignoring a logging level set before this worker started", "namespace", ns)
		case d.onLogger != nil:
			d.onLogger(ns, *v.Level)
		default:
			d.loggerLevels = append(d.loggerLevels, [2]string{ns, *v.Level})
		}
		d.mu.Unlock()
	case key == "session-key":
		// The sessioned protocol's key; requests between workers are
		// forwarded REST calls, not signed internal ones.
	}
	if rejoin {
		d.m.requestRejoin()
	}
	if changed {
		d.poke()
	}
}

// PutLoggerLevel writes a cluster-wide logging level (KIP-976) to the
// config topic; every worker applies it when it reads the record.
func (d *Distributed) PutLoggerLevel(ctx context.Context, namespace, level string) error {
	return d.writeConfig(ctx, [2]any{"logger-cluster-" + namespace, map[string]string{"level": level}})
}

// OnLoggerLevel sets the function that applies the cluster-wide logging
// levels read from the config topic from now on, and replays those read
// since start-up. f is called on the config reader goroutine and must not
// call the herder.
func (d *Distributed) OnLoggerLevel(f func(namespace, level string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onLogger = f
	for _, l := range d.loggerLevels {
		f(l[0], l[1])
	}
	d.loggerLevels = nil
}

// --- the status topic ---

type statusValue struct {
	State      string  `json:"state"`
	Trace      *string `json:"trace"`
	WorkerID   string  `json:"worker_id"`
	Generation int     `json:"generation"`
}

func statusKey(id worker.TaskID) string {
	if id.Task < 0 {
		return "status-connector-" + id.Connector
	}
	return fmt.Sprintf("status-task-%s-%d", id.Connector, id.Task)
}

func (d *Distributed) publishStatus(s worker.Status) {
	v := statusValue{State: string(s.State), WorkerID: s.WorkerID, Generation: int(d.m.generationNow())}
	if s.Trace != "" {
		v.Trace = &s.Trace
	}
	b, _ := json.Marshal(v)
	d.statusLog.WriteAsync(&kgo.Record{Key: []byte(statusKey(s.ID)), Value: b})
}

func (d *Distributed) publishTopic(conn, topic string) {
	v := map[string]any{"topic": map[string]any{"name": topic, "connector": conn, "task": 0, "discoverTimestamp": time.Now().UnixMilli()}}
	b, _ := json.Marshal(v)
	d.statusLog.WriteAsync(&kgo.Record{Key: []byte("topic-" + topic + "-connector-" + conn), Value: b})
}

// applyStatus applies one status-topic record (the reader goroutine); a
// status of an older generation than the one kept is stale.
func (d *Distributed) applyStatus(r *kgo.Record) {
	key := string(r.Key)
	var id worker.TaskID
	switch {
	case strings.HasPrefix(key, "status-connector-"):
		id = worker.TaskID{Connector: strings.TrimPrefix(key, "status-connector-"), Task: -1}
	case strings.HasPrefix(key, "status-task-"):
		name, n, ok := cutIndex(strings.TrimPrefix(key, "status-task-"))
		if !ok {
			return
		}
		id = worker.TaskID{Connector: name, Task: n}
	case strings.HasPrefix(key, "topic-"):
		rest := strings.TrimPrefix(key, "topic-")
		i := strings.LastIndex(rest, "-connector-")
		if i < 0 {
			return
		}
		topic, conn := rest[:i], rest[i+len("-connector-"):]
		d.mu.Lock()
		if r.Value == nil {
			if d.topics[conn] != nil {
				delete(d.topics[conn], topic)
			}
		} else {
			if d.topics[conn] == nil {
				d.topics[conn] = map[string]bool{}
			}
			d.topics[conn][topic] = true
		}
		d.mu.Unlock()
		return
	default:
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.Value == nil {
		delete(d.statuses, id)
		return
	}
	var v statusValue
	if json.Unmarshal(r.Value, &v) != nil {
		return
	}
	if old, ok := d.statuses[id]; ok && old.Generation > v.Generation && old.WorkerID != v.WorkerID {
		return
	}
	if _, known := d.st.configs[id.Connector]; !known {
		return
	}
	s := worker.Status{ID: id, State: worker.State(v.State), WorkerID: v.WorkerID, Generation: v.Generation}
	if v.Trace != nil {
		s.Trace = *v.Trace
	}
	d.statuses[id] = s
}

// --- Herder ---

// leaderOnly answers 409 while rebalancing, and NotLeader on a follower.
func (d *Distributed) leaderOnly() error {
	if d.m.rebalancing() {
		return ErrRebalancing
	}
	leader, url := d.m.leaderInfo()
	if !leader {
		return &NotLeader{LeaderURL: url}
	}
	return nil
}

// Connectors implements Herder.
func (d *Distributed) Connectors() ([]string, error) { return d.connectors(), nil }

// ConnectorInfo implements Herder.
func (d *Distributed) ConnectorInfo(name string) (*ConnectorInfo, error) { return d.info(name) }

// ConnectorConfig implements Herder.
func (d *Distributed) ConnectorConfig(name string) (map[string]string, error) { return d.config(name) }

// PutConnectorConfig implements Herder.
func (d *Distributed) PutConnectorConfig(name string, cfg map[string]string, allowReplace bool) (*ConnectorInfo, bool, error) {
	if err := d.leaderOnly(); err != nil {
		return nil, false, err
	}
	cfg = maps.Clone(cfg)
	if _, ok := cfg[worker.KeyName]; !ok {
		cfg[worker.KeyName] = name
	}
	if err := d.validate(name, cfg); err != nil {
		return nil, false, err
	}
	d.mu.Lock()
	_, exists := d.st.configs[name]
	d.mu.Unlock()
	if exists && !allowReplace {
		return nil, false, conflict("Connector %s already exists", name)
	}
	if err := d.writeConfig(context.Background(), [2]any{"connector-" + name, propsValue{cfg}}); err != nil {
		return nil, false, err
	}
	inf, err := d.info(name)
	return inf, !exists, err
}

// PatchConnectorConfig implements Herder.
func (d *Distributed) PatchConnectorConfig(name string, patch map[string]*string) (*ConnectorInfo, error) {
	if err := d.leaderOnly(); err != nil {
		return nil, err
	}
	old, err := d.config(name)
	if err != nil {
		return nil, err
	}
	for k, v := range patch {
		if v == nil {
			delete(old, k)
		} else {
			old[k] = *v
		}
	}
	inf, _, err := d.PutConnectorConfig(name, old, true)
	return inf, err
}

// DeleteConnector implements Herder.
func (d *Distributed) DeleteConnector(name string) error {
	if err := d.leaderOnly(); err != nil {
		return err
	}
	if _, err := d.config(name); err != nil {
		return err
	}
	return d.writeConfig(context.Background(), [2]any{"connector-" + name, nil}, [2]any{"target-state-" + name, nil})
}

// Status implements Herder.
func (d *Distributed) Status(name string) (*StateInfo, error) { return d.status(name) }

// TaskStatus implements Herder.
func (d *Distributed) TaskStatus(id worker.TaskID) (*worker.Status, error) { return d.taskStatus(id) }

// Tasks implements Herder.
func (d *Distributed) Tasks(name string) ([]TaskInfo, error) { return d.taskInfos(name) }

// RestartConnector implements Herder.
func (d *Distributed) RestartConnector(name string) error {
	_, err := d.Restart(name, false, false)
	return err
}

// Restart implements Herder: the leader writes a restart request to the
// config topic; each worker restarts the instances it runs.
func (d *Distributed) Restart(name string, includeTasks, onlyFailed bool) (*StateInfo, error) {
	if err := d.leaderOnly(); err != nil {
		return nil, err
	}
	si, _, _, err := d.restartPlan(name, includeTasks, onlyFailed)
	if err != nil {
		return nil, err
	}
	err = d.writeConfig(context.Background(), [2]any{"restart-connector-" + name, map[string]bool{"include-tasks": includeTasks, "only-failed": onlyFailed}})
	return si, err
}

// RestartTask implements Herder: the worker running the task restarts it;
// another worker forwards the request to it.
func (d *Distributed) RestartTask(id worker.TaskID) error {
	s, err := d.taskStatus(id)
	if err != nil {
		return notFound("Task %s not found", id)
	}
	if !d.w.HasTask(id) {
		if s.WorkerID == "" || s.WorkerID == d.w.ID() {
			return ErrRebalancing
		}
		return &NotLeader{LeaderURL: "http://" + s.WorkerID}
	}
	d.restartLocal(id.Connector, false, []worker.TaskID{id})
	return nil
}

// SetTarget implements Herder. A stopped connector's task configs are
// emptied, as Kafka's; STOPPED is written as PAUSED for older readers of
// "state" and as STOPPED in "state.v2".
func (d *Distributed) SetTarget(name string, ts worker.TargetState) error {
	if err := d.leaderOnly(); err != nil {
		return err
	}
	if _, err := d.config(name); err != nil {
		return err
	}
	v1 := ts
	if ts == worker.TargetStopped {
		v1 = worker.TargetPaused
	}
	kvs := [][2]any{{"target-state-" + name, map[string]string{"state": string(v1), "state.v2": string(ts)}}}
	if ts == worker.TargetStopped {
		kvs = append(kvs, [2]any{"commit-" + name, map[string]int{"tasks": 0}})
	}
	return d.writeConfig(context.Background(), kvs...)
}

// Topics implements Herder.
func (d *Distributed) Topics(name string) ([]string, error) { return d.topicsOf(name) }

// ResetTopics implements Herder: tombstones for the connector's topic records.
func (d *Distributed) ResetTopics(name string) error {
	if err := d.leaderOnly(); err != nil {
		return err
	}
	ts, err := d.topicsOf(name)
	if err != nil {
		return err
	}
	if err := d.resetTopics(name); err != nil {
		return err
	}
	var recs []*kgo.Record
	for _, t := range ts {
		recs = append(recs, &kgo.Record{Key: []byte("topic-" + t + "-connector-" + name)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.statusLog.Write(ctx, recs...)
}

// Offsets implements Herder.
func (d *Distributed) Offsets(name string) (Offsets, worker.ConnectorKind, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.offs.ReadToEnd(ctx); err != nil {
		return nil, "", err
	}
	return d.offsets(name)
}

// AlterOffsets implements Herder.
func (d *Distributed) AlterOffsets(name string, offs Offsets, reset bool) (string, error) {
	if err := d.leaderOnly(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.offs.ReadToEnd(ctx); err != nil {
		return "", err
	}
	return d.alterOffsets(name, offs, reset, func(ctx context.Context, es []worker.OffsetEntry) error {
		// No task of a fenced generation may commit offsets over these.
		if d.fencingSource(name) {
			if err := d.fenceZombies(ctx, name, 0); err != nil {
				return err
			}
		}
		return d.offs.Put(ctx, name, es)
	})
}

// Validate implements Herder.
func (d *Distributed) Validate(cfg map[string]string) (*worker.Validation, error) {
	return d.validateOnly(cfg)
}

// writeSessionKey writes a new session key (sessioned protocol, leader).
func (d *Distributed) writeSessionKey(ctx context.Context) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	return d.writeConfig(ctx, [2]any{"session-key", map[string]any{
		"key": base64.StdEncoding.EncodeToString(key), "algorithm": "HmacSHA256", "creation-timestamp": time.Now().UnixMilli()}})
}
