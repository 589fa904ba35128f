package cli

// vltava acls: kafka-acls.sh over CreateAcls, DescribeAcls and DeleteAcls
// (through kadm's ACL builder), with its verbs (--add, --remove, --list),
// principals and hosts (--allow-principal, --deny-principal, --allow-host,
// --deny-host), operations, resources (--topic, --group, --cluster,
// --transactional-id, --delegation-token, --resource-pattern-type) and the
// --producer / --consumer shortcuts.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
)

// aclFlags are kafka-acls.sh's options.
type aclFlags struct {
	add, remove, list               bool
	allowPrincipals, denyPrincipals []string
	allowHosts, denyHosts           []string
	principals                      []string
	operations                      []string
	topics, groups, txnIDs, tokens  []string
	cluster                         bool
	patternType                     string
	producer, consumer, idempotent  bool
	force                           bool
}

// aclRow is one binding as listed or changed.
type aclRow struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
	Error        string `json:"error,omitempty"`
}

func newACLsCommand() *cobra.Command {
	var f aclFlags
	cmd := &cobra.Command{
		Use:   "acls",
		Short: "Add, remove and list ACLs (kafka-acls.sh)",
		Long: `Manage ACL bindings, as kafka-acls.sh: --add binds the principals to the
operations (default All) on the resources, --remove deletes them (every
binding of the resources when no principal is given; asks for confirmation
unless --force), --list shows the bindings of the resources (all without a
resource), optionally of --principal.

--producer is WRITE, DESCRIBE and CREATE on the topics (and WRITE and
DESCRIBE on --transactional-id, IDEMPOTENT_WRITE on the cluster with
--idempotent); --consumer is READ and DESCRIBE on the topics and READ on
the groups. --resource-pattern-type is literal (default) or prefixed, and
for --list and --remove also any or match.`,
		Example: `  vltava acls --add --allow-principal User:alice --operation Read --operation Describe --topic orders
  vltava acls --add --allow-principal User:app --producer --topic app- --resource-pattern-type prefixed
  vltava acls --add --allow-principal User:app --consumer --topic orders --group billing
  vltava acls --list --topic orders
  vltava acls --remove --allow-principal User:alice --operation Read --topic orders --force`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error { return runACLs(in, &f) }),
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.add, "add", false, "add ACLs")
	fl.BoolVar(&f.remove, "remove", false, "remove ACLs")
	fl.BoolVar(&f.list, "list", false, "list ACLs")
	fl.StringArrayVar(&f.allowPrincipals, "allow-principal", nil, "principal (Type:Name) to allow (repeatable)")
	fl.StringArrayVar(&f.denyPrincipals, "deny-principal", nil, "principal (Type:Name) to deny (repeatable)")
	fl.StringArrayVar(&f.allowHosts, "allow-host", nil, "host the allowed principals may connect from (repeatable; default *)")
	fl.StringArrayVar(&f.denyHosts, "deny-host", nil, "host the denied principals are denied from (repeatable; default *)")
	fl.StringArrayVar(&f.principals, "principal", nil, "with --list: only the ACLs of this principal (repeatable)")
	fl.StringArrayVar(&f.operations, "operation", nil, "operation: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All (repeatable; default All)")
	fl.StringArrayVar(&f.topics, "topic", nil, "topic (repeatable; * for all)")
	fl.StringArrayVar(&f.groups, "group", nil, "consumer group (repeatable; * for all)")
	fl.StringArrayVar(&f.txnIDs, "transactional-id", nil, "transactional id (repeatable; * for all)")
	fl.StringArrayVar(&f.tokens, "delegation-token", nil, "delegation token id (repeatable; * for all)")
	fl.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fl.StringVar(&f.patternType, "resource-pattern-type", "literal", "literal or prefixed; also any or match with --list and --remove")
	fl.BoolVar(&f.producer, "producer", false, "the producer's ACLs: WRITE, DESCRIBE, CREATE on the topics")
	fl.BoolVar(&f.consumer, "consumer", false, "the consumer's ACLs: READ, DESCRIBE on the topics, READ on the groups")
	fl.BoolVar(&f.idempotent, "idempotent", false, "with --producer: IDEMPOTENT_WRITE on the cluster")
	fl.BoolVar(&f.force, "force", false, "remove without asking for confirmation")
	return cmd
}

