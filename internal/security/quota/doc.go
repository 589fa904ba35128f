// Package quota is Kafka's client quotas: the quota keys and their rules,
// the precedence by which a connection's user and client id find their
// quota, and the rate measurement and throttle times of Kafka's
// ClientQuotaManager, ClientRequestQuotaManager and
// ControllerMutationQuotaManager.
//
// Quotas live in the metadata image (metadata.ClientQuotaRecord, written
// by AlterClientQuotas on the controller). A Manager follows the image:
// each hot-path call first compares the image's quota pointer with the one
// its table was built from, so a broker with no quota of a kind pays one
// atomic load and a comparison per request, and nothing is measured.
//
// Enforcement is the caller's (KIP-219): the broker answers at once with
// the throttle time the Manager computed, then mutes the connection (reads
// no further request from it) for that long.
package quota
