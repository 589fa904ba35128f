package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/connect/runner"
)

// connectClient calls a worker's REST API.
type connectClient struct {
	base   string
	output string
	out    io.Writer
	http   *http.Client
	wait   time.Duration // how long to retry a worker not ready (call)
}

// call performs a request; a non-2xx answer is an error with the worker's
// message. For up to c.wait it retries while the worker cannot answer yet:
// nothing listens at the URL (a node or worker still starting), or the
// worker answers 409 because it is joining or rebalancing its group (the
// REST API's "momentarily" conflict, which Kafka's clients retry too). A
// 409 for another reason, such as an existing connector, is not retried.
func (c *connectClient) call(method, path string, body any) ([]byte, int, error) {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, err
		}
		payload = b
	}
	deadline := time.Now().Add(c.wait)
	backoff := 100 * time.Millisecond
	for {
		b, code, err, retry := c.callOnce(method, path, payload)
		if !retry || time.Now().Add(backoff).After(deadline) {
			return b, code, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 2*time.Second)
	}
}

// retriedConflicts are the 409 messages of a worker that is not yet, or
// not at the moment, able to serve a request (herder.ErrRebalancing and
// the forwarding conflict).
var retriedConflicts = []string{
	"Cannot complete request momentarily",
	"Cannot complete request because of a conflicting operation",
}

func (c *connectClient) callOnce(method, path string, payload []byte) (_ []byte, _ int, _ error, retry bool) {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(c.base, "/")+path, rd)
	if err != nil {
		return nil, 0, err, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("connect worker at %s: %w", c.base, err), errors.Is(err, syscall.ECONNREFUSED)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, err, false
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &e) == nil && e.Message != "" {
			retry := false
			if resp.StatusCode == http.StatusConflict {
				for _, m := range retriedConflicts {
					retry = retry || strings.HasPrefix(e.Message, m)
				}
			}
			return nil, resp.StatusCode, fmt.Errorf("%s %s: %d: %s", method, path, resp.StatusCode, e.Message), retry
		}
		return nil, resp.StatusCode, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode), false
	}
	return b, resp.StatusCode, nil, false
}

// printJSON writes a JSON answer indented.
func (c *connectClient) printJSON(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		_, err = c.out.Write(b)
		return err
	}
	buf.WriteByte('\n')
	_, err := c.out.Write(buf.Bytes())
	return err
}

