package cli

// vltava delegation-tokens: kafka-delegation-tokens.sh's operations and
// flags.
//
//	--create   CreateDelegationToken: --max-life-time-period (ms; -1, the
//	           default, is the broker's delegation.token.max.lifetime.ms),
//	           --renewer-principal (repeatable), --owner-principal (another
//	           owner, KIP-373)
//	--renew    RenewDelegationToken of --hmac by --renew-time-period (ms;
//	           -1 is the broker's delegation.token.expiry.time.ms)
//	--expire   ExpireDelegationToken of --hmac after --expiry-time-period
//	           (ms; -1 expires it now)
//	--describe DescribeDelegationToken, of --owner-principal (repeatable)
//	           or of every owner the caller may see
//
// The HMAC is given and printed in base64, as Kafka's tool does; a client
// authenticates with the token through SCRAM, the token id as user name,
// the HMAC as password and tokenauth=true.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/vltava/vltava/internal/security"
)

type tokenFlags struct {
	create, renew, expire, describe    bool
	maxLife, renewPeriod, expiryPeriod int64
	renewers, owners                   []string
	hmac                               string
}

// tokenRow is a token as printed.
type tokenRow struct {
	TokenID  string   `json:"token_id"`
	HMAC     string   `json:"hmac"`
	Owner    string   `json:"owner"`
	Renewers []string `json:"renewers"`
	Issued   string   `json:"issue_date"`
	Expiry   string   `json:"expiry_date"`
	Max      string   `json:"max_date"`
}

func newDelegationTokensCommand() *cobra.Command {
	var f tokenFlags
	cmd := &cobra.Command{
		Use:   "delegation-tokens",
		Short: "Create, renew, expire and describe delegation tokens (kafka-delegation-tokens.sh)",
		Long: `Manage delegation tokens (KIP-48), as kafka-delegation-tokens.sh: --create
makes a token for the caller (or --owner-principal) with --renewer-principal
renewers and prints its id and HMAC; --renew and --expire act on the token
of --hmac; --describe lists the tokens of --owner-principal, or every token
the caller may see. Times are milliseconds; -1 takes the broker's default.
Tokens are requested over SASL or SSL with a client certificate, never with a
connection that itself authenticated with a token.`,
		Example: `  vltava delegation-tokens --create --max-life-time-period -1 --renewer-principal User:etl --command-config admin.properties
  vltava delegation-tokens --renew --renew-time-period -1 --hmac <base64> --command-config admin.properties
  vltava delegation-tokens --expire --expiry-time-period -1 --hmac <base64> --command-config admin.properties
  vltava delegation-tokens --describe --owner-principal User:alice --command-config admin.properties`,
		Args: cobra.NoArgs,
		RunE: clusterCommand(func(in *invocation) error { return runDelegationTokens(in, &f) }),
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.create, "create", false, "create a token")
	fl.BoolVar(&f.renew, "renew", false, "renew the token of --hmac")
	fl.BoolVar(&f.expire, "expire", false, "expire the token of --hmac")
	fl.BoolVar(&f.describe, "describe", false, "describe tokens")
	fl.Int64Var(&f.maxLife, "max-life-time-period", -1, "with --create: the token's longest life in ms (-1: the broker's delegation.token.max.lifetime.ms)")
	fl.Int64Var(&f.renewPeriod, "renew-time-period", -1, "with --renew: ms to extend the token by (-1: the broker's delegation.token.expiry.time.ms)")
	fl.Int64Var(&f.expiryPeriod, "expiry-time-period", -1, "with --expire: ms until the token expires (-1: now)")
	fl.StringArrayVar(&f.renewers, "renewer-principal", nil, "with --create: a principal (User:name) that may renew the token (repeatable)")
	fl.StringArrayVar(&f.owners, "owner-principal", nil, "with --create: the token's owner, if not the caller; with --describe: only its tokens (repeatable)")
	fl.StringVar(&f.hmac, "hmac", "", "with --renew and --expire: the token's HMAC, in base64")
	return cmd
}

