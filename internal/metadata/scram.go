package metadata

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// UserScramCredentialRecordType and RemoveUserScramCredentialRecordType are
// Kafka's apiKeys 11 and 22.
const (
	UserScramCredentialRecordType       RecordType = 11
	RemoveUserScramCredentialRecordType RecordType = 22
)

// UserScramCredentialRecord stores one user's SCRAM credential for one
// mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), as Kafka's record of the
// same name: what the server side of SCRAM needs, never the password.
type UserScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
	Iterations int32  `json:"iterations"`
}

// RemoveUserScramCredentialRecord deletes a user's credential for one
// mechanism.
type RemoveUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

func (*UserScramCredentialRecord) Type() RecordType       { return UserScramCredentialRecordType }
func (*RemoveUserScramCredentialRecord) Type() RecordType { return RemoveUserScramCredentialRecordType }
func (*UserScramCredentialRecord) isRecord()              {}
func (*RemoveUserScramCredentialRecord) isRecord()        {}

// ScramKey names a credential: user and mechanism.
type ScramKey struct {
	User      string
	Mechanism int8
}

// ScramCredential is a stored credential as the image holds it.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramCredential returns a user's credential for a mechanism.
func (img *Image) ScramCredential(user string, mechanism int8) (ScramCredential, bool) {
	c, ok := img.scram[ScramKey{user, mechanism}]
	return c, ok
}

// ScramCredentials returns every stored credential (a copy).
func (img *Image) ScramCredentials() map[ScramKey]ScramCredential {
	return maps.Clone(img.scram)
}

// applyScram applies the SCRAM records; the map is copied once per batch.
func (b *imageBuilder) applyScram(r Record) error {
	if !b.scramCopied {
		b.scram = maps.Clone(b.scram)
		if b.scram == nil {
			b.scram = map[ScramKey]ScramCredential{}
		}
		b.scramCopied = true
	}
	switch r := r.(type) {
	case *UserScramCredentialRecord:
		if r.Name == "" {
			return fmt.Errorf("SCRAM credential with an empty user name")
		}
		if r.Mechanism != 1 && r.Mechanism != 2 {
			return fmt.Errorf("unknown SCRAM mechanism %d", r.Mechanism)
		}
		b.scram[ScramKey{r.Name, r.Mechanism}] = ScramCredential{
			Salt: bytes.Clone(r.Salt), StoredKey: bytes.Clone(r.StoredKey), ServerKey: bytes.Clone(r.ServerKey), Iterations: r.Iterations,
		}
	case *RemoveUserScramCredentialRecord:
		k := ScramKey{r.Name, r.Mechanism}
		if _, ok := b.scram[k]; !ok {
			return fmt.Errorf("no SCRAM credential of mechanism %d for user %q", r.Mechanism, r.Name)
		}
		delete(b.scram, k)
	}
	return nil
}

// appendScramRecords appends the credentials to a snapshot's records.
func (img *Image) appendScramRecords(recs []Record) []Record {
	keys := slices.SortedFunc(maps.Keys(img.scram), func(a, b ScramKey) int {
		if a.User != b.User {
			if a.User < b.User {
				return -1
			}
			return 1
		}
		return int(a.Mechanism) - int(b.Mechanism)
	})
	for _, k := range keys {
		c := img.scram[k]
		recs = append(recs, &UserScramCredentialRecord{Name: k.User, Mechanism: k.Mechanism,
			Salt: bytes.Clone(c.Salt), StoredKey: bytes.Clone(c.StoredKey), ServerKey: bytes.Clone(c.ServerKey), Iterations: c.Iterations})
	}
	return recs
}
