// Package s3 is tiered storage's RemoteStorage on any S3-compatible object
// store, configured with the keys of the widely used open-source S3
// remote-storage plugin under Kafka's `rsm.config.` prefix. Credentials come
// from the AWS SDK's default chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY,
// AWS_PROFILE and the shared credentials file, …) and are never logged.
package s3

import (
	"fmt"
	"strconv"
	"strings"
)

// Config is the store's configuration: the `rsm.config.` keys with the
// prefix removed.
type Config struct {
	Bucket    string // storage.s3.bucket.name (required)
	Endpoint  string // storage.s3.endpoint.url ("": AWS)
	Region    string // storage.s3.region (default us-east-1)
	PathStyle bool   // storage.s3.path.style.access.enabled
	KeyPrefix string // key.prefix
	ChunkSize int    // chunk.size: the unit checksummed, fetched and cached (default 4 MiB)
	// CacheDir and CacheSize bound the local cache of fetched chunks
	// (fetch.chunk.cache.path, fetch.chunk.cache.size); CacheSize 0 turns
	// the cache off.
	CacheDir  string
	CacheSize int64
}

// Keys lists every key ParseConfig accepts (without the rsm.config. prefix).
var Keys = []string{
	"storage.s3.bucket.name", "storage.s3.endpoint.url", "storage.s3.region",
	"storage.s3.path.style.access.enabled", "key.prefix", "chunk.size",
	"fetch.chunk.cache.path", "fetch.chunk.cache.size",
}

// ParseConfig reads the keys; an unknown key is refused, naming it, so a
// misspelt setting is not silently ignored.
func ParseConfig(props map[string]string) (Config, error) {
	c := Config{Region: "us-east-1", ChunkSize: 4 << 20, CacheSize: 1 << 30}
	known := map[string]bool{}
	for _, k := range Keys {
		known[k] = true
	}
	for k, v := range props {
		if !known[k] {
			return c, fmt.Errorf("rsm.config.%s: not a setting of the S3 remote storage (known: %s)", k, strings.Join(Keys, ", "))
		}
		var err error
		switch k {
		case "storage.s3.bucket.name":
			c.Bucket = v
		case "storage.s3.endpoint.url":
			c.Endpoint = v
		case "storage.s3.region":
			c.Region = v
		case "storage.s3.path.style.access.enabled":
			c.PathStyle, err = strconv.ParseBool(v)
		case "key.prefix":
			c.KeyPrefix = v
		case "chunk.size":
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && (n < 64<<10 || n > 256<<20) {
				err = fmt.Errorf("must be between 64 KiB and 256 MiB")
			}
			c.ChunkSize = n
		case "fetch.chunk.cache.path":
			c.CacheDir = v
		case "fetch.chunk.cache.size":
			c.CacheSize, err = strconv.ParseInt(v, 10, 64)
			if err == nil && c.CacheSize < 0 {
				err = fmt.Errorf("must not be negative")
			}
		}
		if err != nil {
			return c, fmt.Errorf("rsm.config.%s=%q: %v", k, v, err)
		}
	}
	if c.Bucket == "" {
		return c, fmt.Errorf("rsm.config.storage.s3.bucket.name is required")
	}
	return c, nil
}
