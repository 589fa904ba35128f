// Package runtime runs a Kafka Connect worker inside a Go program: the
// worker `vltava connect standalone` and `vltava connect distributed` run,
// with the REST API on its listeners and every plugin registered through
// package connect, the built-in ones and the program's own:
//
//	func init() {
//		connect.RegisterSource("com.example.MySourceConnector", "1.0", func() connect.SourceConnector { return &mySource{} })
//	}
//
//	w, err := runtime.Start(runtime.Standalone, map[string]string{
//		"bootstrap.servers":            "127.0.0.1:9092",
//		"key.converter":                "org.apache.kafka.connect.storage.StringConverter",
//		"value.converter":              "org.apache.kafka.connect.json.JsonConverter",
//		"offset.storage.file.filename": "/var/lib/my-worker/offsets",
//	}, map[string]string{"name": "mine", "connector.class": "com.example.MySourceConnector"})
//
// The worker properties are Kafka Connect's (docs/CONNECT.md); an unknown
// or unsupported key is an error naming it.
package runtime

import (
	"errors"
	"net"

	"github.com/vltava/vltava/internal/connect/runner"
	"github.com/vltava/vltava/internal/connect/worker"
)

// Mode is how the worker keeps its state.
type Mode int

// The modes.
const (
	// Standalone keeps offsets in offset.storage.file.filename and runs
	// the connectors given to Start.
	Standalone Mode = iota
	// Distributed joins the worker group group.id and keeps configs,
	// offsets and statuses in Kafka's three internal topics; connectors
	// are created through the REST API.
	Distributed
)

// Worker is a running worker.
type Worker struct{ r *runner.Runner }

// Start connects to the cluster, serves the REST API on listeners
// (default http://127.0.0.1:8083) and, in standalone mode, creates the
// given connectors (each a connector config with its name).
func Start(mode Mode, props map[string]string, connectors ...map[string]string) (*Worker, error) {
	o := runner.Options{Worker: props, Connectors: connectors}
	switch mode {
	case Standalone:
		o.Mode = worker.Standalone
	case Distributed:
		if len(connectors) > 0 {
			return nil, errors.New("a distributed worker's connectors are created through its REST API")
		}
		o.Mode = worker.Distributed
	default:
		return nil, errors.New("unknown mode")
	}
	r, err := runner.Start(o)
	if err != nil {
		return nil, err
	}
	return &Worker{r: r}, nil
}

// Addrs are the REST API's bound addresses.
func (w *Worker) Addrs() []net.Addr { return w.r.Addrs() }

// Close stops the REST API, then every connector and task.
func (w *Worker) Close() { w.r.Close() }
