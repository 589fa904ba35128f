package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/connect/runner"
	"github.com/vltava/vltava/internal/logging"
	"github.com/vltava/vltava/internal/mirror"
)

// newMirrorCommand is `vltava mirror`: MirrorMaker 2's dedicated mode
// (connect-mirror-maker.sh mm2.properties), and the failover and lag
// tools beside it.
func newMirrorCommand() *cobra.Command {
	var configFile, logLevel string
	var clusters []string
	load := func(args []string) (*mirror.Config, error) {
		path := configFile
		if path == "" && len(args) > 0 {
			path = args[0]
		}
		if path == "" {
			return nil, fmt.Errorf("--config mm2.properties is required")
		}
		props, err := runner.LoadProperties(path)
		if err != nil {
			return nil, err
		}
		cfg, err := mirror.Parse(props)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return cfg, nil
	}
	c := &cobra.Command{
		Use:   "mirror [--config] MM2.PROPERTIES",
		Short: "Mirror topics, consumer group offsets and ACLs between clusters (MirrorMaker 2)",
		Long: `Run MirrorMaker 2 in dedicated mode from an mm2.properties file, as
connect-mirror-maker.sh does: every enabled flow (A->B.enabled = true) copies
topics, configs and ACLs, writes offset syncs and checkpoints, and emits
heartbeats. --clusters limits the run to flows whose target is listed.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			log, _, err := logging.New(os.Stderr, "text", level)
			if err != nil {
				return err
			}
			cfg, err := load(args)
			if err != nil {
				return err
			}
			if len(clusters) > 0 {
				keep := map[string]bool{}
				for _, c := range clusters {
					if _, ok := cfg.Clusters[c]; !ok {
						return fmt.Errorf("--clusters: unknown cluster %q", c)
					}
					keep[c] = true
				}
				cfg.Flows = filterFlows(cfg.Flows, keep)
				cfg.HeartbeatOnly = filterFlows(cfg.HeartbeatOnly, keep)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var names []string
			for _, f := range cfg.Flows {
				names = append(names, f.Name())
			}
			log.Info("mirror maker started", "component", "mirror", "flows", strings.Join(names, ","))
			return mirror.Run(ctx, cfg, log.With("component", "mirror"))
		},
	}
	c.PersistentFlags().StringVar(&configFile, "config", "", "the mm2.properties file")
	c.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	c.Flags().StringSliceVar(&clusters, "clusters", nil, "run only the flows to these target clusters")

	var group, source, target string
	tr := &cobra.Command{
		Use:   "translate-offsets",
		Short: "Print a group's offsets on the target, translated from the source's by the checkpoints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(nil)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			offs, err := mirror.TranslateOffsets(ctx, cfg, group, source, target)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintln(w, "TOPIC PARTITION OFFSET")
			for _, o := range offs {
				fmt.Fprintf(w, "%s %d %d\n", o.Topic, o.Partition, o.Offset)
			}
			return nil
		},
	}
	tr.Flags().StringVar(&group, "group", "", "the consumer group")
	tr.Flags().StringVar(&source, "source", "", "the source cluster alias")
	tr.Flags().StringVar(&target, "target", "", "the target cluster alias")
	for _, f := range []string{"group", "source", "target"} {
		_ = tr.MarkFlagRequired(f)
	}
	st := &cobra.Command{
		Use:   "status",
		Short: "Show each flow's replication lag per partition, in records and seconds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(nil)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			lags, err := mirror.Status(ctx, cfg)
			if err != nil {
				return err
			}
			mirror.PrintStatus(cmd.OutOrStdout(), lags)
			return nil
		},
	}
	c.AddCommand(tr, st)
	return c
}

func filterFlows(fs []mirror.Flow, targets map[string]bool) []mirror.Flow {
	var out []mirror.Flow
	for _, f := range fs {
		if targets[f.Target] {
			out = append(out, f)
		}
	}
	return out
}
