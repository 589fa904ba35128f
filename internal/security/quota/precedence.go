package quota

import "github.com/vltava/vltava/internal/metadata"

// Level is one of the eight places a user/client-id quota is looked up,
// most specific first (Kafka's DefaultQuotaCallback, documented under
// "Quotas" in Kafka's operations guide):
//
//	1 /config/users/<user>/clients/<client-id>
//	2 /config/users/<user>/clients/<default>
//	3 /config/users/<user>
//	4 /config/users/<default>/clients/<client-id>
//	5 /config/users/<default>/clients/<default>
//	6 /config/users/<default>
//	7 /config/clients/<client-id>
//	8 /config/clients/<default>
type Level int

// levelEntity is the entity a level names for user and clientID.
func levelEntity(l Level, user, clientID string) metadata.QuotaEntity {
	u, c := metadata.QuotaName(user), metadata.QuotaName(clientID)
	d := metadata.QuotaDefault
	switch l {
	case 1:
		return metadata.QuotaEntity{User: u, ClientID: c}
	case 2:
		return metadata.QuotaEntity{User: u, ClientID: d}
	case 3:
		return metadata.QuotaEntity{User: u}
	case 4:
		return metadata.QuotaEntity{User: d, ClientID: c}
	case 5:
		return metadata.QuotaEntity{User: d, ClientID: d}
	case 6:
		return metadata.QuotaEntity{User: d}
	case 7:
		return metadata.QuotaEntity{ClientID: c}
	case 8:
		return metadata.QuotaEntity{ClientID: d}
	}
	panic("quota: no such level")
}

// SensorKey is who a quota is measured for: Kafka's quota metric tags.
// Clients whose quota comes from the same level share one measurement
// when the level names neither a client id nor a default client id: a
// quota of /config/users/alice is alice's across all her client ids, while
// /config/clients/<default> gives every client id a quota of its own.
type SensorKey struct {
	User, ClientID string
}

// Resolve finds the quota of key for a connection's user (the principal's
// name) and client id: the first of the eight levels that sets key, the
// level, and the key its usage is measured under. ok is false when no
// level sets it.
func Resolve(q *metadata.ClientQuotas, key, user, clientID string) (limit float64, level Level, sk SensorKey, ok bool) {
	for l := Level(1); l <= 8; l++ {
		v, found := q.Get(levelEntity(l, user, clientID))[key]
		if !found {
			continue
		}
		switch l {
		case 3, 6:
			sk = SensorKey{User: user}
		case 7, 8:
			sk = SensorKey{ClientID: clientID}
		default:
			sk = SensorKey{User: user, ClientID: clientID}
		}
		return v, l, sk, true
	}
	return 0, 0, SensorKey{}, false
}

// ResolveIP finds connection_creation_rate for an address: its own entity,
// else the default ip entity (Kafka's ConnectionQuotas).
func ResolveIP(q *metadata.ClientQuotas, ip string) (limit float64, ok bool) {
	if v, found := q.Get(metadata.QuotaEntity{IP: metadata.QuotaName(ip)})[ConnectionCreationRate]; found {
		return v, true
	}
	v, found := q.Get(metadata.QuotaEntity{IP: metadata.QuotaDefault})[ConnectionCreationRate]
	return v, found
}