func addConnectClientCommands(parent *cobra.Command) {
	cc := &connectClient{http: &http.Client{Timeout: 90 * time.Second}}
	def := os.Getenv("VLTAVA_CONNECT_URL")
	if def == "" {
		def = DefaultConnectURL
	}
	add := func(c *cobra.Command) {
		c.Flags().StringVar(&cc.base, "connect-url", def, "the worker's REST API (env VLTAVA_CONNECT_URL)")
		c.Flags().StringVar(&cc.output, "output", "table", "output format: table or json")
		c.Flags().DurationVar(&cc.wait, "wait", time.Minute, "how long to retry while the worker is starting or rebalancing (connection refused, or 409 \"Cannot complete request momentarily\"); 0: no retry")
		pre := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			cc.out = cmd.OutOrStdout()
			if cc.output != "table" && cc.output != "json" {
				return fmt.Errorf("--output %q: want table or json", cc.output)
			}
			return pre(cmd, args)
		}
		parent.AddCommand(c)
	}
	esc := url.PathEscape
	add(&cobra.Command{
		Use: "list", Short: "List connectors with their states", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			b, _, err := cc.call("GET", "/connectors?expand=status", nil)
			if err != nil {
				return err
			}
			if cc.output == "json" {
				return cc.printJSON(b)
			}
			var m map[string]struct {
				Status statusBody `json:"status"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
			names := make([]string, 0, len(m))
			for n := range m {
				names = append(names, n)
			}
			sort.Strings(names)
			tw := tabwriter.NewWriter(cc.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTYPE\tSTATE\tTASKS")
			for _, n := range names {
				s := m[n].Status
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n, s.Type, s.Connector.State, s.taskSummary())
			}
			return tw.Flush()
		},
	})
	var file string
	create := &cobra.Command{
		Use: "create -f FILE", Short: "Create a connector from a .json or .properties file", Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if file == "" {
				return fmt.Errorf("-f FILE is required")
			}
			cfg, err := runner.LoadConnector(file)
			if err != nil {
				return err
			}
			b, _, err := cc.call("POST", "/connectors", map[string]any{"name": cfg["name"], "config": cfg})
			if err != nil {
				return err
			}
			if cc.output == "json" {
				return cc.printJSON(b)
			}
			fmt.Fprintf(cc.out, "Created connector %s\n", cfg["name"])
			return nil
		},
	}
	create.Flags().StringVarP(&file, "file", "f", "", "connector config file (.json as POST /connectors takes it, or .properties)")
	add(create)
	add(&cobra.Command{
		Use: "status NAME", Short: "Show a connector's and its tasks' states", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			b, _, err := cc.call("GET", "/connectors/"+esc(args[0])+"/status", nil)
			if err != nil {
				return err
			}
			if cc.output == "json" {
				return cc.printJSON(b)
			}
			var s statusBody
			if err := json.Unmarshal(b, &s); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cc.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INSTANCE\tSTATE\tWORKER")
			fmt.Fprintf(tw, "connector %s (%s)\t%s\t%s\n", s.Name, s.Type, s.Connector.State, s.Connector.WorkerID)
			for _, t := range s.Tasks {
				fmt.Fprintf(tw, "task %d\t%s\t%s\n", t.ID, t.State, t.WorkerID)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if s.Connector.Trace != "" {
				fmt.Fprintf(cc.out, "\nconnector trace:\n%s\n", s.Connector.Trace)
			}
			for _, t := range s.Tasks {
				if t.Trace != "" {
					fmt.Fprintf(cc.out, "\ntask %d trace:\n%s\n", t.ID, t.Trace)
				}
			}
			return nil
		},
	})
	for _, verb := range []string{"pause", "resume", "stop"} {
		add(&cobra.Command{
			Use: verb + " NAME", Short: strings.ToUpper(verb[:1]) + verb[1:] + " a connector", Args: cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				if _, _, err := cc.call("PUT", "/connectors/"+esc(args[0])+"/"+verb, nil); err != nil {
					return err
				}
				fmt.Fprintf(cc.out, "%s requested for %s\n", verb, args[0])
				return nil
			},
		})
	}
	var includeTasks, onlyFailed bool
	var task int
	restart := &cobra.Command{
		Use: "restart NAME", Short: "Restart a connector (--include-tasks, --only-failed) or one task (--task)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/connectors/" + esc(args[0]) + "/restart"
			if cmd.Flags().Changed("task") {
				path = fmt.Sprintf("/connectors/%s/tasks/%d/restart", esc(args[0]), task)
			} else {
				path += fmt.Sprintf("?includeTasks=%t&onlyFailed=%t", includeTasks, onlyFailed)
			}
			b, _, err := cc.call("POST", path, nil)
			if err != nil {
				return err
			}
			if cc.output == "json" {
				return cc.printJSON(b)
			}
			fmt.Fprintf(cc.out, "restart requested for %s\n", args[0])
			return nil
		},
	}
	restart.Flags().BoolVar(&includeTasks, "include-tasks", false, "restart the tasks too")
	restart.Flags().BoolVar(&onlyFailed, "only-failed", false, "restart only failed instances")
	restart.Flags().IntVar(&task, "task", 0, "restart this task only")
	add(restart)
	add(&cobra.Command{
		Use: "delete NAME", Short: "Delete a connector", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if _, _, err := cc.call("DELETE", "/connectors/"+esc(args[0]), nil); err != nil {
				return err
			}
			fmt.Fprintf(cc.out, "Deleted connector %s\n", args[0])
			return nil
		},
	})
	var offFile string
	var reset bool
	offsets := &cobra.Command{
		Use:   "offsets NAME",
		Short: "Show a connector's offsets; --reset or --alter-file FILE change those of a stopped connector",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := "/connectors/" + esc(args[0]) + "/offsets"
			var b []byte
			var err error
			switch {
			case reset && offFile != "":
				return fmt.Errorf("--reset and --alter-file are exclusive")
			case reset:
				b, _, err = cc.call("DELETE", path, nil)
			case offFile != "":
				raw, rerr := os.ReadFile(offFile)
				if rerr != nil {
					return rerr
				}
				var body any
				if jerr := json.Unmarshal(raw, &body); jerr != nil {
					return fmt.Errorf("%s: %w", offFile, jerr)
				}
				b, _, err = cc.call("PATCH", path, body)
			default:
				b, _, err = cc.call("GET", path, nil)
			}
			if err != nil {
				return err
			}
			return cc.printJSON(b)
		},
	}
	offsets.Flags().BoolVar(&reset, "reset", false, "reset the offsets (DELETE)")
	offsets.Flags().StringVar(&offFile, "alter-file", "", `alter the offsets to those of a JSON file {"offsets":[{"partition":{...},"offset":{...}}]} (PATCH)`)
	add(offsets)
}

type statusBody struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"tasks"`
}

func (s statusBody) taskSummary() string {
	counts := map[string]int{}
	for _, t := range s.Tasks {
		counts[t.State]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}
