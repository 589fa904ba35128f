package storage

import (
	"math"
	"math/rand/v2"
)

// Config holds one log's settings, taken from topic configs. The names in
// comments are Kafka's; zero values of the fields documented as such fall
// back to Kafka's defaults (see normalized).
type Config struct {
	SegmentBytes                  int64 // segment.bytes (default 1 GiB)
	SegmentMs                     int64 // segment.ms (7 days)
	SegmentJitterMs               int64 // segment.jitter.ms (0)
	SegmentIndexBytes             int32 // segment.index.bytes (10 MiB): a full index forces a roll
	IndexIntervalBytes            int32 // index.interval.bytes (4096)
	RetentionMs                   int64 // retention.ms (7 days; -1 = forever)
	RetentionBytes                int64 // retention.bytes (-1 = no limit)
	FlushMessages                 int64 // flush.messages (MaxInt64 = never by count)
	FlushMs                       int64 // flush.ms (MaxInt64)
	FileDeleteDelayMs             int64 // file.delete.delay.ms (60000)
	Compact                       bool  // cleanup.policy contains compact
	Delete                        bool  // cleanup.policy contains delete: time and size retention apply
	MessageTimestampTypeLogAppend bool  // message.timestamp.type=LogAppendTime
	ProducerIDExpirationMs        int64 // producer.id.expiration.ms (86400000)

	// Compaction (used when Compact is set; see cleaner.go).
	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio (0.5)
	MinCompactionLagMs     int64   // min.compaction.lag.ms (0)
	MaxCompactionLagMs     int64   // max.compaction.lag.ms (MaxInt64; 0 = default)
	DeleteRetentionMs      int64   // delete.retention.ms (86400000)

	// Tiered storage (KIP-405; log_tiered.go).
	RemoteStorageEnable bool  // remote.storage.enable
	LocalRetentionMs    int64 // local.retention.ms (-2 = retention.ms)
	LocalRetentionBytes int64 // local.retention.bytes (-2 = retention.bytes)
}

// DefaultConfig returns Kafka's defaults (cleanup.policy=delete).
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * 60 * 60 * 1000,
		SegmentIndexBytes:      10 << 20,
		IndexIntervalBytes:     4096,
		RetentionMs:            7 * 24 * 60 * 60 * 1000,
		RetentionBytes:         -1,
		FlushMessages:          math.MaxInt64,
		FlushMs:                math.MaxInt64,
		FileDeleteDelayMs:      60000,
		Delete:                 true,
		ProducerIDExpirationMs: 86400000,
		MinCleanableDirtyRatio: 0.5,
		MaxCompactionLagMs:     math.MaxInt64,
		DeleteRetentionMs:      86400000,
		LocalRetentionMs:       -2,
		LocalRetentionBytes:    -2,
	}
}

// normalized replaces values that Kafka's config validation would reject
// (non-positive sizes and intervals) by the defaults, so a zero Config is
// usable.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentJitterMs < 0 {
		c.SegmentJitterMs = 0
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs <= 0 {
		c.FlushMs = d.FlushMs
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = 0
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	// min.cleanable.dirty.ratio=0 is valid in Kafka (clean whenever
	// anything is dirty), so only out-of-range values are corrected.
	c.MinCleanableDirtyRatio = min(max(c.MinCleanableDirtyRatio, 0), 1)
	if c.MinCompactionLagMs < 0 {
		c.MinCompactionLagMs = 0
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = 0
	}
	return c
}

// randomSegmentJitter picks a segment's roll jitter like Kafka's
// LogConfig.randomSegmentJitter: uniform in [0, min(jitter, segment.ms)).
func (c *Config) randomSegmentJitter() int64 {
	if c.SegmentJitterMs <= 0 {
		return 0
	}
	return rand.Int64N(min(c.SegmentJitterMs, c.SegmentMs))
}
