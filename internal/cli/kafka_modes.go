package cli

// Kafka's tools pick what to do with a mode flag (kafka-topics.sh --create,
// kafka-consumer-groups.sh --describe, kafka-configs.sh --alter) and name
// the object with a flag (--topic, --group). vltava's commands are
// subcommands with positional names. kafkaModes accepts the first form on
// the parent command and runs the matching subcommand, so both forms share
// one implementation and one set of checks.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// forwardedFlag records the raw values a parent command received for a
// flag that belongs to one of its subcommands; they are replayed onto the
// subcommand chosen by the mode flag.
type forwardedFlag struct {
	typ    string
	values []string
}

func (f *forwardedFlag) String() string     { return strings.Join(f.values, ",") }
func (f *forwardedFlag) Type() string       { return f.typ }
func (f *forwardedFlag) Set(v string) error { f.values = append(f.values, v); return nil }

// addKafkaModes gives parent one boolean flag per entry of modes (flag name
// to subcommand name). nameFlag ("topic", "group"; "" for none) becomes a
// repeatable flag whose comma-separated values are the subcommand's
// positional arguments unless the subcommand has a flag of that name
// itself. Every flag of the subcommands is accepted on parent and passed on.
func addKafkaModes(parent *cobra.Command, nameFlag string, modes map[string]string) {
	pf := parent.Flags()
	modeNames := make([]string, 0, len(modes))
	for m, sub := range modes {
		modeNames = append(modeNames, m)
		pf.Bool(m, false, fmt.Sprintf("Kafka form of \"%s %s\"", parent.Name(), sub))
	}
	sort.Strings(modeNames)
	var names []string
	if nameFlag != "" {
		pf.StringArrayVar(&names, nameFlag, nil, fmt.Sprintf("%s to act on (Kafka form of the positional argument; repeatable, comma-separated)", nameFlag))
	}
	forwarded := map[string]*forwardedFlag{}
	subs := map[string]*cobra.Command{}
	for _, c := range parent.Commands() {
		subs[c.Name()] = c
	}
	for _, m := range modeNames {
		sub := subs[modes[m]]
		if sub == nil {
			panic("kafka mode --" + m + " names no subcommand " + modes[m])
		}
		sub.Flags().VisitAll(func(f *pflag.Flag) {
			if pf.Lookup(f.Name) != nil {
				return
			}
			fw := &forwardedFlag{typ: f.Value.Type()}
			forwarded[f.Name] = fw
			pf.Var(fw, f.Name, f.Usage)
			pf.Lookup(f.Name).NoOptDefVal = f.NoOptDefVal
		})
	}
	dashed := make([]string, len(modeNames))
	for i, m := range modeNames {
		dashed[i] = "--" + m
	}
	parent.RunE = func(cmd *cobra.Command, args []string) error {
		var chosen []string
		for _, m := range modeNames {
			if on, _ := pf.GetBool(m); on {
				chosen = append(chosen, m)
			}
		}
		switch len(chosen) {
		case 0:
			if len(args) == 0 && len(names) == 0 && !anyForwarded(forwarded) {
				return cmd.Help()
			}
			return fmt.Errorf("give a subcommand or one of %s", strings.Join(dashed, ", "))
		case 1:
		default:
			return fmt.Errorf("give only one of %s", strings.Join(dashed, ", "))
		}
		sub := subs[modes[chosen[0]]]
		for _, n := range sortedKeys(forwarded) {
			fw := forwarded[n]
			if len(fw.values) == 0 {
				continue
			}
			if sub.Flags().Lookup(n) == nil {
				return fmt.Errorf("--%s does not apply to --%s", n, chosen[0])
			}
			for _, v := range fw.values {
				if err := sub.Flags().Set(n, v); err != nil {
					return fmt.Errorf("--%s: %w", n, err)
				}
			}
		}
		subArgs := append([]string(nil), args...)
		if nameFlag != "" {
			for _, n := range names {
				if sub.Flags().Lookup(nameFlag) != nil {
					if err := sub.Flags().Set(nameFlag, n); err != nil {
						return fmt.Errorf("--%s: %w", nameFlag, err)
					}
					continue
				}
				for _, s := range strings.Split(n, ",") {
					if s = strings.TrimSpace(s); s != "" {
						subArgs = append(subArgs, s)
					}
				}
			}
		}
		if sub.Args != nil {
			if err := sub.Args(sub, subArgs); err != nil {
				if nameFlag != "" {
					return fmt.Errorf("--%s: %w (give --%s)", chosen[0], err, nameFlag)
				}
				return err
			}
		}
		sub.SetContext(cmd.Context())
		return sub.RunE(sub, subArgs)
	}
}

func anyForwarded(fws map[string]*forwardedFlag) bool {
	for _, fw := range fws {
		if len(fw.values) > 0 {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// flagAliases makes each key of aliases another spelling of the flag it
// maps to (Kafka's name for a vltava flag, or the reverse). Both spellings
// set the same value.
func flagAliases(cmd *cobra.Command, aliases map[string]string) {
	fs := cmd.Flags()
	prev := fs.GetNormalizeFunc()
	fs.SetNormalizeFunc(func(f *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := aliases[name]; ok {
			name = to
		}
		return prev(f, name)
	})
}

// acceptNameFlag lets a subcommand that takes names as arguments take them
// with Kafka's flag too (`topics describe --topic orders`, `groups delete
// --group billing`): the flag's comma-separated values are appended to the
// positional arguments before they are validated.
func acceptNameFlag(cmd *cobra.Command, name, what string) {
	var values []string
	cmd.Flags().StringArrayVar(&values, name, nil, what+" (Kafka form of the positional argument; repeatable, comma-separated)")
	merged := func(args []string) []string {
		return append(append([]string(nil), args...), splitCommaList(values)...)
	}
	args, run := cmd.Args, cmd.RunE
	cmd.Args = func(c *cobra.Command, a []string) error {
		if args == nil {
			return nil
		}
		return args(c, merged(a))
	}
	cmd.RunE = func(c *cobra.Command, a []string) error { return run(c, merged(a)) }
}
