// Package http is an HTTP sink connector: it sends the records it is given
// in batches to a URL, with retries, under the configuration keys of
// Confluent's HTTP sink where they exist (http.api.url, request.method,
// headers, batch.max.size, batch.prefix/suffix/separator,
// request.body.format, batch.json.as.array, max.retries, retry.backoff.ms,
// retry.on.status.codes, behavior.on.error, behavior.on.null.values,
// auth.type with connection.user/password). Its class is
// io.vltava.connect.http.HttpSinkConnector; Confluent's class name
// io.confluent.connect.http.HttpSinkConnector is accepted too.
package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vltava/vltava/connect"
	pjson "github.com/vltava/vltava/internal/connect/plugins/json"
)

// The class names.
const (
	Class          = "io.vltava.connect.http.HttpSinkConnector"
	ConfluentClass = "io.confluent.connect.http.HttpSinkConnector"
)

const version = "1.0"

func init() {
	connect.RegisterSink(Class, version, func() connect.SinkConnector { return &Connector{} }, ConfluentClass)
}

// unsupported are Confluent HTTP sink keys not implemented here; they are
// refused by name rather than ignored.
var unsupported = []string{"oauth2.token.url", "oauth2.client.id", "oauth2.client.secret", "https.ssl.keystore.location",
	"https.ssl.truststore.location", "regex.patterns", "regex.replacements", "report.errors.as", "http.proxy.host",
	"reporter.bootstrap.servers", "batch.key.pattern", "header.separator.char"}

func configDef() *connect.ConfigDef {
	str := func(name, def, doc string) connect.ConfigKey {
		return connect.ConfigKey{Name: name, Type: connect.TypeString, Default: def, Importance: connect.Medium, Doc: doc}
	}
	return connect.NewConfigDef().
		Define(connect.ConfigKey{Name: "http.api.url", Type: connect.TypeString, Required: true, Importance: connect.High,
			Doc: "HTTP API URL."}).
		Define(connect.ConfigKey{Name: "request.method", Type: connect.TypeString, Default: "POST", Importance: connect.High,
			Check: connect.OneOf(true, "POST", "PUT", "PATCH"), Doc: "HTTP Request Method: POST, PUT or PATCH."}).
		Define(str("headers", "", "HTTP headers to be included in all requests, separated by the header.separator (Name:Value|Name:Value).")).
		Define(str("header.separator", "|", "Separator character used in headers property.")).
		Define(connect.ConfigKey{Name: "batch.max.size", Type: connect.TypeInt, Default: int32(1), Importance: connect.Medium,
			Check: connect.InRange(1, 1<<31-1), Doc: "The number of records accumulated in a batch before the HTTP API is invoked."}).
		Define(str("batch.prefix", "", "Prefix added to record batches.")).
		Define(str("batch.suffix", "", "Suffix added to record batches.")).
		Define(str("batch.separator", ",", "Separator for records in a batch.")).
		Define(connect.ConfigKey{Name: "request.body.format", Type: connect.TypeString, Default: "string", Importance: connect.Medium,
			Check: connect.OneOf(true, "string", "json"), Doc: "Used to produce request body in either JSON or String format."}).
		Define(connect.ConfigKey{Name: "batch.json.as.array", Type: connect.TypeBoolean, Default: false, Importance: connect.Medium,
			Doc: "Whether or not to use an array to bundle json records. Only used when request.body.format is set to json."}).
		Define(connect.ConfigKey{Name: "max.retries", Type: connect.TypeInt, Default: int32(10), Importance: connect.Medium,
			Check: connect.InRange(0, 1<<31-1), Doc: "The maximum number of times to retry on errors before failing the task."}).
		Define(connect.ConfigKey{Name: "retry.backoff.ms", Type: connect.TypeInt, Default: int32(3000), Importance: connect.Medium,
			Check: connect.InRange(0, 1<<31-1), Doc: "The initial duration in milliseconds to wait following an error before a retry attempt is made; it doubles on each attempt."}).
		Define(str("retry.on.status.codes", "400-", "The HTTP error codes to retry on: a comma-separated list of codes or ranges (400-499, 500-)")).
		Define(connect.ConfigKey{Name: "behavior.on.error", Type: connect.TypeString, Default: "fail", Importance: connect.Low,
			Check: connect.OneOf(true, "fail", "log", "ignore"), Doc: "Error handling behavior setting for handling response from HTTP requests: fail, log or ignore."}).
		Define(connect.ConfigKey{Name: "behavior.on.null.values", Type: connect.TypeString, Default: "ignore", Importance: connect.Low,
			Check: connect.OneOf(true, "ignore", "fail"), Doc: "How to handle records with a non-null key and a null value: ignore or fail."}).
		Define(connect.ConfigKey{Name: "auth.type", Type: connect.TypeString, Default: "NONE", Importance: connect.High,
			Check: connect.OneOf(true, "NONE", "BASIC"), Doc: "Authentication type of the endpoint: NONE or BASIC."}).
		Define(connect.ConfigKey{Name: "connection.user", Type: connect.TypeString, Default: "", Importance: connect.High, Doc: "The username to be used with an endpoint requiring basic authentication."}).
		Define(connect.ConfigKey{Name: "connection.password", Type: connect.TypePassword, Default: "", Importance: connect.High, Doc: "The password to be used with an endpoint requiring basic authentication."}).
		Define(connect.ConfigKey{Name: "http.request.timeout.ms", Type: connect.TypeInt, Default: int32(30000), Importance: connect.Low,
			Check: connect.InRange(1, 1<<31-1), Doc: "HTTP request timeout in milliseconds."})
}

