package rules

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// This file is the broker lifecycle of KIP-631 as the controller commits it:
// a broker registers (fenced), is unfenced once its heartbeats show it has
// caught up with the metadata log, may enter controlled shutdown, and is
// fenced when its session expires or it has finished shutting down. Every
// state change that removes a broker also moves its leaderships and takes
// it out of the ISRs, in the same batch, so no image ever shows a fenced
// leader. Session timing lives in internal/controller; these methods only
// validate and commit.

// Registration is a broker's BrokerRegistration request.
type Registration struct {
	BrokerID      int32
	IncarnationID metadata.Uuid
	Endpoints     []metadata.Endpoint
	Rack          string
}

// RegistrationResult is the outcome of Register: the broker's epoch and the
// metadata offset of its registration record, which the broker must have
// applied before it may be unfenced.
type RegistrationResult struct {
	BrokerEpoch int64
	Offset      int64
}

// Register records a broker registration, fenced, as KRaft does. A retry of
// the same incarnation with the same endpoints returns the existing epoch
// without a new record. A new incarnation replaces the old registration:
// the old process is gone, so its leaderships move and it leaves the ISRs
// in the same batch (the new incarnation rejoins them once caught up).
func (c *Controller) Register(ctx context.Context, reg Registration) (RegistrationResult, error) {
	if reg.BrokerID < 0 {
		return RegistrationResult{}, fmt.Errorf("%w: Invalid broker id %d", kerr.InvalidRegistration, reg.BrokerID)
	}
	if reg.IncarnationID == metadata.ZeroUuid {
		return RegistrationResult{}, fmt.Errorf("%w: Broker %d registration has no incarnation id", kerr.InvalidRegistration, reg.BrokerID)
	}
	names := map[string]bool{}
	for _, ep := range reg.Endpoints {
		if names[ep.Name] {
			return RegistrationResult{}, fmt.Errorf("%w: Broker %d registration lists listener %s twice", kerr.InvalidRegistration, reg.BrokerID, ep.Name)
		}
		names[ep.Name] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	old, had := img.Broker(reg.BrokerID)
	if had && old.IncarnationID == reg.IncarnationID && slices.Equal(old.Endpoints, reg.Endpoints) && old.Rack == reg.Rack {
		return RegistrationResult{BrokerEpoch: old.Epoch, Offset: img.Offset()}, nil
	}
	rec := &metadata.RegisterBrokerRecord{
		BrokerID: reg.BrokerID, IncarnationID: reg.IncarnationID, BrokerEpoch: img.Offset() + 1,
		Endpoints: slices.Clone(reg.Endpoints), Rack: reg.Rack, Fenced: true,
	}
	if had && rec.BrokerEpoch <= old.Epoch {
		rec.BrokerEpoch = old.Epoch + 1
	}
	recs := c.removeBrokerChangesLocked(img, reg.BrokerID)
	recs = append([]metadata.Record{rec}, recs...)
	next, err := c.log.Commit(ctx, recs)
	if err != nil {
		return RegistrationResult{}, err
	}
	c.logger.Info("registered broker", "broker", reg.BrokerID, "epoch", rec.BrokerEpoch, "incarnation", reg.IncarnationID)
	return RegistrationResult{BrokerEpoch: rec.BrokerEpoch, Offset: next.Offset()}, nil
}

// checkBrokerEpochLocked returns the broker's registration if epoch is its
// current epoch.
func checkBrokerEpoch(img *metadata.Image, id int32, epoch int64) (metadata.BrokerImage, error) {
	b, ok := img.Broker(id)
	if !ok {
		return metadata.BrokerImage{}, fmt.Errorf("%w: Broker %d is not registered", kerr.BrokerIDNotRegistered, id)
	}
	if epoch != b.Epoch {
		return metadata.BrokerImage{}, fmt.Errorf("%w: Broker %d epoch %d is not the registered epoch %d", kerr.StaleBrokerEpoch, id, epoch, b.Epoch)
	}
	return b, nil
}

// FenceBroker fences the registration (id, epoch): its session expired or
// its controlled shutdown finished. Its leaderships move to other ISR
// members and it leaves the ISRs (never emptying one). A broker already
// fenced is left alone.
func (c *Controller) FenceBroker(ctx context.Context, id int32, epoch int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	b, err := checkBrokerEpoch(img, id, epoch)
	if err != nil {
		return err
	}
	if b.Fenced {
		return nil
	}
	recs := []metadata.Record{&metadata.BrokerRegistrationChangeRecord{BrokerID: id, BrokerEpoch: epoch, Fenced: metadata.BoolPtr(true), InControlledShutdown: metadata.BoolPtr(false)}}
	recs = append(recs, c.removeBrokerChangesLocked(img, id)...)
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return err
	}
	c.logger.Info("fenced broker", "broker", id, "epoch", epoch, "partition_changes", len(recs)-1)
	return nil
}

