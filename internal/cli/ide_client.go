package cli

import "github.com/spf13/cobra"

func addIDEClientCommands(parent *cobra.Command, s Streams) {}