type config struct {
	url, method         string
	headers             [][2]string
	batchSize           int
	prefix, suffix, sep string
	jsonBody, jsonArray bool
	maxRetries          int
	backoff             time.Duration
	retryOn             [][2]int
	onError, onNull     string
	user, password      string
	basic               bool
	timeout             time.Duration
}

func parseConfig(props map[string]string) (*config, error) {
	for _, k := range unsupported {
		if _, ok := props[k]; ok {
			return nil, fmt.Errorf("%s is not supported by this connector", k)
		}
	}
	p, err := configDef().Parse(props)
	if err != nil {
		return nil, err
	}
	c := &config{
		url: p["http.api.url"].(string), method: strings.ToUpper(p["request.method"].(string)),
		batchSize: int(p["batch.max.size"].(int32)),
		prefix:    p["batch.prefix"].(string), suffix: p["batch.suffix"].(string), sep: p["batch.separator"].(string),
		jsonBody:   strings.EqualFold(p["request.body.format"].(string), "json"),
		jsonArray:  p["batch.json.as.array"].(bool),
		maxRetries: int(p["max.retries"].(int32)),
		backoff:    time.Duration(p["retry.backoff.ms"].(int32)) * time.Millisecond,
		onError:    strings.ToLower(p["behavior.on.error"].(string)),
		onNull:     strings.ToLower(p["behavior.on.null.values"].(string)),
		user:       p["connection.user"].(string), password: p["connection.password"].(string),
		basic:   strings.EqualFold(p["auth.type"].(string), "BASIC"),
		timeout: time.Duration(p["http.request.timeout.ms"].(int32)) * time.Millisecond,
	}
	if !strings.HasPrefix(c.url, "http://") && !strings.HasPrefix(c.url, "https://") {
		return nil, fmt.Errorf("Invalid value %s for configuration http.api.url: not an http or https URL", c.url)
	}
	if hs := p["headers"].(string); hs != "" {
		for _, h := range strings.Split(hs, p["header.separator"].(string)) {
			name, val, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(name) == "" {
				return nil, fmt.Errorf("Invalid value %s for configuration headers: %q is not Name:Value", hs, h)
			}
			c.headers = append(c.headers, [2]string{strings.TrimSpace(name), strings.TrimSpace(val)})
		}
	}
	if c.retryOn, err = parseCodes(p["retry.on.status.codes"].(string)); err != nil {
		return nil, err
	}
	if c.basic && c.user == "" {
		return nil, fmt.Errorf("auth.type=BASIC needs connection.user")
	}
	return c, nil
}

// parseCodes reads "400-499,503,500-" into ranges (an open end is 599).
func parseCodes(s string) ([][2]int, error) {
	var out [][2]int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		l, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("Invalid value %s for configuration retry.on.status.codes", s)
		}
		h := l
		if isRange {
			h = 599
			if hi != "" {
				if h, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("Invalid value %s for configuration retry.on.status.codes", s)
				}
			}
		}
		out = append(out, [2]int{l, h})
	}
	return out, nil
}

func (c *config) retriable(code int) bool {
	for _, r := range c.retryOn {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}

// Connector is the HTTP sink connector.
type Connector struct{ props map[string]string }

// Version implements connect.Connector.
func (c *Connector) Version() string { return version }

// Config implements connect.Connector.
func (c *Connector) Config() *connect.ConfigDef { return configDef() }

// Initialize implements connect.Connector.
func (c *Connector) Initialize(connect.ConnectorContext) {}

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
	out := make([]map[string]string, maxTasks)
	for i := range out {
		out[i] = c.props
	}
	return out, nil
}

// Stop implements connect.Connector.
func (c *Connector) Stop() error { return nil }

// NewTask implements connect.SinkConnector.
func (c *Connector) NewTask() connect.SinkTask { return &Task{} }

