package cli

import "github.com/spf13/cobra"

func addExtensionRunCommands(parent *cobra.Command, s Streams) {}
