package cli

import "github.com/spf13/cobra"

func addIDEServeCommands(parent *cobra.Command, s Streams) {}