// Task sends each Put's records in batches of batch.max.size, one request
// per batch, in order; a failed request is retried max.retries times with
// doubling backoff before behavior.on.error decides. Put, PreCommit and
// Close run on the worker's task goroutine; Stop may run on another and
// only cancels the context.
type Task struct {
	cfg    *config
	client *nethttp.Client
	conv   *pjson.Converter

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

// Version implements connect.SinkTask.
func (t *Task) Version() string { return version }

// Initialize implements connect.SinkTask.
func (t *Task) Initialize(connect.SinkTaskContext) {}

// Start implements connect.SinkTask.
func (t *Task) Start(props map[string]string) error {
	cfg, err := parseConfig(props)
	if err != nil {
		return err
	}
	t.cfg = cfg
	t.client = &nethttp.Client{Timeout: cfg.timeout}
	t.conv = pjson.New()
	if err := t.conv.Configure(map[string]string{"schemas.enable": "false"}, false); err != nil {
		return err
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return nil
}

// Open implements connect.SinkTask.
func (t *Task) Open([]connect.TopicPartition) error { return nil }

// Close implements connect.SinkTask.
func (t *Task) Close([]connect.TopicPartition) error { return nil }

// PreCommit implements connect.SinkTask: every Put is sent before it
// returns.
func (t *Task) PreCommit(cur map[connect.TopicPartition]int64) (map[connect.TopicPartition]int64, error) {
	return cur, nil
}

// Stop implements connect.SinkTask.
func (t *Task) Stop() error {
	t.once.Do(func() {
		if t.cancel != nil {
			t.cancel()
		}
	})
	return nil
}

// Put implements connect.SinkTask.
func (t *Task) Put(records []connect.SinkRecord) error {
	var batch [][]byte
	for i := range records {
		r := &records[i]
		if r.Value == nil {
			if t.cfg.onNull == "fail" {
				return fmt.Errorf("record at (topic='%s',offset=%d) has a null value and behavior.on.null.values=fail", r.Topic, r.KafkaOffset)
			}
			continue
		}
		body, err := t.format(r)
		if err != nil {
			return fmt.Errorf("record at (topic='%s',offset=%d): %w", r.Topic, r.KafkaOffset, err)
		}
		batch = append(batch, body)
		if len(batch) == t.cfg.batchSize {
			if err := t.send(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return t.send(batch)
	}
	return nil
}

// format is one record's part of the body: the value's string form, or
// its JSON with request.body.format=json.
func (t *Task) format(r *connect.SinkRecord) ([]byte, error) {
	if !t.cfg.jsonBody {
		switch v := r.Value.(type) {
		case string:
			return []byte(v), nil
		case []byte:
			return v, nil
		}
	}
	return t.conv.FromConnectData(r.Topic, r.Headers, r.ValueSchema, r.Value)
}

func (t *Task) body(batch [][]byte) []byte {
	var b bytes.Buffer
	if t.cfg.jsonBody && t.cfg.jsonArray {
		b.WriteByte('[')
		b.Write(bytes.Join(batch, []byte(",")))
		b.WriteByte(']')
		return b.Bytes()
	}
	b.WriteString(t.cfg.prefix)
	b.Write(bytes.Join(batch, []byte(t.cfg.sep)))
	b.WriteString(t.cfg.suffix)
	return b.Bytes()
}

// send makes the request, retrying as configured.
func (t *Task) send(batch [][]byte) error {
	body := t.body(batch)
	backoff := t.cfg.backoff
	var last error
	for attempt := 0; attempt <= t.cfg.maxRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-t.ctx.Done():
				return t.ctx.Err()
			case <-time.After(backoff):
			}
			backoff *= 2
		}
		code, err := t.request(body)
		if err == nil && code < 300 {
			return nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("HTTP %s %s answered %d", t.cfg.method, t.cfg.url, code)
			if !t.cfg.retriable(code) {
				break
			}
		}
		slog.Warn("http sink: request failed", "attempt", attempt+1, "err", last)
	}
	switch t.cfg.onError {
	case "log":
		slog.Error("http sink: giving up on a batch (behavior.on.error=log)", "records", len(batch), "err", last)
		return nil
	case "ignore":
		return nil
	}
	return fmt.Errorf("Exceeded max retries (%d) sending %d records: %w", t.cfg.maxRetries, len(batch), last)
}

func (t *Task) request(body []byte) (int, error) {
	req, err := nethttp.NewRequestWithContext(t.ctx, t.cfg.method, t.cfg.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for _, h := range t.cfg.headers {
		req.Header.Add(h[0], h[1])
	}
	if req.Header.Get("Content-Type") == "" {
		if t.cfg.jsonBody {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", "text/plain")
		}
	}
	if t.cfg.basic {
		req.SetBasicAuth(t.cfg.user, t.cfg.password)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
