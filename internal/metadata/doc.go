// Package metadata holds Vltava's cluster metadata the way KRaft does: as an
// applied log of records.
//
// The Controller validates an admin request against the current Image, turns
// it into Records and commits them to a Log; every node applies committed
// batches, in order, with Image.Apply, producing a new immutable Image that
// readers load without locking. LocalLog is the single-node Log (a framed,
// fsynced file plus checkpoints); a Raft-backed Log can reuse Image.Apply,
// Publisher and the batch codec (EncodeBatch/DecodeBatch) unchanged, so the
// Controller and the Image code are the same in both deployments.
//
// Cluster identity lives in each log dir's meta.properties (see
// LoadOrCreateMetaProperties).
package metadata
