// Package herder decides what a Connect worker runs and answers the REST
// API: the connector configs, target states and task configs, the statuses
// of connectors and tasks, the topics they use (KIP-558) and their offsets
// (KIP-875). Standalone keeps its state in memory (offsets in a file);
// distributed keeps it in the config, offset and status topics in Kafka
// Connect's record formats and shares the work in a group of protocol type
// connect (distributed.go, member.go).
package herder

import (
	"fmt"
	"net/http"

	"github.com/vltava/vltava/internal/connect/worker"
)

// Error is a REST error: an HTTP status and Kafka's message.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

func notFound(format string, a ...any) *Error {
	return &Error{http.StatusNotFound, fmt.Sprintf(format, a...)}
}
func conflict(format string, a ...any) *Error {
	return &Error{http.StatusConflict, fmt.Sprintf(format, a...)}
}
func badRequest(format string, a ...any) *Error {
	return &Error{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}
func forbidden(format string, a ...any) *Error {
	return &Error{http.StatusForbidden, fmt.Sprintf(format, a...)}
}

// ErrRebalancing is Kafka's answer while the group rebalances.
var ErrRebalancing = &Error{http.StatusConflict, "Cannot complete request momentarily due to stale configuration (typically caused by a concurrent config change)"}

// ConnectorInfo is GET /connectors/{name}.
type ConnectorInfo struct {
	Name   string
	Config map[string]string
	Tasks  []worker.TaskID
	Type   worker.ConnectorKind
}

// TaskInfo is one entry of GET /connectors/{name}/tasks.
type TaskInfo struct {
	ID     worker.TaskID
	Config map[string]string
}

// StateInfo is GET /connectors/{name}/status.
type StateInfo struct {
	Name      string
	Connector worker.Status
	Tasks     []worker.Status
	Type      worker.ConnectorKind
}

// Offsets are a connector's offsets: source offsets, or a sink's consumer
// offsets as {"kafka_topic","kafka_partition"} → {"kafka_offset"}.
type Offsets []worker.OffsetEntry

// Herder is what the REST API drives.
type Herder interface {
	// ClusterID is the Kafka cluster's id.
	ClusterID() string
	Connectors() ([]string, error)
	ConnectorInfo(name string) (*ConnectorInfo, error)
	ConnectorConfig(name string) (map[string]string, error)
	// PutConnectorConfig creates (created=true) or, with allowReplace,
	// updates a connector.
	PutConnectorConfig(name string, cfg map[string]string, allowReplace bool) (info *ConnectorInfo, created bool, err error)
	// PatchConnectorConfig merges patch (a nil value removes the key).
	PatchConnectorConfig(name string, patch map[string]*string) (*ConnectorInfo, error)
	DeleteConnector(name string) error
	Status(name string) (*StateInfo, error)
	TaskStatus(id worker.TaskID) (*worker.Status, error)
	Tasks(name string) ([]TaskInfo, error)
	// RestartConnector restarts the connector only (204).
	RestartConnector(name string) error
	// Restart restarts the connector and/or its tasks as Kafka's
	// RestartRequest, answering the status with RESTARTING where planned.
	Restart(name string, includeTasks, onlyFailed bool) (*StateInfo, error)
	RestartTask(id worker.TaskID) error
	SetTarget(name string, ts worker.TargetState) error
	Topics(name string) ([]string, error)
	ResetTopics(name string) error
	Offsets(name string) (Offsets, worker.ConnectorKind, error)
	// AlterOffsets changes (or with reset, removes) a STOPPED connector's
	// offsets, answering Kafka's message.
	AlterOffsets(name string, offs Offsets, reset bool) (string, error)
	Validate(cfg map[string]string) (*worker.Validation, error)
}

// NotLeader is returned by a follower for a request only the leader can
// serve; the REST API forwards it to LeaderURL.
type NotLeader struct{ LeaderURL string }

func (e *NotLeader) Error() string { return "not the leader; the leader is " + e.LeaderURL }
