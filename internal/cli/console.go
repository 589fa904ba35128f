package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/console"
	"github.com/vltava/vltava/internal/httpapi"
)

// newConsoleCommand is `vltava console`: the web console on its own, a
// Kafka client of any Kafka-compatible cluster through the global flags
// (--bootstrap-server, --command-config for TLS and SASL).
func newConsoleCommand() *cobra.Command {
	var listeners string
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console (topics, messages, consumer groups) for any Kafka cluster",
		Long: `Serve the web console in a browser for the Kafka cluster at --bootstrap-server:
the cluster overview, topics (search, sort, create, delete), a topic's
partitions and configs, its messages by offset or time, and consumer groups
with their lag (docs/CONSOLE.md). The console connects with the client
properties of --command-config (security.protocol, sasl.*, ssl.*), as the
other commands do. --listeners takes http://host:port entries; --read-only
refuses every change with 403. vltava server runs the same console itself
(console.listeners, default http://127.0.0.1:8080).`,
		Example: `  vltava console --bootstrap-server 127.0.0.1:9092
  vltava console --bootstrap-server broker:9093 --command-config client.properties --listeners http://0.0.0.0:8080 --read-only`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := envFor(cmd)
			if err != nil {
				return err
			}
			opts, err := httpapi.Keys{Service: "console", Prefix: "", DefaultListeners: "http://127.0.0.1:8080"}.Options(
				httpapi.MapLookup(map[string]string{"listeners": listeners}))
			if err != nil {
				return fmt.Errorf("--listeners: %w", err)
			}
			if len(opts.Listeners) == 0 {
				return fmt.Errorf("--listeners: at least one http://host:port endpoint is required")
			}
			for _, l := range opts.Listeners {
				if l.Scheme != "http" {
					return fmt.Errorf("--listeners %s: the standalone console serves http:// only; put it behind a TLS proxy, or use vltava server's console.listeners with console.ssl.*", l.Addr())
				}
			}
			c, err := console.New(console.Config{
				Bootstrap: e.seeds(),
				Client:    e.clientOpts(),
				HTTP:      opts,
				ReadOnly:  readOnly,
				Logger:    slog.Default(),
			})
			if err != nil {
				return err
			}
			if err := c.Start(); err != nil {
				c.Close()
				return err
			}
			fmt.Fprintf(e.stdout, "Web console for %s at %s\n", e.bootstrap(), "http://"+strings.Join(c.Addrs(), ", http://"))
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			select {
			case <-sig:
			case <-cmd.Context().Done():
			}
			signal.Stop(sig)
			return c.Close()
		},
	}
	cmd.Flags().StringVar(&listeners, "listeners", "http://127.0.0.1:8080", "comma-separated http://host:port endpoints to serve the console on")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "refuse every change (create, delete) with 403")
	return cmd
}
