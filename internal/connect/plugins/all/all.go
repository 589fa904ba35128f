// Package all links every built-in Connect plugin into the binary: import
// it for its side effects.
package all

import (
	_ "github.com/vltava/vltava/internal/connect/plugins/converters" // StringConverter, ByteArrayConverter
	_ "github.com/vltava/vltava/internal/connect/plugins/file"       // FileStream source and sink
	_ "github.com/vltava/vltava/internal/connect/plugins/http"       // HTTP sink
	_ "github.com/vltava/vltava/internal/connect/plugins/jdbc"       // JDBC sink and source (PostgreSQL, MySQL/MariaDB)
	_ "github.com/vltava/vltava/internal/connect/plugins/json"       // JsonConverter, SimpleHeaderConverter
	_ "github.com/vltava/vltava/internal/connect/plugins/spooldir"   // the CSV spool-directory source
	_ "github.com/vltava/vltava/internal/connect/plugins/transforms" // Single Message Transforms and predicates
)
