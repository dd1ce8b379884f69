package cli

import "github.com/spf13/cobra"

// newIDECmd is the group of IDE-mode commands: the companion (serve) and the
// client side (status, doctor, watch, diff, check).
func newIDECmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ide",
		Short: "Run an IDE companion, or talk to one",
	}
	addIDEServeCommands(cmd, a)
	addIDEClientCommands(cmd, a)
	return cmd
}
