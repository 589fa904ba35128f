package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/connect"
)

// taskRun is one task instance: its goroutine runs the task loop, and again
// after a failure when vltava.task.auto.restart is set.
type taskRun struct {
	w         *Worker
	id        TaskID
	connProps map[string]string
	taskProps map[string]string
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	targetMu sync.Mutex // guards target
	target   TargetState
	targetCh chan struct{} // signalled (buffered 1) when target changes
}

func (t *taskRun) setTarget(ts TargetState) {
	t.targetMu.Lock()
	t.target = ts
	t.targetMu.Unlock()
	select {
	case t.targetCh <- struct{}{}:
	default:
	}
}

func (t *taskRun) currentTarget() TargetState {
	t.targetMu.Lock()
	defer t.targetMu.Unlock()
	return t.target
}

// awaitStarted blocks while the task is paused, reporting PAUSED and then
// RUNNING again; it returns errStopped when the task is stopped meanwhile.
func (t *taskRun) awaitStarted() error {
	if t.currentTarget() == TargetStarted {
		return nil
	}
	t.w.report(t.id, Paused, nil)
	for t.currentTarget() != TargetStarted {
		select {
		case <-t.ctx.Done():
			return errStopped
		case <-t.targetCh:
		}
	}
	t.w.report(t.id, Running, nil)
	return nil
}

func (t *taskRun) stop() { t.cancel() }

func (t *taskRun) wait(d time.Duration) bool {
	select {
	case <-t.done:
		return true
	case <-time.After(d):
		return false
	}
}

// StartTask starts a task of a connector with its task config, in a target
// state. A task already running with this id is left alone.
func (w *Worker) StartTask(id TaskID, connProps, taskProps map[string]string, target TargetState) {
	w.mu.Lock()
	if w.closed || w.tasks[id] != nil {
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &taskRun{w: w, id: id, connProps: connProps, taskProps: taskProps, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), target: target, targetCh: make(chan struct{}, 1)}
	w.tasks[id] = t
	w.mu.Unlock()
	go t.run()
}

// SetTaskTarget pauses or resumes a running task.
func (w *Worker) SetTaskTarget(id TaskID, target TargetState) {
	w.mu.Lock()
	t := w.tasks[id]
	w.mu.Unlock()
	if t != nil {
		t.setTarget(target)
	}
}

// StopTask stops a task and waits for it up to task.shutdown.graceful.timeout.ms.
func (w *Worker) StopTask(id TaskID) {
	w.StopTasks([]TaskID{id})
}

// StopTasks stops tasks together and waits for them.
func (w *Worker) StopTasks(ids []TaskID) {
	var runs []*taskRun
	w.mu.Lock()
	for _, id := range ids {
		if t := w.tasks[id]; t != nil {
			runs = append(runs, t)
			delete(w.tasks, id)
		}
	}
	w.mu.Unlock()
	for _, t := range runs {
		t.stop()
	}
	for _, t := range runs {
		if !t.wait(w.cfg.TaskShutdownTimeout) {
			w.log.Warn("task did not stop in time", "task", t.id.String(), "timeout", w.cfg.TaskShutdownTimeout)
		}
	}
}

// HasTask reports whether the task runs here.
func (w *Worker) HasTask(id TaskID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tasks[id] != nil
}

func (t *taskRun) run() {
	defer close(t.done)
	backoff := time.Second
	for {
		start := time.Now()
		err := t.runOnce()
		if err == nil || errors.Is(err, errStopped) || t.ctx.Err() != nil {
			t.w.report(t.id, Unassigned, nil)
			return
		}
		t.w.log.Error("task failed", "task", t.id.String(), "err", err)
		t.w.report(t.id, Failed, err)
		if !t.w.cfg.AutoRestart {
			<-t.ctx.Done() // stays FAILED until restarted or stopped
			return
		}
		if time.Since(start) > t.w.cfg.AutoRestartBackoff {
			backoff = time.Second
		}
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, t.w.cfg.AutoRestartBackoff)
		t.w.log.Info("restarting failed task", "task", t.id.String())
		t.w.report(t.id, Restarting, nil)
	}
}

// runOnce runs the task until it is stopped (nil or errStopped) or fails.
func (t *taskRun) runOnce() error {
	conn, _, err := connect.NewConnector(t.connProps[KeyConnectorClass])
	if err != nil {
		return err
	}
	conv, err := NewConverters(t.w.cfg, t.connProps)
	if err != nil {
		return err
	}
	chain, err := NewChain(t.connProps)
	if err != nil {
		return err
	}
	defer chain.Close()
	switch c := conn.(type) {
	case connect.SourceConnector:
		ep, err := parseErrorPolicy(t.connProps, false)
		if err != nil {
			return err
		}
		return t.runSource(c.NewTask(), conv, chain, ep)
	case connect.SinkConnector:
		ep, err := parseErrorPolicy(t.connProps, true)
		if err != nil {
			return err
		}
		return t.runSink(c.NewTask(), conv, chain, ep)
	}
	return fmt.Errorf("%s is neither a source nor a sink connector", t.connProps[KeyConnectorClass])
}

// clientOverrides are the worker's client props overridden by the
// connector's <kind>.override.* keys as the override policy allows.
func (t *taskRun) clientOverrides(kind string, worker map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range worker {
		out[k] = v
	}
	over := SubProps(t.connProps, kind+".override.")
	if len(over) > 0 && t.w.cfg.OverridePolicy == "None" {
		for k := range over {
			return nil, fmt.Errorf("The 'None' policy does not allow '%s' to be overridden in the connector configuration.", k)
		}
	}
	if t.w.cfg.OverridePolicy == "Principal" {
		for k := range over {
			if !strings.HasPrefix(k, "sasl.") && k != "security.protocol" {
				return nil, fmt.Errorf("The 'Principal' policy does not allow '%s' to be overridden in the connector configuration.", k)
			}
			return nil, fmt.Errorf("%s.override.%s: per-connector security settings are not supported yet", kind, k)
		}
	}
	for k, v := range over {
		out[k] = v
	}
	return out, nil
}

type manualPartitionKey struct{}

// partitioner honours a record's own partition (SourceRecord.Partition),
// else Kafka's default: murmur2 of the key, sticky for keyless records.
type partitioner struct{ inner kgo.Partitioner }

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return topicPartitioner{p.inner.ForTopic(t)}
}

type topicPartitioner struct{ inner kgo.TopicPartitioner }

func manualPartition(r *kgo.Record) (int32, bool) {
	if r.Context == nil {
		return 0, false
	}
	p, ok := r.Context.Value(manualPartitionKey{}).(int32)
	return p, ok
}

func (p topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	if _, ok := manualPartition(r); ok {
		return true
	}
	return p.inner.RequiresConsistency(r)
}

func (p topicPartitioner) Partition(r *kgo.Record, n int) int {
	if mp, ok := manualPartition(r); ok {
		return int(mp)
	}
	return p.inner.Partition(r, n)
}

func (p topicPartitioner) OnNewBatch() {
	if nb, ok := p.inner.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
