package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// Uuid is a Kafka UUID as used for topic ids, broker incarnation ids and
// cluster ids: 16 raw bytes, printed the way Kafka's org.apache.kafka.common.Uuid
// prints them (URL-safe base64 without padding, always 22 characters).
//
// A Uuid is a plain value; it is safe to copy and compare with ==.
type Uuid [16]byte

var (
	// ZeroUuid is Kafka's Uuid.ZERO_UUID: "no id", never assigned to a topic.
	ZeroUuid = Uuid{}
	// MetadataTopicUuid is Kafka's Uuid.METADATA_TOPIC_ID (0, 1), reserved
	// for the __cluster_metadata topic and never assigned to a user topic.
	MetadataTopicUuid = Uuid{15: 1}
)

// uuidEncoding is the alphabet Kafka uses for Uuid.toString.
var uuidEncoding = base64.RawURLEncoding

// NewUuid returns a random version 4 UUID from crypto/rand. Like Kafka's
// Uuid.randomUuid it never returns one of the reserved ids, nor one whose
// string form starts with '-' (which command-line tools would take for a flag).
func NewUuid() Uuid {
	for {
		var u Uuid
		if _, err := rand.Read(u[:]); err != nil {
			// crypto/rand.Read is documented never to fail on supported
			// platforms; if it does there is no safe fallback for an id.
			panic(fmt.Sprintf("metadata: crypto/rand failed: %v", err))
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if u.IsReserved() || u.String()[0] == '-' {
			continue
		}
		return u
	}
}

// IsReserved reports whether u is the zero id or the metadata topic id.
func (u Uuid) IsReserved() bool { return u == ZeroUuid || u == MetadataTopicUuid }

// String returns the 22-character URL-safe base64 form Kafka prints.
func (u Uuid) String() string { return uuidEncoding.EncodeToString(u[:]) }

// ParseUuid parses the 22-character form produced by String.
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	if len(s) != 22 {
		return u, fmt.Errorf("metadata: invalid uuid %q: want 22 base64 characters", s)
	}
	b, err := uuidEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("metadata: invalid uuid %q: %v", s, err)
	}
	copy(u[:], b)
	return u, nil
}

// MarshalText encodes u as its Kafka string form (used by the JSON record
// encoding).
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText parses the Kafka string form.
func (u *Uuid) UnmarshalText(b []byte) error {
	v, err := ParseUuid(string(b))
	if err != nil {
		return err
	}
	*u = v
	return nil
}
