package quota

import (
	"fmt"
	"math"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// The quota keys, as Kafka's QuotaConfigs names them.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// keyType is the ConfigDef type of a quota key: integral keys refuse
// fractions, as Kafka's ClientQuotaControlManager.validateQuotaKeyValue.
type keyType int

const (
	typeLong keyType = iota
	typeDouble
	typeInt
)

// userClientKeys are the keys of user, client-id and user+client-id
// entities (QuotaConfigs.userConfigs / clientConfigs); ipKeys those of ip
// entities (QuotaConfigs.ipConfigs).
var (
	userClientKeys = map[string]keyType{
		ProducerByteRate:       typeLong,
		ConsumerByteRate:       typeLong,
		RequestPercentage:      typeDouble,
		ControllerMutationRate: typeDouble,
	}
	ipKeys = map[string]keyType{
		ConnectionCreationRate: typeInt,
	}
)

// ValidateEntity checks an AlterClientQuotas entity as Kafka's controller
// does (INVALID_REQUEST): components of known types, each once, names not
// empty, an ip a valid address, and ip never combined with user or
// client-id.
func ValidateEntity(data []metadata.QuotaEntityData) (metadata.QuotaEntity, error) {
	if len(data) == 0 {
		return metadata.QuotaEntity{}, fmt.Errorf("%w: Invalid empty client quota entity", kerr.InvalidRequest)
	}
	seen := map[string]bool{}
	for _, d := range data {
		if seen[d.EntityType] {
			return metadata.QuotaEntity{}, fmt.Errorf("%w: Invalid client quota entity, duplicate entity entry %s", kerr.InvalidRequest, d.EntityType)
		}
		seen[d.EntityType] = true
		switch d.EntityType {
		case metadata.QuotaEntityUser, metadata.QuotaEntityClientID, metadata.QuotaEntityIP:
		default:
			return metadata.QuotaEntity{}, fmt.Errorf("%w: Unhandled client quota entity type: %s", kerr.InvalidRequest, d.EntityType)
		}
		if d.EntityName != nil && *d.EntityName == "" {
			return metadata.QuotaEntity{}, fmt.Errorf("%w: Empty %s not supported", kerr.InvalidRequest, d.EntityType)
		}
	}
	e, err := metadata.QuotaEntityOf(data)
	if err != nil {
		return metadata.QuotaEntity{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	if e.IP.Set {
		if e.User.Set || e.ClientID.Set {
			return metadata.QuotaEntity{}, fmt.Errorf("%w: Invalid quota entity combination, IP entity should not be combined with User or ClientId", kerr.InvalidRequest)
		}
		// Kafka also takes a resolvable host name here; the controller
		// resolves nothing (no network call under its lock), so only
		// addresses are quota entities.
		if !e.IP.Default && net.ParseIP(e.IP.Name) == nil {
			return metadata.QuotaEntity{}, fmt.Errorf("%w: %s is not a valid IP or resolvable host.", kerr.InvalidRequest, e.IP.Name)
		}
	}
	return e, nil
}

// ValidateKeyValue checks one quota key and value for an entity, as
// Kafka's controller does (INVALID_REQUEST): the key must be one of the
// entity's keys (SCRAM mechanisms are not quota keys, KAFKA-14943), the
// value above zero, and an integral key's value whole and within its type.
// A nil value is a removal, which Kafka does not check: removing a key that
// is not set changes nothing.
func ValidateKeyValue(e metadata.QuotaEntity, key string, value *float64) error {
	if value == nil {
		return nil
	}
	keys := userClientKeys
	if e.IP.Set {
		keys = ipKeys
	}
	typ, ok := keys[key]
	if !ok {
		return fmt.Errorf("%w: Invalid configuration key %s", kerr.InvalidRequest, key)
	}
	v := *value
	if math.IsNaN(v) || v <= 0 {
		return fmt.Errorf("%w: Quota %s must be greater than 0", kerr.InvalidRequest, key)
	}
	switch typ {
	case typeInt:
		if v > math.MaxInt32 {
			return fmt.Errorf("%w: Proposed value for %s is too large for an INT.", kerr.InvalidRequest, key)
		}
	case typeLong:
		if v >= math.MaxInt64 {
			return fmt.Errorf("%w: Proposed value for %s is too large for a LONG.", kerr.InvalidRequest, key)
		}
	case typeDouble:
		if math.IsInf(v, 0) {
			return fmt.Errorf("%w: Quota %s must be finite", kerr.InvalidRequest, key)
		}
		return nil
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return fmt.Errorf("%w: %s cannot be a fractional value.", kerr.InvalidRequest, key)
	}
	return nil
}
