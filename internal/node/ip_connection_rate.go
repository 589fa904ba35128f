package node

import (
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/quota"
)

// ipConnectionRate is the server's connection_creation_rate check: each
// accepted connection is counted against its address's quota from the
// current image (quota.window.num × quota.window.size.seconds).
func ipConnectionRate(cfg *config.Broker, meta metadata.Log) func(ip string) time.Duration {
	w := quota.Window{Samples: int(cfg.QuotaWindowNum), Size: time.Duration(cfg.QuotaWindowSizeSeconds) * time.Second}
	rates := quota.NewConnectionRates(w, nil)
	return func(ip string) time.Duration { return rates.Sync(meta.Image().ClientQuotas()).Admit(ip) }
}
