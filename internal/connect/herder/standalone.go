package herder

import (
	"context"
	"log/slog"
	"maps"

	"github.com/vltava/vltava/internal/connect/worker"
)

// Standalone is the herder of `vltava connect standalone`: one worker runs
// every connector and task; configs live in memory (the connector files
// given at start are created again on every start), offsets in
// offset.storage.file.filename.
type Standalone struct {
	*core
	file *worker.FileOffsets
}

// NewStandalone connects to the cluster and loads the offsets file.
func NewStandalone(cfg *worker.Config, log *slog.Logger) (*Standalone, error) {
	offs, err := worker.OpenFileOffsets(cfg.OffsetFile)
	if err != nil {
		return nil, err
	}
	c, err := newCore(cfg, offs, log)
	if err != nil {
		return nil, err
	}
	h := &Standalone{core: c, file: offs}
	c.onReconfigure = h.reconfigure
	return h, nil
}

// Close stops every connector and task.
func (h *Standalone) Close() {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.w.Stop()
	h.cl.Close()
}

// reconfigure regenerates a connector's task configs and applies them.
func (h *Standalone) reconfigure(name string) {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.reconfigureLocked(name)
}

func (h *Standalone) reconfigureLocked(name string) {
	cfgs, changed, err := h.generateTasks(name)
	if err != nil {
		h.log.Error("generating task configs failed", "connector", name, "err", err)
		return
	}
	if !changed {
		return
	}
	h.mu.Lock()
	if _, ok := h.st.configs[name]; ok {
		h.st.tasks[name] = cfgs
	}
	h.mu.Unlock()
	h.reconcile()
}

// Connectors implements Herder.
func (h *Standalone) Connectors() ([]string, error) { return h.connectors(), nil }

// ConnectorInfo implements Herder.
func (h *Standalone) ConnectorInfo(name string) (*ConnectorInfo, error) { return h.info(name) }

// ConnectorConfig implements Herder.
func (h *Standalone) ConnectorConfig(name string) (map[string]string, error) { return h.config(name) }

// PutConnectorConfig implements Herder.
func (h *Standalone) PutConnectorConfig(name string, cfg map[string]string, allowReplace bool) (*ConnectorInfo, bool, error) {
	cfg = maps.Clone(cfg)
	if _, ok := cfg[worker.KeyName]; !ok {
		cfg[worker.KeyName] = name
	}
	if err := h.validate(name, cfg); err != nil {
		return nil, false, err
	}
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.mu.Lock()
	_, exists := h.st.configs[name]
	if exists && !allowReplace {
		h.mu.Unlock()
		return nil, false, conflict("Connector %s already exists", name)
	}
	h.st.configs[name] = cfg
	h.mu.Unlock()
	h.reconcile()
	h.reconfigureLocked(name)
	inf, err := h.info(name)
	return inf, !exists, err
}

// PatchConnectorConfig implements Herder.
func (h *Standalone) PatchConnectorConfig(name string, patch map[string]*string) (*ConnectorInfo, error) {
	old, err := h.config(name)
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
	inf, _, err := h.PutConnectorConfig(name, old, true)
	return inf, err
}

// DeleteConnector implements Herder.
func (h *Standalone) DeleteConnector(name string) error {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.mu.Lock()
	if _, ok := h.st.configs[name]; !ok {
		h.mu.Unlock()
		return notFound("Connector %s not found", name)
	}
	delete(h.st.configs, name)
	delete(h.st.tasks, name)
	delete(h.st.targets, name)
	h.forget(name)
	h.mu.Unlock()
	h.reconcile()
	return nil
}

// Status implements Herder.
func (h *Standalone) Status(name string) (*StateInfo, error) { return h.status(name) }

// TaskStatus implements Herder.
func (h *Standalone) TaskStatus(id worker.TaskID) (*worker.Status, error) { return h.taskStatus(id) }

// Tasks implements Herder.
func (h *Standalone) Tasks(name string) ([]TaskInfo, error) { return h.taskInfos(name) }

// RestartConnector implements Herder.
func (h *Standalone) RestartConnector(name string) error {
	if _, err := h.config(name); err != nil {
		return err
	}
	h.restartLocal(name, true, nil)
	h.reconfigure(name)
	return nil
}

// Restart implements Herder.
func (h *Standalone) Restart(name string, includeTasks, onlyFailed bool) (*StateInfo, error) {
	si, conn, tasks, err := h.restartPlan(name, includeTasks, onlyFailed)
	if err != nil {
		return nil, err
	}
	go func() {
		h.restartLocal(name, conn, tasks)
		if conn {
			h.reconfigure(name)
		}
	}()
	return si, nil
}

// RestartTask implements Herder.
func (h *Standalone) RestartTask(id worker.TaskID) error {
	if _, err := h.taskStatus(id); err != nil {
		return notFound("Task %s not found", id)
	}
	h.restartLocal(id.Connector, false, []worker.TaskID{id})
	return nil
}

// SetTarget implements Herder: pause, resume or stop. A stopped connector
// has no tasks; resuming it generates them again.
func (h *Standalone) SetTarget(name string, ts worker.TargetState) error {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.mu.Lock()
	if _, ok := h.st.configs[name]; !ok {
		h.mu.Unlock()
		return notFound("Connector %s not found", name)
	}
	h.st.targets[name] = ts
	if ts == worker.TargetStopped {
		h.st.tasks[name] = nil
		for id := range h.statuses {
			if id.Connector == name && id.Task >= 0 {
				delete(h.statuses, id)
			}
		}
	}
	h.mu.Unlock()
	h.reconcile()
	if ts == worker.TargetStarted {
		h.reconfigureLocked(name)
	}
	return nil
}

// Topics implements Herder.
func (h *Standalone) Topics(name string) ([]string, error) { return h.topicsOf(name) }

// ResetTopics implements Herder.
func (h *Standalone) ResetTopics(name string) error { return h.resetTopics(name) }

// Offsets implements Herder.
func (h *Standalone) Offsets(name string) (Offsets, worker.ConnectorKind, error) {
	return h.offsets(name)
}

// AlterOffsets implements Herder.
func (h *Standalone) AlterOffsets(name string, offs Offsets, reset bool) (string, error) {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	return h.alterOffsets(name, offs, reset, func(ctx context.Context, es []worker.OffsetEntry) error {
		return h.core.w.Offsets().Put(ctx, name, es)
	})
}

// Validate implements Herder.
func (h *Standalone) Validate(cfg map[string]string) (*worker.Validation, error) {
	return h.validateOnly(cfg)
}