func runDelegationTokens(in *invocation, f *tokenFlags) error {
	n := 0
	for _, b := range []bool{f.create, f.renew, f.expire, f.describe} {
		if b {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --create, --renew, --expire, --describe")
	}
	principals := func(flag string, ps []string) ([]kadm.Principal, error) {
		var out []kadm.Principal
		for _, p := range ps {
			pr, err := security.ParsePrincipal(p)
			if err != nil || pr.Name == "" {
				return nil, fmt.Errorf("--%s %q: expected Type:Name, e.g. User:alice", flag, p)
			}
			out = append(out, kadm.Principal{Type: pr.Type, Name: pr.Name})
		}
		return out, nil
	}
	renewers, err := principals("renewer-principal", f.renewers)
	if err != nil {
		return err
	}
	owners, err := principals("owner-principal", f.owners)
	if err != nil {
		return err
	}
	var hmac []byte
	if f.renew || f.expire {
		if f.hmac == "" {
			return errors.New("--hmac is required with --renew and --expire")
		}
		if hmac, err = base64.StdEncoding.DecodeString(f.hmac); err != nil {
			return fmt.Errorf("--hmac: not base64: %w", err)
		}
	}
	_, adm, err := in.cluster(in.ctx)
	if err != nil {
		return err
	}
	switch {
	case f.create:
		if len(owners) > 1 {
			return errors.New("--create takes at most one --owner-principal")
		}
		d := kadm.CreateDelegationToken{Renewers: renewers, MaxLifetime: time.Duration(f.maxLife) * time.Millisecond}
		if len(owners) == 1 {
			d.Owner = &owners[0]
		}
		tok, err := adm.CreateDelegationToken(in.ctx, d)
		if err != nil {
			return fmt.Errorf("creating a delegation token: %w", err)
		}
		if !in.json {
			fmt.Fprintf(in.stdout, "Created delegation token with tokenId : %s\n", tok.TokenID)
		}
		return printTokens(in, []kadm.DelegationToken{tok})
	case f.renew:
		exp, err := adm.RenewDelegationToken(in.ctx, hmac, time.Duration(f.renewPeriod)*time.Millisecond)
		if err != nil {
			return fmt.Errorf("renewing the delegation token: %w", err)
		}
		return printExpiry(in, "Completed renew operation. New expiry date : ", exp)
	case f.expire:
		exp, err := adm.ExpireDelegationToken(in.ctx, hmac, time.Duration(f.expiryPeriod)*time.Millisecond)
		if err != nil {
			return fmt.Errorf("expiring the delegation token: %w", err)
		}
		return printExpiry(in, "Completed expire operation. New expiry date : ", exp)
	default:
		toks, err := adm.DescribeDelegationTokens(in.ctx, owners...)
		if err != nil {
			return fmt.Errorf("describing delegation tokens: %w", err)
		}
		return printTokens(in, toks)
	}
}

func printExpiry(in *invocation, text string, exp time.Time) error {
	if in.json {
		return writeJSON(in.stdout, map[string]string{"expiry_date": tokenTime(exp)})
	}
	_, err := fmt.Fprintln(in.stdout, text+tokenTime(exp))
	return err
}

// tokenTime prints a token timestamp: UTC, RFC 3339 to the second.
func tokenTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

func printTokens(in *invocation, toks []kadm.DelegationToken) error {
	rows := make([]tokenRow, 0, len(toks))
	for _, t := range toks {
		r := tokenRow{TokenID: t.TokenID, HMAC: base64.StdEncoding.EncodeToString(t.HMAC),
			Owner: principalString(t.Owner), Renewers: []string{},
			Issued: tokenTime(t.IssueTimestamp), Expiry: tokenTime(t.ExpiryTimestamp), Max: tokenTime(t.MaxTimestamp)}
		for _, p := range t.Renewers {
			r.Renewers = append(r.Renewers, principalString(p))
		}
		rows = append(rows, r)
	}
	if in.json {
		return writeJSON(in.stdout, rows)
	}
	t := newTable(in.stdout, "TOKENID", "HMAC", "OWNER", "RENEWERS", "ISSUEDATE", "EXPIRYDATE", "MAXDATE")
	for _, r := range rows {
		t.row(r.TokenID, r.HMAC, r.Owner, "["+strings.Join(r.Renewers, ",")+"]", r.Issued, r.Expiry, r.Max)
	}
	return t.flush()
}

func principalString(p kadm.Principal) string {
	if p.Type == "" {
		return "User:" + p.Name
	}
	return p.Type + ":" + p.Name
}
