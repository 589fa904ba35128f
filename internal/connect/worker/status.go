package worker

import (
	"encoding/json"
	"fmt"
)

// State is a connector's or task's state, as the REST API reports it.
type State string

// The states.
const (
	Unassigned State = "UNASSIGNED"
	Running    State = "RUNNING"
	Paused     State = "PAUSED"
	Stopped    State = "STOPPED"
	Failed     State = "FAILED"
	Restarting State = "RESTARTING"
	Destroyed  State = "DESTROYED"
)

// TargetState is what a connector is asked to be.
type TargetState string

// The target states, as Kafka's TargetState.
const (
	TargetStarted TargetState = "STARTED"
	TargetPaused  TargetState = "PAUSED"
	TargetStopped TargetState = "STOPPED"
)

// TaskID names a task; Task is -1 for the connector itself in a Status.
type TaskID struct {
	Connector string
	Task      int
}

func (id TaskID) String() string { return fmt.Sprintf("%s-%d", id.Connector, id.Task) }

// MarshalJSON is the REST API's {"connector":..., "task":...}.
func (id TaskID) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Connector string `json:"connector"`
		Task      int    `json:"task"`
	}{id.Connector, id.Task})
}

// Status is a connector's (ID.Task == -1) or a task's reported state.
type Status struct {
	ID         TaskID
	State      State
	Trace      string
	WorkerID   string
	Generation int
}

// IsConnector reports whether the status is a connector's.
func (s Status) IsConnector() bool { return s.ID.Task < 0 }
