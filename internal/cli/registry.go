package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/registry"
)

// newRegistryCommand is `vltava registry`: a client of a schema registry's
// REST API (Confluent's, or Vltava's own) and `serve`, a standalone
// registry node against any Kafka cluster.
func newRegistryCommand() *cobra.Command {
	var url string
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Schema registry: list, register, get and check schemas, set compatibility; serve a registry",
		Long: `Client commands for a schema registry speaking Confluent Schema Registry's
REST API (--registry-url, default ` + DefaultRegistryURL + `): subjects,
register, get, compat and config. Answers print as the registry's JSON.

serve runs a standalone registry node, a Kafka client of the cluster
named by kafkastore.bootstrap.servers in its properties file.`,
	}
	cmd.PersistentFlags().StringVar(&url, "registry-url", DefaultRegistryURL, "schema registry base URL")
	client := func() (*sr.Client, error) { return sr.NewClient(sr.URLs(url)) }
	cmd.AddCommand(newRegistrySubjectsCommand(client), newRegistryRegisterCommand(client), newRegistryGetCommand(client),
		newRegistryCompatCommand(client), newRegistryConfigCommand(client), newRegistryServeCommand())
	return cmd
}

type srClient func() (*sr.Client, error)

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func newRegistrySubjectsCommand(client srClient) *cobra.Command {
	var deleted bool
	var prefix string
	cmd := &cobra.Command{
		Use:   "subjects",
		Short: "List subjects (GET /subjects)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			// Query parameters go through sr's params: its Do escapes a
			// '?' in the path.
			var params []sr.Param
			if deleted {
				params = append(params, sr.ShowDeleted)
			}
			if prefix != "" {
				params = append(params, sr.SubjectPrefix(prefix))
			}
			out, err := cl.Subjects(sr.WithParams(cmd.Context(), params...))
			if err != nil {
				return err
			}
			if out == nil {
				out = []string{}
			}
			return printJSON(cmd.OutOrStdout(), out)
		},
	}
	cmd.Flags().BoolVar(&deleted, "deleted", false, "include soft-deleted subjects")
	cmd.Flags().StringVar(&prefix, "prefix", "", "only subjects starting with this")
	return cmd
}

// schemaFile reads a schema file and its type: --type, else by extension
// (.avsc AVRO, .json JSON, .proto PROTOBUF).
func schemaFile(file, typ string, refs []string) (sr.Schema, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return sr.Schema{}, fmt.Errorf("-f: %w", err)
	}
	if typ == "" {
		switch strings.ToLower(filepath.Ext(file)) {
		case ".json":
			typ = "JSON"
		case ".proto":
			typ = "PROTOBUF"
		default:
			typ = "AVRO"
		}
	}
	var st sr.SchemaType
	if err := st.UnmarshalText([]byte(strings.ToUpper(typ))); err != nil {
		return sr.Schema{}, fmt.Errorf("--type %q: want AVRO, JSON or PROTOBUF", typ)
	}
	s := sr.Schema{Schema: string(b), Type: st}
	for _, r := range refs {
		// name=subject:version
		name, rest, ok1 := strings.Cut(r, "=")
		subject, ver, ok2 := strings.Cut(rest, ":")
		v, err := strconv.Atoi(ver)
		if !ok1 || !ok2 || err != nil || name == "" || subject == "" {
			return sr.Schema{}, fmt.Errorf("--reference %q: want name=subject:version", r)
		}
		s.References = append(s.References, sr.SchemaReference{Name: name, Subject: subject, Version: v})
	}
	return s, nil
}

func newRegistryRegisterCommand(client srClient) *cobra.Command {
	var file, subject, typ string
	var refs []string
	var normalize bool
	cmd := &cobra.Command{
		Use:     "register",
		Short:   "Register a schema under a subject (POST /subjects/{subject}/versions); prints its id",
		Example: "  vltava registry register --subject orders-value -f order.avsc\n  vltava registry register --subject users-value -f user.proto --reference common.proto=common:1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" || subject == "" {
				return errors.New("-f and --subject are required")
			}
			s, err := schemaFile(file, typ, refs)
			if err != nil {
				return err
			}
			cl, err := client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if normalize {
				ctx = sr.WithParams(ctx, sr.Normalize)
			}
			id, err := cl.RegisterSchema(ctx, subject, s, -1, -1)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string]int{"id": id})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "schema file")
	f.StringVar(&subject, "subject", "", "subject to register under (TopicNameStrategy: <topic>-value, <topic>-key)")
	f.StringVar(&typ, "type", "", "AVRO, JSON or PROTOBUF (default: by the file's extension: .json JSON, .proto PROTOBUF, else AVRO)")
	f.StringArrayVar(&refs, "reference", nil, "a reference name=subject:version (repeatable)")
	f.BoolVar(&normalize, "normalize", false, "normalize the schema before comparing it with registered ones")
	return cmd
}

func newRegistryGetCommand(client srClient) *cobra.Command {
	var subject, version string
	var id int
	cmd := &cobra.Command{
		Use:     "get",
		Short:   "Show a schema by id or by subject and version",
		Example: "  vltava registry get --id 3\n  vltava registry get --subject orders-value --version latest",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			var out map[string]any
			switch {
			case id > 0 && subject == "":
				err = cl.Do(cmd.Context(), "GET", "/schemas/ids/"+strconv.Itoa(id), nil, &out)
			case subject != "" && id == 0:
				err = cl.Do(cmd.Context(), "GET", "/subjects/"+subject+"/versions/"+version, nil, &out)
			default:
				return errors.New("give either --id or --subject (with --version)")
			}
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), out)
		},
	}
	cmd.Flags().IntVar(&id, "id", 0, "schema id")
	cmd.Flags().StringVar(&subject, "subject", "", "subject")
	cmd.Flags().StringVar(&version, "version", "latest", "version number or latest")
	return cmd
}

