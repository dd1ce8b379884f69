package cli

import "github.com/spf13/cobra"

// newExtensionsCmd is the group of extension commands: management
// (install, list, ...) and running tools.
func newExtensionsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "extensions",
		Aliases: []string{"extension", "ext"},
		Short:   "Manage Gemini CLI extensions and run their tools",
		Long: `Manage the extensions Gemini CLI uses (~/.gemini/extensions, shared with it) and
run their tools in a sandbox built from their declared permissions.

The commands and flags follow Gemini CLI's own ` + "`gemini extensions`" + ` where they
mean the same (install --ref, --consent, --auto-update, --pre-release; new with
its template names such as mcp-server). Gemini CLI's ` + "`extensions config`" + ` has no
gemkit twin: it sets an extension's settings in the extension's .env or, for
sensitive ones, the system keychain, which gemkit does not write; use
` + "`gemini extensions config NAME`" + `, and ` + "`gemkit extensions describe NAME`" + ` shows
which settings are set and where.

Documentation: https://github.com/gemkit/gemkit/blob/main/docs/extensions.md`,
	}
	addExtensionManageCommands(cmd, a)
	addExtensionRunCommands(cmd, a)
	cmd.AddCommand(newExtSummaryCmd(a))
	return cmd
}
