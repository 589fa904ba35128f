// Package metadata holds Vltava's cluster metadata the way KRaft does: as an
// applied log of records.
//
// Records are the unit of change; every node applies committed batches, in
// order, with Image.Apply, producing a new immutable Image that readers load
// without locking, published through a Publisher. The Log interface is the
// seam under the controller rules (package controller/rules): LocalLog is a
// single-node Log (a framed, fsynced file plus checkpoints) kept as a test
// seam; package metadata/quorum provides the Raft-backed Log of a cluster,
// which reuses Image.Apply, Publisher, the frame format and the batch codec
// (EncodeBatch/DecodeBatch) unchanged.
//
// Cluster identity lives in each log dir's meta.properties (see
// LoadOrCreateMetaProperties).
package metadata