// UnfenceBroker unfences the registration (id, epoch) and elects it leader
// of the partitions left without one whose ISR holds it (or, with unclean
// leader election enabled, of which it is a replica).
func (c *Controller) UnfenceBroker(ctx context.Context, id int32, epoch int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	b, err := checkBrokerEpoch(img, id, epoch)
	if err != nil {
		return err
	}
	if !b.Fenced {
		return nil
	}
	recs := []metadata.Record{&metadata.BrokerRegistrationChangeRecord{BrokerID: id, BrokerEpoch: epoch, Fenced: metadata.BoolPtr(false)}}
	eligible := func(r int32) bool { return r == id || img.BrokerActive(r) }
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader != metadata.NoLeader || !slices.Contains(p.Replicas, id) {
				continue
			}
			if ch := buildChange(t.ID, p, partitionTarget{eligible: eligible, unclean: c.uncleanLocked(img, t.Name)}); ch != nil {
				recs = append(recs, ch)
			}
		}
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return err
	}
	c.logger.Info("unfenced broker", "broker", id, "epoch", epoch, "partition_changes", len(recs)-1)
	return nil
}

// BeginControlledShutdown marks (id, epoch) as shutting down and moves its
// leaderships away and takes it out of the ISRs, as Kafka's controller does
// when a heartbeat sets WantShutDown. It returns the metadata offset the
// broker must reach before it may stop (the batch that moved its
// leaderships).
func (c *Controller) BeginControlledShutdown(ctx context.Context, id int32, epoch int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	b, err := checkBrokerEpoch(img, id, epoch)
	if err != nil {
		return 0, err
	}
	if b.Fenced || b.InControlledShutdown {
		return img.Offset(), nil
	}
	recs := []metadata.Record{&metadata.BrokerRegistrationChangeRecord{BrokerID: id, BrokerEpoch: epoch, InControlledShutdown: metadata.BoolPtr(true)}}
	recs = append(recs, c.removeBrokerChangesLocked(img, id)...)
	next, err := c.log.Commit(ctx, recs)
	if err != nil {
		return 0, err
	}
	c.logger.Info("broker entered controlled shutdown", "broker", id, "partition_changes", len(recs)-1)
	return next.Offset(), nil
}

// removeBrokerChangesLocked returns the partition changes that take broker
// out of every ISR (unless it is the last member) and elect new leaders
// where it led.
func (c *Controller) removeBrokerChangesLocked(img *metadata.Image, broker int32) []metadata.Record {
	var recs []metadata.Record
	eligible := func(r int32) bool { return r != broker && img.BrokerActive(r) }
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader != broker && !slices.Contains(p.ISR, broker) {
				continue
			}
			tgt := partitionTarget{isr: withoutBroker(p.ISR, broker), eligible: eligible, unclean: c.uncleanLocked(img, t.Name)}
			if ch := buildChange(t.ID, p, tgt); ch != nil {
				recs = append(recs, ch)
			}
		}
	}
	return recs
}

// uncleanLocked reports whether unclean leader election is enabled for a
// topic: its override, else the cluster's dynamic default, else the static
// broker config.
func (c *Controller) uncleanLocked(img *metadata.Image, topic string) bool {
	const key = "unclean.leader.election.enable"
	if v, ok := img.TopicConfig(topic)[key]; ok {
		return v == "true"
	}
	if v, ok := img.BrokerConfig("")[key]; ok {
		return v == "true"
	}
	return c.cfg.UncleanLeaderElection
}

// LeadsAnything reports whether broker leads any partition in img.
func LeadsAnything(img *metadata.Image, broker int32) bool {
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == broker {
				return true
			}
		}
	}
	return false
}
