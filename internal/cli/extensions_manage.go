package cli

import "github.com/spf13/cobra"

func addExtensionManageCommands(parent *cobra.Command, s Streams) {}
