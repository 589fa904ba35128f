package metrics

import "sync/atomic"

// disabled is metrics.enable=false: the request, produce and fetch paths
// skip their counters. Set once, before the node serves (SetEnabled), so a
// gauge's increments and decrements always pair.
var disabled atomic.Bool

// SetEnabled switches the hot-path counters on (the default) or off
// (metrics.enable=false). The counters are process-wide, as the node is
// one per process; call it before the node serves requests.
func SetEnabled(on bool) { disabled.Store(!on) }

// Enabled reports whether the hot-path counters count; the produce and
// fetch handlers check it before adding to BrokerTopicMetrics.
func Enabled() bool { return !disabled.Load() }