func newRegistryCompatCommand(client srClient) *cobra.Command {
	var file, subject, typ, version string
	var refs []string
	cmd := &cobra.Command{
		Use:   "compat",
		Short: "Check a schema against a subject's versions (POST /compatibility/...); exits non-zero if incompatible",
		Long: `Checks a schema file against the subject's latest version (--version latest),
one version, or every version its compatibility level compares to
(--version all), printing the verdict and the registry's reasons.`,
		Example: "  vltava registry compat --subject orders-value -f order-v2.avsc",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" || subject == "" {
				return errors.New("-f and --subject are required")
			}
			s, err := schemaFile(file, typ, refs)
			if err != nil {
				return err
			}
			v := -1
			switch version {
			case "latest":
			case "all":
				v = -2
			default:
				if v, err = strconv.Atoi(version); err != nil || v < 1 {
					return fmt.Errorf("--version %q: want a version number, latest or all", version)
				}
			}
			cl, err := client()
			if err != nil {
				return err
			}
			res, err := cl.CheckCompatibility(sr.WithParams(cmd.Context(), sr.Verbose), subject, v, s)
			if err != nil {
				return err
			}
			if res.Messages == nil {
				res.Messages = []string{}
			}
			if err := printJSON(cmd.OutOrStdout(), map[string]any{"is_compatible": res.Is, "messages": res.Messages}); err != nil {
				return err
			}
			if !res.Is {
				return fmt.Errorf("the schema is not compatible with subject %s", subject)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "schema file")
	f.StringVar(&subject, "subject", "", "subject")
	f.StringVar(&typ, "type", "", "AVRO, JSON or PROTOBUF (default: by the file's extension)")
	f.StringVar(&version, "version", "latest", "version to check against: a number, latest, or all")
	f.StringArrayVar(&refs, "reference", nil, "a reference name=subject:version (repeatable)")
	return cmd
}

func newRegistryConfigCommand(client srClient) *cobra.Command {
	var subject, set string
	var del bool
	cmd := &cobra.Command{
		Use:     "config",
		Short:   "Show, set or delete the global or a subject's compatibility level (/config)",
		Example: "  vltava registry config\n  vltava registry config --subject orders-value --set FULL_TRANSITIVE\n  vltava registry config --subject orders-value --delete",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := client()
			if err != nil {
				return err
			}
			path := "/config"
			if subject != "" {
				path += "/" + subject
			}
			var out map[string]any
			switch {
			case set != "" && del:
				return errors.New("--set and --delete are mutually exclusive")
			case set != "":
				err = cl.Do(cmd.Context(), "PUT", path, map[string]string{"compatibility": strings.ToUpper(set)}, &out)
			case del:
				err = cl.Do(cmd.Context(), "DELETE", path, nil, &out)
			default:
				ctx := cmd.Context()
				if subject != "" {
					ctx = sr.WithParams(ctx, sr.DefaultToGlobal)
				}
				err = cl.Do(ctx, "GET", path, nil, &out)
			}
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), out)
		},
	}
	cmd.Flags().StringVar(&subject, "subject", "", "subject (default: the global level)")
	cmd.Flags().StringVar(&set, "set", "", "set the level: NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE")
	cmd.Flags().BoolVar(&del, "delete", false, "delete the subject's level (the global one: back to the default)")
	return cmd
}

func newRegistryServeCommand() *cobra.Command {
	var file string
	var overrides []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a standalone schema registry node against a Kafka cluster",
		Long: `Runs a schema registry node: Confluent Schema Registry's REST API on
listeners (default http://127.0.0.1:8081), its state in the compacted
kafkastore.topic (default _schemas) of the cluster at
kafkastore.bootstrap.servers. The properties file takes Confluent's key
names: listeners, kafkastore.bootstrap.servers, kafkastore.topic,
kafkastore.topic.replication.factor, kafkastore.timeout.ms,
kafkastore.init.timeout.ms, schema.compatibility.level, request.max.bytes,
schema.registry.group.id (the consumer group the nodes sharing a topic
elect their leader in; the others forward writes to it), the endpoints'
ssl.* (https listeners) and authentication.* (NONE or BASIC against a
users file), and the client security settings kafkastore.security.protocol,
kafkastore.sasl.mechanism, kafkastore.sasl.jaas.config, kafkastore.ssl.*.
A key it does not honour stops start-up, named.`,
		Example: "  vltava registry serve --config registry.properties\n  vltava registry serve --override kafkastore.bootstrap.servers=localhost:9092",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			props := map[string]string{}
			if file != "" {
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("--config: %w", err)
				}
				if props, err = config.ParseProperties(string(b)); err != nil {
					return fmt.Errorf("--config %s: %w", file, err)
				}
			}
			for _, o := range overrides {
				k, v, ok := strings.Cut(o, "=")
				if !ok {
					return fmt.Errorf("--override %q: want key=value", o)
				}
				props[strings.TrimSpace(k)] = v
			}
			cfg, err := registry.ParseStandalone(props)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			s, err := registry.Start(ctx, cfg, registry.ServerOptions{Logger: log})
			if err != nil {
				return err
			}
			log.Info("schema registry started", "listeners", cfg.Listeners, "kafkastore.topic", cfg.Store.Topic)
			<-ctx.Done()
			return s.Close()
		},
	}
	cmd.Flags().StringVar(&file, "config", "", "registry properties file")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "a property key=value overriding the file (repeatable)")
	return cmd
}
