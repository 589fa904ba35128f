// Package all links every built-in Connect plugin into the binary: each
// plugin package registers itself in its init function.
package all

import (
	_ "github.com/vltava/vltava/internal/connect/plugins/jdbc"       // JDBC sink and source (PostgreSQL, MySQL/MariaDB)
	_ "github.com/vltava/vltava/internal/connect/plugins/json"       // JsonConverter, SimpleHeaderConverter
	_ "github.com/vltava/vltava/internal/connect/plugins/spooldir"   // the CSV spool-directory source
	_ "github.com/vltava/vltava/internal/connect/plugins/transforms" // Single Message Transforms and predicates
)
