package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

func newExtEnableCmd(a *app, enable bool) *cobra.Command {
	verb := "enable"
	if !enable {
		verb = "disable"
	}
	var scope string
	cmd := &cobra.Command{
		Use:               verb + " <name>",
		ValidArgsFunction: completeExtension,
		Short:             strings.ToUpper(verb[:1]) + verb[1:] + " an extension for the user or in this workspace",
		Long: fmt.Sprintf(`%s an extension. --scope user applies to your home folder and everything
under it; --scope workspace applies to the workspace folder and below, and
overrides the user choice there. The rules live in Gemini CLI's
~/.gemini/extensions/extension-enablement.json, so Gemini CLI follows them too.`, strings.ToUpper(verb[:1])+verb[1:]),
		Args: argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := extension.ParseScope(scope)
			if err != nil {
				return err
			}
			// The rules are kept under the manifest's name, which the
			// argument may match only case-insensitively.
			st, in, err := openInstalled(cmd, args[0])
			if err != nil {
				return err
			}
			name := in.Name
			if m := in.Manifest(); m != nil {
				name = m.Name
			}
			if enable {
				err = st.Enable(name, sc)
			} else {
				err = st.Disable(name, sc)
			}
			if err != nil {
				return err
			}
			e, err := st.Enablement(name)
			if err != nil {
				return err
			}
			where := "for the user"
			if sc == extension.ScopeWorkspace {
				where = "in " + st.Workspace()
			}
			fmt.Fprintf(a.Out, "%sd %s %s (now: user %s, workspace %s)\n", strings.ToUpper(verb[:1])+verb[1:], name, where, yesNo(e.User), yesNo(e.Workspace))
			if sc == extension.ScopeUser && !fsutil.Within(st.Home(), st.Workspace()) {
				fmt.Fprintf(a.Err, "Note: the user scope covers %s and the folders under it, as in Gemini CLI; the workspace %s is outside it, so use --scope workspace there.\n", st.Home(), st.Workspace())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scope, "scope", string(extension.ScopeUser), "user or workspace")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}
