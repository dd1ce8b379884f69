package cli

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
	"github.com/gemkit/gemkit/internal/extview"
)

// finding is one line of `extensions doctor`: the switch's findings
// and the rest alike.
type finding = extswitch.Finding

// newExtDoctorCmd checks the installed extensions for what would make
// Gemini CLI fail, warn or drop something, as `gemkit ide doctor` does
// for the IDE connection. `list` prints the errors too; doctor adds the
// warnings and notes.
func newExtDoctorCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the installed extensions for what breaks or confuses Gemini CLI",
		Long: `Check the installed extensions for what Gemini CLI fails on (two extensions of
one name), skips (extensions it cannot load), drops (a second MCP server of one
name) or cannot do (update a --path install), settings without a value, and
where each part of an extension that runs code runs (its MCP servers, its
agents' servers, its hooks, its custom commands' !{...} shell, its skills'
scripts: unconfined in Gemini CLI, in Gemini CLI's tool sandbox
(security.toolSandboxing), or in gemkit's sandbox once switched), the
switches' whole picture (every name of mcp.excluded and every hook of
hooksConfig.disabled a switched extension needs is there, gemkit's records
name no extension that is gone, no other hook shares a name gemkit turned
off), and where each extension's MCP servers run: unconfined in Gemini CLI, or in gemkit's
sandbox once switched (gemkit extensions sandbox NAME), and what that sandbox
refused them lately, with the command that allows it.
Leftovers of killed installs are removed first, as by every command. Exits 1
when Gemini CLI would fail.`,
		Args: argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			sw := a.switcher(st)
			all, err := st.List()
			if err != nil {
				return err
			}
			fs, conflicts := extview.Doctor(sw, all)
			if asJSON {
				if fs == nil {
					fs = []finding{}
				}
				if err := writeJSON(a.Out, map[string]any{"extensionsDir": st.Dir(), "installed": len(all), "findings": fs}); err != nil {
					return err
				}
				return doctorExit(conflicts, fs)
			}
			out := bufio.NewWriter(a.Out)
			w := printableWriter{out}
			fmt.Fprintf(w, "%d extension(s) in %s\n", len(all), st.Dir())
			for _, f := range fs {
				name := ""
				if f.Extension != "" {
					name = f.Extension + ": "
				}
				fmt.Fprintf(w, "%s: %s%s\n", f.Level, name, f.Message)
				if f.Fix != "" {
					fmt.Fprintf(w, "    fix: %s\n", f.Fix)
				}
			}
			if len(fs) == 0 {
				fmt.Fprintln(w, "No problems found.")
			}
			if err := out.Flush(); err != nil {
				return err
			}
			return doctorExit(conflicts, fs)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return cmd
}

// doctorExit is doctor's exit: 1 when Gemini CLI would fail, on a
// conflict or on another finding of that level (a policy file that
// breaks it).
func doctorExit(conflicts []extension.Conflict, fs []finding) error {
	if err := errConflicts(conflicts); err != nil {
		return err
	}
	for _, f := range fs {
		if f.Level == "error" {
			return withExitCode(ExitNo, nil)
		}
	}
	return nil
}