// parseOperations maps kafka-acls.sh operation names (any case, with or
// without underscores) to Kafka's operations.
func parseOperations(names []string) ([]kadm.ACLOperation, error) {
	if len(names) == 0 {
		return []kadm.ACLOperation{kadm.OpAll}, nil
	}
	var ops []kadm.ACLOperation
	for _, n := range names {
		op, err := kmsg.ParseACLOperation(n)
		if err != nil || op == kmsg.ACLOperationAny || op == kmsg.ACLOperationUnknown {
			return nil, fmt.Errorf("--operation %q: not an ACL operation", n)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func validatePrincipals(flag string, ps []string) error {
	for _, p := range ps {
		if pr, err := security.ParsePrincipal(p); err != nil || pr.Name == "" {
			return fmt.Errorf("--%s %q: expected Type:Name, e.g. User:alice", flag, p)
		}
	}
	return nil
}

// resources sets the resources of the flags on b.
func (f *aclFlags) resources(b *kadm.ACLBuilder) *kadm.ACLBuilder {
	if len(f.topics) > 0 {
		b.Topics(f.topics...)
	}
	if len(f.groups) > 0 {
		b.Groups(f.groups...)
	}
	if len(f.txnIDs) > 0 {
		b.TransactionalIDs(f.txnIDs...)
	}
	if len(f.tokens) > 0 {
		b.DelegationTokens(f.tokens...)
	}
	if f.cluster {
		b.Clusters()
	}
	return b
}

func (f *aclFlags) hasResource() bool {
	return len(f.topics)+len(f.groups)+len(f.txnIDs)+len(f.tokens) > 0 || f.cluster
}

func runACLs(in *invocation, f *aclFlags) error {
	verbs := 0
	for _, v := range []bool{f.add, f.remove, f.list} {
		if v {
			verbs++
		}
	}
	if verbs != 1 {
		return errors.New("give exactly one of --add, --remove and --list")
	}
	pattern, err := kmsg.ParseACLResourcePatternType(f.patternType)
	if err != nil || pattern == kmsg.ACLResourcePatternTypeUnknown {
		return fmt.Errorf("--resource-pattern-type %q: want literal, prefixed, any or match", f.patternType)
	}
	if f.add && pattern != kadm.ACLPatternLiteral && pattern != kadm.ACLPatternPrefixed {
		return fmt.Errorf("--resource-pattern-type %s: ACLs are added with literal or prefixed patterns", f.patternType)
	}
	for flag, ps := range map[string][]string{"allow-principal": f.allowPrincipals, "deny-principal": f.denyPrincipals, "principal": f.principals} {
		if err := validatePrincipals(flag, ps); err != nil {
			return err
		}
	}
	if (len(f.allowHosts) > 0 && len(f.allowPrincipals) == 0) || (len(f.denyHosts) > 0 && len(f.denyPrincipals) == 0) {
		return errors.New("--allow-host and --deny-host need --allow-principal and --deny-principal")
	}
	if (f.producer || f.consumer) && !f.add && !f.remove {
		return errors.New("--producer and --consumer go with --add or --remove")
	}
	if f.producer && f.consumer {
		return errors.New("give --producer or --consumer, not both")
	}
	builders, err := f.builders(pattern)
	if err != nil {
		return err
	}
	_, adm, err := in.cluster(in.ctx)
	if err != nil {
		return err
	}
	switch {
	case f.add:
		return addACLs(in, adm, builders)
	case f.remove:
		return removeACLs(in, adm, f, builders)
	}
	return listACLs(in, f, pattern, adm)
}

// builders turns the flags into the ACL builders to add or remove: one
// per operation set, as the --producer and --consumer shortcuts bind
// different operations to different resources.
func (f *aclFlags) builders(pattern kadm.ACLPattern) ([]*kadm.ACLBuilder, error) {
	if f.list {
		return nil, nil
	}
	if f.add && len(f.allowPrincipals)+len(f.denyPrincipals) == 0 {
		return nil, errors.New("--add needs --allow-principal or --deny-principal")
	}
	who := func(b *kadm.ACLBuilder) *kadm.ACLBuilder {
		b.ResourcePatternType(pattern)
		if len(f.allowPrincipals) > 0 {
			b.Allow(f.allowPrincipals...).AllowHosts(hostsOrAny(f.allowHosts)...)
		}
		if len(f.denyPrincipals) > 0 {
			b.Deny(f.denyPrincipals...).DenyHosts(hostsOrAny(f.denyHosts)...)
		}
		if f.remove && len(f.allowPrincipals)+len(f.denyPrincipals) == 0 {
			// kafka-acls.sh --remove without principals: every binding
			// of the resources.
			b.Allow().AllowHosts().Deny().DenyHosts()
		}
		return b
	}
	switch {
	case f.producer:
		if len(f.topics) == 0 && len(f.txnIDs) == 0 {
			return nil, errors.New("--producer needs --topic or --transactional-id")
		}
		var bs []*kadm.ACLBuilder
		if len(f.topics) > 0 {
			bs = append(bs, who(kadm.NewACLs().Topics(f.topics...).Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate)))
		}
		if len(f.txnIDs) > 0 {
			bs = append(bs, who(kadm.NewACLs().TransactionalIDs(f.txnIDs...).Operations(kadm.OpWrite, kadm.OpDescribe)))
		}
		if f.idempotent {
			bs = append(bs, who(kadm.NewACLs().Clusters().Operations(kadm.OpIdempotentWrite)))
		}
		return bs, nil
	case f.consumer:
		if len(f.topics) == 0 || len(f.groups) == 0 {
			return nil, errors.New("--consumer needs --topic and --group")
		}
		return []*kadm.ACLBuilder{
			who(kadm.NewACLs().Topics(f.topics...).Operations(kadm.OpRead, kadm.OpDescribe)),
			who(kadm.NewACLs().Groups(f.groups...).Operations(kadm.OpRead)),
		}, nil
	}
	if !f.hasResource() {
		return nil, errors.New("give a resource: --topic, --group, --cluster, --transactional-id or --delegation-token")
	}
	ops, err := parseOperations(f.operations)
	if err != nil {
		return nil, err
	}
	if err := f.checkOperations(ops); err != nil {
		return nil, err
	}
	if f.remove && len(f.allowPrincipals)+len(f.denyPrincipals) == 0 && len(f.operations) == 0 {
		ops = []kadm.ACLOperation{kadm.OpAny}
	}
	return []*kadm.ACLBuilder{who(f.resources(kadm.NewACLs()).Operations(ops...))}, nil
}

// checkOperations refuses operations a resource type does not have, as
// kafka-acls.sh does ("ResourceType TOPIC only supports operations ...").
func (f *aclFlags) checkOperations(ops []kadm.ACLOperation) error {
	for _, typ := range f.resourceTypes() {
		supported := acl.SupportedOperations(typ)
		for _, op := range ops {
			if op != kadm.OpAll && op != kadm.OpAny && !slices.Contains(supported, op) {
				names := make([]string, len(supported))
				for i, s := range supported {
					names[i] = s.String()
				}
				return fmt.Errorf("--operation %s: resource type %s only supports operations %s, ALL", op, typ, strings.Join(names, ", "))
			}
		}
	}
	return nil
}

// resourceTypes are the resource types the flags name.
func (f *aclFlags) resourceTypes() []kmsg.ACLResourceType {
	var out []kmsg.ACLResourceType
	for _, r := range []struct {
		named bool
		typ   kmsg.ACLResourceType
	}{
		{len(f.topics) > 0, acl.ResourceTopic}, {len(f.groups) > 0, acl.ResourceGroup},
		{len(f.txnIDs) > 0, acl.ResourceTransactionalID}, {len(f.tokens) > 0, acl.ResourceDelegationToken},
		{f.cluster, acl.ResourceCluster},
	} {
		if r.named {
			out = append(out, r.typ)
		}
	}
	return out
}

func hostsOrAny(hosts []string) []string {
	if len(hosts) == 0 {
		return []string{"*"}
	}
	return hosts
}

func addACLs(in *invocation, adm *kadm.Client, builders []*kadm.ACLBuilder) error {
	var rows []aclRow
	failed := 0
	for _, b := range builders {
		res, err := adm.CreateACLs(in.ctx, b)
		if err != nil {
			return fmt.Errorf("adding ACLs: %w", err)
		}
		for _, r := range res {
			row := newACLRow(r.Type, r.Name, r.Pattern, r.Principal, r.Host, r.Operation, r.Permission, r.Err, r.ErrMessage)
			if row.Error != "" {
				failed++
			}
			rows = append(rows, row)
		}
	}
	if err := printACLs(in, "Adding ACLs for resource", rows); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("adding %d of %d ACLs failed", failed, len(rows))
	}
	return nil
}

func removeACLs(in *invocation, adm *kadm.Client, f *aclFlags, builders []*kadm.ACLBuilder) error {
	if !f.force {
		fmt.Fprint(in.stdout, "Are you sure you want to remove the ACLs matching these options? (y/n) ")
		if !confirmed(in.cmd.InOrStdin()) {
			return errors.New("not removed")
		}
	}
	var rows []aclRow
	failed := 0
	for _, b := range builders {
		res, err := adm.DeleteACLs(in.ctx, b)
		if err != nil {
			return fmt.Errorf("removing ACLs: %w", err)
		}
		for _, r := range res {
			if r.Err != nil {
				failed++
				rows = append(rows, aclRow{Error: errText(r.Err, r.ErrMessage)})
				continue
			}
			for _, d := range r.Deleted {
				row := newACLRow(d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission, d.Err, d.ErrMessage)
				if row.Error != "" {
					failed++
				}
				rows = append(rows, row)
			}
		}
	}
	if err := printACLs(in, "Removed ACLs for resource", rows); err != nil {
		return err
	}
	if failed > 0 {
		return errors.New("removing ACLs failed")
	}
	return nil
}

func listACLs(in *invocation, f *aclFlags, pattern kadm.ACLPattern, adm *kadm.Client) error {
	if !in.cmd.Flags().Changed("resource-pattern-type") {
		pattern = kadm.ACLPatternAny // kafka-acls.sh --list shows every pattern type
	}
	b := kadm.NewACLs().ResourcePatternType(pattern).Operations()
	if f.hasResource() {
		f.resources(b)
	} else {
		b.AnyResource()
	}
	b.Allow(f.principals...).AllowHosts().Deny(f.principals...).DenyHosts()
	res, err := adm.DescribeACLs(in.ctx, b)
	if err != nil {
		return fmt.Errorf("listing ACLs: %w", err)
	}
	rows := []aclRow{}
	seen := map[aclRow]bool{}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("listing ACLs: %s", errText(r.Err, r.ErrMessage))
		}
		for _, d := range r.Described {
			row := newACLRow(d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission, nil, "")
			if !seen[row] {
				seen[row] = true
				rows = append(rows, row)
			}
		}
	}
	return printACLs(in, "Current ACLs for resource", rows)
}

