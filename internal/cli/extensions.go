package cli

import "github.com/spf13/cobra"

// newExtensionsCmd is the group of extension commands: management
// (install, list, ...) and running tools.
func newExtensionsCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "extensions",
		Aliases: []string{"extension", "ext"},
		Short:   "Manage Gemini CLI extensions and run their tools",
	}
	addExtensionManageCommands(cmd, s)
	addExtensionRunCommands(cmd, s)
	cmd.AddCommand(newExtSummaryCmd(s))
	return cmd
}
