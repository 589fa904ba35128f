package broker

// Broker-side schema validation (Confluent Server's
// confluent.key.schema.validation / confluent.value.schema.validation, or
// vltava.key/value.schema.validation): on a topic with the check on, every
// record's key (or value) must be in the schema registry's wire format
// (magic byte 0, then a 4-byte big-endian schema id) with an id registered
// under the topic's subject (TopicNameStrategy: <topic>-key,
// <topic>-value). A batch with a record that is not is refused whole with
// INVALID_RECORD and, from Produce v8, each such record's index and reason
// (KIP-467). Null keys and values (tombstones) are not checked. The check
// runs in the batch's validation walk (record.ValidateOptions.CheckRecord),
// every batch of the request's record set, with no lock held.
//
// Ids are looked up in the node's embedded registry (in memory) or, with
// confluent.schema.registry.url, asked of that registry over HTTP once per
// id and subject and remembered; no lock is held while asking.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/vltava/vltava/internal/config"
)

// SchemaRegistry answers whether a schema id is a live version of a
// subject; the embedded registry's State implements it.
type SchemaRegistry interface {
	IDRegisteredUnder(id int, subject string) bool
}

// schemaValidator holds where ids are looked up.
type schemaValidator struct {
	local  atomic.Pointer[localRegistry] // set once the embedded registry runs
	once   sync.Once
	remote *remoteRegistry // with confluent.schema.registry.url; nil otherwise
}

type localRegistry struct{ SchemaRegistry }

// SetSchemaRegistry gives the broker the node's embedded registry.
func (b *Broker) SetSchemaRegistry(r SchemaRegistry) { b.schemas.local.Store(&localRegistry{r}) }

// registry is where ids are looked up: the configured URL, else the
// embedded registry; nil when there is neither.
func (b *Broker) schemaRegistry() SchemaRegistry {
	b.schemas.once.Do(func() {
		if b.cfg.SchemaRegistryURL != "" {
			b.schemas.remote = newRemoteRegistry(b.cfg.SchemaRegistryURL)
		}
	})
	if b.schemas.remote != nil {
		return b.schemas.remote
	}
	if l := b.schemas.local.Load(); l != nil {
		return l.SchemaRegistry
	}
	return nil
}

// schemaCheck is the per-record check of a topic's key and value schema
// ids, run while the batch is validated (partition.AppendChecked: one
// decompression and one walk serve both); nil when the topic checks
// neither. Consecutive records with the same id under the same subject
// are looked up once.
func (b *Broker) schemaCheck(topic string, cfg config.Topic) func(key, value []byte) string {
	if !cfg.KeySchemaValidation && !cfg.ValueSchemaValidation {
		return nil
	}
	reg := b.schemaRegistry()
	keySubject, valueSubject := topic+"-key", topic+"-value"
	// The last id each check found registered (the walk is one goroutine).
	type found struct {
		id  int
		set bool
	}
	var lastKey, lastValue found
	check := func(data []byte, subject, what string, last *found) string {
		if last.set && len(data) >= 5 && data[0] == 0 && int(int32(binary.BigEndian.Uint32(data[1:5]))) == last.id {
			return ""
		}
		msg := checkSchemaID(reg, data, subject, what)
		if msg == "" {
			*last = found{id: int(int32(binary.BigEndian.Uint32(data[1:5]))), set: true}
		}
		return msg
	}
	return func(key, value []byte) string {
		if cfg.KeySchemaValidation && key != nil {
			if msg := check(key, keySubject, "key", &lastKey); msg != "" {
				return msg
			}
		}
		if cfg.ValueSchemaValidation && value != nil {
			return check(value, valueSubject, "value", &lastValue)
		}
		return ""
	}
}

// checkSchemaID says why data is not a registered schema's wire format
// for subject ("" when it is).
func checkSchemaID(reg SchemaRegistry, data []byte, subject, what string) string {
	if len(data) < 5 || data[0] != 0 {
		return fmt.Sprintf("This record has an invalid %s schema: it does not start with the schema registry's magic byte 0 and a 4-byte schema id", what)
	}
	id := int(int32(binary.BigEndian.Uint32(data[1:5])))
	if reg == nil {
		return fmt.Sprintf("This record's %s schema id %d cannot be checked: the broker has no schema registry (set confluent.schema.registry.url or schema.registry.listeners)", what, id)
	}
	if !reg.IDRegisteredUnder(id, subject) {
		return fmt.Sprintf("This record has an invalid %s schema id %d: it is not registered under subject %s", what, id, subject)
	}
	return ""
}

// remoteRegistry asks a registry over HTTP which subjects an id is
// registered under, remembering each answer that it is.
type remoteRegistry struct {
	cl    *sr.Client
	known sync.Map // schemaUse → struct{}: immutable once registered
}

type schemaUse struct {
	id      int
	subject string
}

func newRemoteRegistry(url string) *remoteRegistry {
	cl, err := sr.NewClient(sr.URLs(url), sr.HTTPClient(&http.Client{Timeout: 10 * time.Second}))
	if err != nil {
		// The URL is validated at start-up (config); a client that cannot
		// be built refuses every id with a reason rather than crashing.
		return &remoteRegistry{}
	}
	return &remoteRegistry{cl: cl}
}

func (r *remoteRegistry) IDRegisteredUnder(id int, subject string) bool {
	key := schemaUse{id, subject}
	if _, ok := r.known.Load(key); ok {
		return true
	}
	if r.cl == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	uses, err := r.cl.SchemaVersionsByID(ctx, id)
	var re *sr.ResponseError
	if err != nil && !errors.As(err, &re) {
		return false
	}
	found := slices.ContainsFunc(uses, func(u sr.SubjectVersion) bool { return u.Subject == subject })
	for _, u := range uses {
		r.known.Store(schemaUse{id, u.Subject}, struct{}{})
	}
	return found
}
