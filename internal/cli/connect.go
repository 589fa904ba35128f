package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/connect/runner"
	"github.com/vltava/vltava/internal/connect/worker"
	"github.com/vltava/vltava/internal/logging"
)

// DefaultConnectURL is where the client subcommands find the REST API.
const DefaultConnectURL = "http://127.0.0.1:8083"

func newConnectCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "connect",
		Short: "Run a Kafka Connect worker, or drive one through its REST API",
		Long: `Run a Connect worker (standalone or distributed) with Kafka Connect's
worker and connector configs, or manage connectors through a worker's REST
API (list, create, status, pause, resume, restart, delete, offsets).`,
	}
	var logLevel string
	c.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level of a worker: debug, info, warn, error")
	run := func(mode worker.Mode, workerFile string, connFiles []string) error {
		var level slog.Level
		if err := level.UnmarshalText([]byte(logLevel)); err != nil {
			return fmt.Errorf("--log-level: %w", err)
		}
		log, levels, err := logging.New(os.Stderr, "text", level)
		if err != nil {
			return err
		}
		props, err := runner.LoadProperties(workerFile)
		if err != nil {
			return err
		}
		var conns []map[string]string
		for _, f := range connFiles {
			cfg, err := runner.LoadConnector(f)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			conns = append(conns, cfg)
		}
		r, err := runner.Start(runner.Options{Mode: mode, Worker: props, Connectors: conns, Log: log, Levels: levels})
		if err != nil {
			return err
		}
		addrs := make([]string, 0)
		for _, a := range r.Addrs() {
			addrs = append(addrs, a.String())
		}
		log.Info("connect worker started", "component", "connect", "rest", strings.Join(addrs, ","))
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		log.Info("connect worker stopping", "component", "connect")
		r.Close()
		return nil
	}
	c.AddCommand(&cobra.Command{
		Use:   "standalone WORKER.PROPERTIES [CONNECTOR.PROPERTIES|CONNECTOR.JSON ...]",
		Short: "Run a standalone worker with the given connectors (offsets in offset.storage.file.filename)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return run(worker.Standalone, args[0], args[1:])
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "distributed WORKER.PROPERTIES",
		Short: "Run a distributed worker (group.id, config/offset/status storage topics)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return run(worker.Distributed, args[0], nil)
		},
	})
	addConnectClientCommands(c)
	return c
}
