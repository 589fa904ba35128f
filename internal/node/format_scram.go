package node

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/sasl/scram"
)

// ParseAddScram parses kafka-storage.sh's --add-scram argument,
// 'SCRAM-SHA-256=[name=alice,password=alice-secret]', with optional
// iterations=N (default 4096) or, instead of the password, salt= and
// saltedpassword= (hex or base64, as kafka-storage.sh writes them), into
// the credential record the first controller commits.
func ParseAddScram(arg string) (*metadata.UserScramCredentialRecord, error) {
	mechName, rest, ok := strings.Cut(strings.TrimSpace(arg), "=")
	if !ok {
		return nil, fmt.Errorf("--add-scram %q: expected MECHANISM=[name=...,password=...]", arg)
	}
	mech, ok := scram.MechanismType(mechName)
	if !ok {
		return nil, fmt.Errorf("--add-scram %q: %s is not SCRAM-SHA-256 or SCRAM-SHA-512", arg, mechName)
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return nil, fmt.Errorf("--add-scram %q: the settings go in brackets: %s=[name=...,password=...]", arg, mechName)
	}
	opts := map[string]string{}
	for _, kv := range strings.Split(rest[1:len(rest)-1], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("--add-scram %q: %q is not key=value", arg, kv)
		}
		opts[strings.ToLower(k)] = strings.Trim(v, `"`)
	}
	name := opts["name"]
	if name == "" {
		return nil, fmt.Errorf("--add-scram %q: name= is required", arg)
	}
	iterations := int32(scram.MinIterations)
	if v, ok := opts["iterations"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--add-scram %q: iterations %q is not a number", arg, v)
		}
		iterations = int32(n)
	}
	var cred scram.Credential
	switch {
	case opts["password"] != "":
		salt, err := decodeBytes(opts["salt"])
		if err != nil {
			return nil, fmt.Errorf("--add-scram %q: salt: %w", arg, err)
		}
		if len(salt) == 0 {
			salt = nil
		}
		if cred, err = scram.NewCredential(mech, opts["password"], salt, iterations); err != nil {
			return nil, fmt.Errorf("--add-scram %q: %w", arg, err)
		}
	case opts["saltedpassword"] != "":
		salt, err := decodeBytes(opts["salt"])
		if err != nil || len(salt) == 0 {
			return nil, fmt.Errorf("--add-scram %q: saltedpassword needs salt", arg)
		}
		salted, err := decodeBytes(opts["saltedpassword"])
		if err != nil {
			return nil, fmt.Errorf("--add-scram %q: saltedpassword: %w", arg, err)
		}
		if iterations < scram.MinIterations || iterations > scram.MaxIterations {
			return nil, fmt.Errorf("--add-scram %q: iterations %d out of range [%d, %d]", arg, iterations, scram.MinIterations, scram.MaxIterations)
		}
		cred = scram.FromSaltedPassword(mech, salted, salt, iterations)
	default:
		return nil, fmt.Errorf("--add-scram %q: password= (or salt= and saltedpassword=) is required", arg)
	}
	return &metadata.UserScramCredentialRecord{Name: name, Mechanism: mech, Salt: cred.Salt,
		StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}, nil
}

func decodeBytes(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if b, err := hex.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.StdEncoding.DecodeString(s)
}