func newACLRow(typ kmsg.ACLResourceType, name string, pattern kadm.ACLPattern, principal, host string,
	op kadm.ACLOperation, perm kmsg.ACLPermissionType, err error, msg string) aclRow {
	row := aclRow{ResourceType: typ.String(), ResourceName: name, PatternType: pattern.String(),
		Principal: principal, Host: host, Operation: op.String(), Permission: perm.String()}
	if err != nil {
		row.Error = errText(err, msg)
	}
	return row
}

func errText(err error, msg string) string {
	if msg != "" && !strings.Contains(err.Error(), msg) {
		return err.Error() + ": " + msg
	}
	return err.Error()
}

// printACLs writes rows grouped by resource pattern, in kafka-acls.sh's
// form, or as JSON.
func printACLs(in *invocation, heading string, rows []aclRow) error {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.ResourceType != b.ResourceType {
			return a.ResourceType < b.ResourceType
		}
		if a.ResourceName != b.ResourceName {
			return a.ResourceName < b.ResourceName
		}
		return a.PatternType < b.PatternType
	})
	if in.json {
		return writeJSON(in.stdout, rows)
	}
	w := in.stdout
	last := ""
	for _, r := range rows {
		if r.ResourceType == "" {
			fmt.Fprintf(w, "error: %s\n", r.Error)
			continue
		}
		res := fmt.Sprintf("ResourcePattern(resourceType=%s, name=%s, patternType=%s)", r.ResourceType, r.ResourceName, r.PatternType)
		if res != last {
			if last != "" {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s `%s`:\n", heading, res)
			last = res
		}
		line := fmt.Sprintf(" \t(principal=%s, host=%s, operation=%s, permissionType=%s)", r.Principal, r.Host, r.Operation, r.Permission)
		if r.Error != "" {
			line += " error: " + r.Error
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

// confirmed reads a y/yes answer.
func confirmed(r io.Reader) bool {
	if r == nil {
		r = os.Stdin
	}
	line, _ := bufio.NewReader(r).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}
