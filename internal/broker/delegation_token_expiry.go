package broker

import (
	"context"
	"sync"
	"time"
)

// tokenExpiry is the expired-token remover: one goroutine, on a node with
// a controller and delegation tokens enabled, that every
// delegation.token.expiry.check.interval.ms removes the expired tokens
// from the metadata log while this node is the active controller (Kafka's
// controller does the same on a timer).
type tokenExpiry struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// startTokenExpiry starts the remover, or returns nil when this node has
// no controller or tokens are disabled.
func (b *Broker) startTokenExpiry() *tokenExpiry {
	if b.controller == nil || b.tokenSecret() == "" {
		return nil
	}
	interval := time.Duration(b.cfg.DelegationTokenExpiryCheckIntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = time.Hour // Kafka's default, for a Config not parsed from properties
	}
	ctx, cancel := context.WithCancel(context.Background())
	te := &tokenExpiry{cancel: cancel}
	te.done.Add(1)
	go func() {
		defer te.done.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !b.controllerIsLocal() {
				continue
			}
			n, err := b.controller.RemoveExpiredDelegationTokens(ctx, time.Now().UnixMilli())
			switch {
			case err != nil && ctx.Err() == nil:
				b.log.Warn("removing expired delegation tokens", "err", err)
			case n > 0:
				b.log.Info("removed expired delegation tokens", "count", n)
			}
		}
	}()
	return te
}

// stop ends the remover and waits for it; a nil remover is a no-op.
func (te *tokenExpiry) stop() {
	if te == nil {
		return
	}
	te.cancel()
	te.done.Wait()
}
