package cli

// configs --entity-type users: SCRAM credentials, as kafka-configs.sh
// handles them (KIP-554): --add-config 'SCRAM-SHA-256=[iterations=8192,
// password=secret],SCRAM-SHA-512=[password=secret]' upserts through
// AlterUserScramCredentials (the password is salted here, never sent),
// --delete-config SCRAM-SHA-512 deletes, describe lists mechanisms and
// iterations with DescribeUserScramCredentials.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// defaultScramIterations is kafka-configs.sh's default.
const defaultScramIterations = 4096

func scramMechanism(name string) (kadm.ScramMechanism, bool) {
	switch name {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, true
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, true
	}
	return 0, false
}

// parseScramUpserts turns SCRAM-SHA-256=iterations=8192,password=x (the
// brackets already dropped by kafkaAddConfigs) into upsertions.
func parseScramUpserts(user string, kvs [][2]string) ([]kadm.UpsertSCRAM, error) {
	var out []kadm.UpsertSCRAM
	for _, kv := range kvs {
		mech, ok := scramMechanism(kv[0])
		if !ok {
			return nil, fmt.Errorf("--entity-type users: %s is not a SCRAM mechanism (SCRAM-SHA-256, SCRAM-SHA-512); client quotas are not supported by this command", kv[0])
		}
		u := kadm.UpsertSCRAM{User: user, Mechanism: mech, Iterations: defaultScramIterations}
		for _, part := range strings.Split(kv[1], ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				return nil, fmt.Errorf("%s=[%s]: expected iterations=N and password=...", kv[0], kv[1])
			}
			switch k {
			case "iterations":
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("%s: iterations %q is not a number", kv[0], v)
				}
				u.Iterations = int32(n)
			case "password":
				u.Password = v
			default:
				return nil, fmt.Errorf("%s: unknown SCRAM setting %q (iterations, password)", kv[0], k)
			}
		}
		if u.Password == "" {
			return nil, fmt.Errorf("%s: a password is required", kv[0])
		}
		out = append(out, u)
	}
	return out, nil
}

func alterUserScram(ctx context.Context, adm *kadm.Client, user string, kvs [][2]string, dels []string) error {
	ups, err := parseScramUpserts(user, kvs)
	if err != nil {
		return err
	}
	var ds []kadm.DeleteSCRAM
	for _, d := range dels {
		mech, ok := scramMechanism(d)
		if !ok {
			return fmt.Errorf("--delete-config %s: not a SCRAM mechanism (SCRAM-SHA-256, SCRAM-SHA-512)", d)
		}
		ds = append(ds, kadm.DeleteSCRAM{User: user, Mechanism: mech})
	}
	res, err := adm.AlterUserSCRAMs(ctx, ds, ups)
	if err != nil {
		return fmt.Errorf("altering SCRAM credentials of %q: %w", user, err)
	}
	for _, r := range res {
		if r.Err != nil {
			return fmt.Errorf("altering SCRAM credentials of %q: %w%s", r.User, r.Err, detail(r.ErrMessage))
		}
	}
	return nil
}

// userScram is one row of `configs describe --entity-type users`.
type userScram struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

// describeUserScram prints user's SCRAM credentials in kafka-configs.sh's
// form, after its quotas: nothing when it has none, as kafka-configs.sh.
func describeUserScram(in *invocation, adm *kadm.Client, user string) error {
	res, err := adm.DescribeUserSCRAMs(in.ctx, user)
	if err != nil {
		return fmt.Errorf("describing SCRAM credentials of %q: %w", user, err)
	}
	var rows []userScram
	if r, ok := res[user]; ok {
		if r.Err != nil && !errors.Is(r.Err, kerr.ResourceNotFound) {
			return fmt.Errorf("describing SCRAM credentials of %q: %w%s", user, r.Err, detail(r.ErrMessage))
		}
		for _, c := range r.CredInfos {
			rows = append(rows, userScram{Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Mechanism < rows[j].Mechanism })
	if in.json {
		if rows == nil {
			rows = []userScram{}
		}
		return writeJSON(in.stdout, rows)
	}
	if len(rows) == 0 {
		return nil
	}
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%s=iterations=%d", r.Mechanism, r.Iterations)
	}
	// kafka-configs.sh's line.
	fmt.Fprintf(in.stdout, "SCRAM credential configs for user-principal '%s' are %s\n", user, strings.Join(parts, ", "))
	return nil
}
