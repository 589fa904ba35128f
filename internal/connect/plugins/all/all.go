// Package all links every built-in Connect plugin into the binary: import
// it for its side effects.
package all

import (
	_ "github.com/vltava/vltava/internal/connect/plugins/converters" // StringConverter, ByteArrayConverter
	_ "github.com/vltava/vltava/internal/connect/plugins/file"       // FileStream source and sink
)
