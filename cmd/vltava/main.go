// Command vltava is the Vltava event streaming platform: a Kafka-compatible
// broker (vltava server) and the client commands that work with it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/vltava/vltava/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "vltava",
		Short:         "Vltava: a Kafka-compatible event streaming platform in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServerCommand())
	root.AddCommand(newStorageCommand())
	root.AddCommand(cli.Commands()...)
	root.AddCommand(cli.RestCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "vltava:", err)
		os.Exit(1)
	}
}
