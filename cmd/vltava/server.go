package main

import (
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only with --pprof
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/logging"
	"github.com/vltava/vltava/internal/node"
)

func newServerCommand() *cobra.Command {
	var (
		configFile string
		overrides  []string
		pprofAddr  string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a broker node",
		Long: `Run a Vltava node. With no flags it is a single-node cluster: listener
PLAINTEXT://127.0.0.1:9092, data under ./data, topics created on first use.

Settings use Kafka's broker config names (server.properties), from a file
and/or --override flags; later overrides win. SIGINT or SIGTERM shuts the
node down cleanly.`,
		Example: `  vltava server
  vltava server --config server.properties
  vltava server --override listeners=PLAINTEXT://127.0.0.1:19092 --override log.dirs=/var/lib/vltava`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			cfg, warnings, err := config.LoadBroker(configFile, overrides)
			if err != nil {
				return err
			}
			// log.format; the loggers' levels change at run time through
			// the broker-logger configs (internal/logging).
			log, _, err := logging.New(os.Stderr, cfg.LogFormat, level)
			if err != nil {
				return err
			}
			slog.SetDefault(log)
			for _, w := range warnings {
				log.Warn(w)
			}
			// Kafka prints its effective config as a block at start-up;
			// one key per line reads better than one escaped log line.
			log.Info("effective configuration follows")
			fmt.Fprint(os.Stderr, indent(cfg.String()))
			if pprofAddr != "" {
				go func() {
					log.Info("pprof listening", "addr", pprofAddr)
					if err := http.ListenAndServe(pprofAddr, nil); err != nil {
						log.Error("pprof server", "err", err)
					}
				}()
			}

			n, err := node.Start(cfg, log)
			if err != nil {
				return err
			}
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			s := <-sig
			log.Info("shutting down", "signal", s.String())
			signal.Stop(sig)
			if err := n.Close(); err != nil {
				return fmt.Errorf("shutdown: %w", err)
			}
			log.Info("shut down cleanly")
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "broker config file (server.properties format)")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a config key: --override key=value (repeatable)")
	cmd.Flags().StringVar(&pprofAddr, "pprof", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return cmd
}

// indent prefixes every line with two spaces.
func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			b.WriteString("  ")
			b.WriteString(line)
		}
	}
	return b.String()
}
