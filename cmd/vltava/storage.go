package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/node"
)

// newStorageCommand is `vltava storage`, the counterpart of kafka-storage.sh.
func newStorageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Format and inspect a node's storage (like kafka-storage.sh)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newStorageFormatCommand(), newStorageRandomUUIDCommand(), newStorageInfoCommand())
	return cmd
}

func newStorageFormatCommand() *cobra.Command {
	var (
		configFile, clusterID, initial string
		addScram                       []string
		overrides                      []string
		o                              node.FormatOptions
	)
	cmd := &cobra.Command{
		Use:   "format",
		Short: "Write meta.properties (and a dynamic quorum's initial voters) to the log dirs",
		Long: `Format the log dirs and the metadata log dir of a node, as kafka-storage.sh
format: each gets a meta.properties with cluster.id, node.id and its own
directory.id.

A controller of a dynamic quorum (controller.quorum.bootstrap.servers, KIP-853)
needs one of:
  --standalone              the first controller: the only initial voter
  --initial-controllers L   every initial controller, with the same list
                            id@host:port:directory-id,...
  --no-initial-controllers  a controller that joins the quorum later
                            (vltava cluster add-controller makes it a voter)
Brokers, and nodes of a static quorum (controller.quorum.voters), are formatted
with --cluster-id alone.`,
		Example: `  vltava storage format --config server.properties --cluster-id $(vltava storage random-uuid) --standalone
  vltava storage format --config controller2.properties --cluster-id MkU3OEVBNTcwNTJENDM2Qk --no-initial-controllers`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile == "" && len(overrides) == 0 {
				return errors.New("--config (or --override) is required")
			}
			cfg, _, err := config.LoadBroker(configFile, overrides)
			if err != nil {
				return err
			}
			if initial != "" {
				if o.InitialControllers, err = quorum.ParseInitialControllers(initial); err != nil {
					return err
				}
			}
			// Required, as kafka-storage.sh requires it: nodes formatted
			// with ids generated one by one would belong to different
			// clusters.
			if clusterID == "" {
				return fmt.Errorf("--cluster-id is required: generate one with `vltava storage random-uuid` and format every node of the cluster with it")
			}
			o.ClusterID = clusterID
			for _, a := range addScram {
				rec, err := node.ParseAddScram(a)
				if err != nil {
					return err
				}
				o.Bootstrap = append(o.Bootstrap, rec)
			}
			res, err := node.Format(cfg, o)
			for _, d := range res.Skipped {
				fmt.Fprintf(cmd.OutOrStdout(), "Skipping %s: already formatted\n", d)
			}
			if err != nil {
				return err
			}
			for _, d := range res.Formatted {
				fmt.Fprintf(cmd.OutOrStdout(), "Formatting %s with cluster.id %s and node.id %d\n", d, o.ClusterID, cfg.NodeID)
			}
			for _, v := range res.InitialVoters {
				fmt.Fprintf(cmd.OutOrStdout(), "Initial controller %s\n", quorum.FormatInitialController(v))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&configFile, "config", "c", "", "the node's config file (server.properties format)")
	f.StringArrayVar(&overrides, "override", nil, "set a config key: --override key=value (repeatable)")
	f.StringVarP(&clusterID, "cluster-id", "t", "", "the cluster id, the same on every node (required; `vltava storage random-uuid` makes one)")
	f.BoolVarP(&o.Standalone, "standalone", "s", false, "make this controller the only initial voter of a dynamic quorum")
	f.StringVarP(&initial, "initial-controllers", "I", "", "initial voters of a dynamic quorum: id@host:port:directory-id,...")
	f.BoolVarP(&o.NoInitialControllers, "no-initial-controllers", "N", false, "a controller that joins an existing dynamic quorum as an observer")
	f.BoolVarP(&o.IgnoreFormatted, "ignore-formatted", "g", false, "skip directories that are already formatted")
	f.StringArrayVarP(&addScram, "add-scram", "S", nil, "a SCRAM credential for the cluster's first start: 'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)")
	return cmd
}

func newStorageRandomUUIDCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "random-uuid",
		Short: "Print a new cluster or directory id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), metadata.NewUuid().String())
			return nil
		},
	}
}

func newStorageInfoCommand() *cobra.Command {
	var configFile string
	var overrides []string
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the meta.properties of each log dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile == "" && len(overrides) == 0 {
				return errors.New("--config (or --override) is required")
			}
			cfg, _, err := config.LoadBroker(configFile, overrides)
			if err != nil {
				return err
			}
			for _, line := range node.StorageInfo(cfg) {
				fmt.Fprintln(cmd.OutOrStdout(), line)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&configFile, "config", "c", "", "the node's config file (server.properties format)")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a config key: --override key=value (repeatable)")
	return cmd
}
