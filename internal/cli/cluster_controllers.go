package cli

// `vltava cluster add-controller | remove-controller` and describe's
// --status and --replication: the counterparts of kafka-metadata-quorum.sh
// for a dynamic metadata quorum (KIP-853). Requests go to --bootstrap-server
// (a broker forwards them to the quorum leader) or, with
// --bootstrap-controller, straight to controller endpoints.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
)

// addQuorumCommands adds the quorum subcommands to cluster, and the
// --status and --replication views to its describe subcommand.
func addQuorumCommands(cluster *cobra.Command) {
	var bootstrapController string
	cluster.PersistentFlags().StringVar(&bootstrapController, "bootstrap-controller", "",
		"comma-separated controller endpoints (host:port of controller listeners) to send quorum requests to, instead of --bootstrap-server")
	for _, c := range cluster.Commands() {
		if c.Name() == "describe" {
			wrapDescribe(c, &bootstrapController)
		}
	}
	cluster.AddCommand(newAddControllerCommand(&bootstrapController), newRemoveControllerCommand(&bootstrapController))
}

// wrapDescribe makes describe --status / --replication print only the
// quorum, as kafka-metadata-quorum.sh describe does.
func wrapDescribe(describe *cobra.Command, bootstrapController *string) {
	var status, replication bool
	describe.Flags().BoolVar(&status, "status", false, "show the metadata quorum's status (like kafka-metadata-quorum.sh describe --status)")
	describe.Flags().BoolVar(&replication, "replication", false, "show each quorum replica's log end offset and lag (like kafka-metadata-quorum.sh describe --replication)")
	whole := describe.RunE
	describe.RunE = func(cmd *cobra.Command, args []string) error {
		if !status && !replication {
			return whole(cmd, args)
		}
		if status && replication {
			return errors.New("--status and --replication are exclusive")
		}
		e, err := envFor(cmd)
		if err != nil {
			return err
		}
		q, err := describeQuorumVia(cmd.Context(), e, *bootstrapController)
		if err != nil {
			return err
		}
		if q == nil {
			return errors.New("the cluster does not answer DescribeQuorum")
		}
		if e.json {
			return writeJSON(e.stdout, q)
		}
		if status {
			return printQuorumStatus(e.stdout, q)
		}
		return printQuorumReplication(e.stdout, q)
	}
}

func newAddControllerCommand(bootstrapController *string) *cobra.Command {
	var controllerConfig string
	var overrides []string
	cmd := &cobra.Command{
		Use:   "add-controller",
		Short: "Make a controller of a dynamic quorum a voter (AddRaftVoter)",
		Long: `Add the controller described by --controller.config (its server.properties)
to the voters of the metadata quorum. The controller must have been formatted
with --no-initial-controllers and be running, replicating the metadata log as
an observer. Its node.id, the directory.id of its metadata.log.dir and its
controller listener are read from that config.`,
		Example: `  vltava cluster add-controller --controller.config controller4.properties --bootstrap-server localhost:9092`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if controllerConfig == "" && len(overrides) == 0 {
				return errors.New("--controller.config (or --override) is required")
			}
			cfg, _, err := config.LoadBroker(controllerConfig, overrides)
			if err != nil {
				return err
			}
			if !slices.Contains(cfg.ProcessRoles, "controller") {
				return fmt.Errorf("%s: process.roles=%s is not a controller", controllerConfig, strings.Join(cfg.ProcessRoles, ","))
			}
			mpPath := filepath.Join(cfg.MetadataLogDir, metadata.MetaPropertiesFile)
			mp, err := metadata.ReadMetaProperties(mpPath)
			if err != nil {
				return fmt.Errorf("reading the controller's directory id: %w (format it with `vltava storage format --no-initial-controllers`)", err)
			}
			if mp.DirectoryID == metadata.ZeroUuid {
				return fmt.Errorf("%s has no directory.id", mpPath)
			}
			req := kmsg.NewPtrAddRaftVoterRequest()
			req.ClusterID = &mp.ClusterID
			req.VoterID = cfg.NodeID
			req.VoterDirectoryID = mp.DirectoryID
			req.TimeoutMillis = 30000
			req.AckWhenCommitted = true
			for _, l := range controllerListeners(cfg) {
				rl := kmsg.NewAddRaftVoterRequestListener()
				rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
				req.Listeners = append(req.Listeners, rl)
			}
			if len(req.Listeners) == 0 {
				return fmt.Errorf("%s has no controller listener (controller.listener.names)", controllerConfig)
			}
			e, err := envFor(cmd)
			if err != nil {
				return err
			}
			resp, err := quorumRequest(cmd.Context(), e, *bootstrapController, req)
			if err != nil {
				return err
			}
			r := resp.(*kmsg.AddRaftVoterResponse)
			if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
				return fmt.Errorf("adding controller %d: %w", cfg.NodeID, err)
			}
			fmt.Fprintf(e.stdout, "Added controller %d with directory id %s and endpoints: %s\n", cfg.NodeID, mp.DirectoryID, listenerList(req.Listeners))
			return nil
		},
	}
	cmd.Flags().StringVar(&controllerConfig, "controller.config", "", "the config file of the controller to add")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "set a key of that config: --override key=value (repeatable)")
	return cmd
}

