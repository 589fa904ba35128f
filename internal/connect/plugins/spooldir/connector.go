package spooldir

import (
	"github.com/vltava/vltava/connect"
)

// The class names the connector answers to.
const (
	Class      = "com.github.jcustenborder.kafka.connect.spooldir.SpoolDirCsvSourceConnector"
	VltavaName = "io.vltava.connect.spooldir.CsvSourceConnector"
)

const version = "1.0"

func init() {
	connect.RegisterSource(Class, version, func() connect.SourceConnector { return &Connector{} }, VltavaName)
}

// Connector is the CSV spool-directory source connector. It runs one task:
// files are read one at a time, in name order.
type Connector struct {
	props map[string]string
}

// Version implements connect.Connector.
func (c *Connector) Version() string { return version }

// Config implements connect.Connector.
func (c *Connector) Config() *connect.ConfigDef { return configDef() }

// Initialize implements connect.Connector.
func (c *Connector) Initialize(connect.ConnectorContext) {}

// Validate implements connect.Validator: the cross-key rules (directories
// exist, a schema or schema generation, unsupported keys).
func (c *Connector) Validate(props map[string]string) []connect.ConfigValue {
	if _, err := parseConfig(props); err != nil {
		return []connect.ConfigValue{{Name: keyInputPath, Value: props[keyInputPath], Errors: []string{err.Error()}, Visible: true}}
	}
	return nil
}

// Start implements connect.Connector.
func (c *Connector) Start(props map[string]string) error {
	if _, err := parseConfig(props); err != nil {
		return err
	}
	c.props = props
	return nil
}

// TaskConfigs implements connect.Connector.
func (c *Connector) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	return []map[string]string{c.props}, nil
}

// Stop implements connect.Connector.
func (c *Connector) Stop() error { return nil }

// NewTask implements connect.SourceConnector.
func (c *Connector) NewTask() connect.SourceTask { return &sourceTask{} }
