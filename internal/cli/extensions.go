package cli

import "github.com/spf13/cobra"

// newExtensionsCmd is the group of extension commands: management
// (install, list, ...) and running tools.
func newExtensionsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "extensions",
		Aliases: []string{"extension", "ext"},
		Short:   "Manage Gemini CLI extensions and run their tools",
	}
	addExtensionManageCommands(cmd, a)
	addExtensionRunCommands(cmd, a)
	cmd.AddCommand(newExtSummaryCmd(a))
	return cmd
}