func newRemoveControllerCommand(bootstrapController *string) *cobra.Command {
	var id int32
	var dir string
	cmd := &cobra.Command{
		Use:   "remove-controller",
		Short: "Remove a voter from a dynamic quorum (RemoveRaftVoter)",
		Long: `Remove the voter with --controller-id and --controller-directory-id (see
cluster describe --replication) from the metadata quorum. If it keeps running it
stays an observer.`,
		Example: `  vltava cluster remove-controller --controller-id 4 --controller-directory-id 7tKZPCk4RkqNXoSk3vSCSg`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id < 0 {
				return errors.New("--controller-id is required")
			}
			u, err := metadata.ParseUuid(dir)
			if err != nil {
				return fmt.Errorf("--controller-directory-id: %w", err)
			}
			e, err := envFor(cmd)
			if err != nil {
				return err
			}
			req := kmsg.NewPtrRemoveRaftVoterRequest()
			req.VoterID, req.VoterDirectoryID = id, u
			resp, err := quorumRequest(cmd.Context(), e, *bootstrapController, req)
			if err != nil {
				return err
			}
			r := resp.(*kmsg.RemoveRaftVoterResponse)
			if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
				return fmt.Errorf("removing controller %d: %w", id, err)
			}
			fmt.Fprintf(e.stdout, "Removed controller %d with directory id %s\n", id, dir)
			return nil
		},
	}
	cmd.Flags().Int32Var(&id, "controller-id", -1, "node id of the voter to remove")
	cmd.Flags().StringVar(&dir, "controller-directory-id", "", "directory id of the voter to remove")
	return cmd
}

// controllerListeners are cfg's controller endpoints as other nodes reach
// them: the advertised controller listeners, else the bound ones.
func controllerListeners(cfg *config.Broker) []config.Listener {
	var out []config.Listener
	for _, ls := range [][]config.Listener{cfg.AdvertisedListeners, cfg.Listeners} {
		for _, l := range ls {
			if slices.Contains(cfg.ControllerListenerNames, l.Name) {
				out = append(out, l)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return out
}

func listenerList(ls []kmsg.AddRaftVoterRequestListener) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Name+"://"+net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
	}
	return strings.Join(s, ",")
}

// responseError is a response's error code with its message.
func responseError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// quorumRequest sends req to a broker of --bootstrap-server, which forwards
// it to the quorum leader, or with --bootstrap-controller to those
// controllers in turn until one that is not NOT_CONTROLLER answers.
func quorumRequest(ctx context.Context, e *env, bootstrapController string, req kmsg.Request) (kmsg.Response, error) {
	if bootstrapController == "" {
		cl, _, err := e.connect(ctx)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		return cl.Request(ctx, req)
	}
	cl, err := controllerClient(e, bootstrapController)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var last error
	for attempt := 0; attempt < 20; attempt++ {
		for _, b := range cl.SeedBrokers() {
			resp, err := b.Request(ctx, req)
			if err == nil && !notController(resp) {
				return resp, nil
			}
			if err == nil {
				err = kerr.NotController
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("no controller at %s answered: %w", bootstrapController, last)
}

func notController(r kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := r.(type) {
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode == nc
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code {
					return true
				}
			}
		}
	}
	return false
}

// controllerClient is a client of controller endpoints: every connection
// starts with quorum.ControllerRPCByte, which routes it to the controller
// APIs on the quorum port.
func controllerClient(e *env, controllers string) (*kgo.Client, error) {
	var seeds []string
	for _, s := range strings.Split(controllers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-controller is empty")
	}
	sec, err := e.props.securitySettings()
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: e.props.dialTimeout}
	// On an SSL or SASL_SSL controller listener the whole quorum port is
	// TLS, and the routing byte is the first byte inside it; SASL follows
	// (kgo).
	opts := append(e.baseClientOpts(), kgo.SeedBrokers(seeds...),
		kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, host)
			if err != nil {
				return nil, err
			}
			if cfg := sec.TLSFor(host); cfg != nil {
				tc := tls.Client(c, cfg)
				if err := tc.HandshakeContext(ctx); err != nil {
					c.Close()
					return nil, err
				}
				c = tc
			}
			if _, err := c.Write([]byte{quorum.ControllerRPCByte}); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}))
	opts = append(opts, sec.KgoSASLOpts()...)
	return kgo.NewClient(opts...)
}

// describeQuorumVia is describeQuorum through --bootstrap-server or
// --bootstrap-controller.
func describeQuorumVia(ctx context.Context, e *env, bootstrapController string) (*quorumDescription, error) {
	if bootstrapController == "" {
		cl, adm, err := e.connect(ctx)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		q, err := describeQuorum(ctx, cl)
		if q != nil {
			if m, err := adm.BrokerMetadata(ctx); err == nil {
				q.ClusterID = m.Cluster
			}
		}
		return q, err
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := quorumRequest(ctx, e, bootstrapController, req)
	if err != nil {
		return nil, err
	}
	return quorumFromResponse(resp.(*kmsg.DescribeQuorumResponse))
}
