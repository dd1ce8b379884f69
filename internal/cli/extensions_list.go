package cli

import (
	"bufio"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extview"
)

// errConflicts is the exit status of list and describe
// when Gemini CLI would fail on what they found (two extensions of one
// name): 1, as `gemini extensions list` exits then.
func errConflicts(cs []extension.Conflict) error {
	for _, c := range cs {
		if c.Fatal {
			return withExitCode(ExitNo, nil)
		}
	}
	return nil
}

// writeConflicts prints each conflict with its fix.
func writeConflicts(w io.Writer, cs []extension.Conflict) {
	for _, c := range cs {
		word := "warning"
		if c.Fatal {
			word = "error"
		}
		fmt.Fprintf(w, "! %s: %s\n    fix: %s\n", word, c.Message, c.Fix)
	}
}

func newExtListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List installed extensions",
		Args:    argsUsage(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Loading every manifest allocates a few MB (about 13 KB
			// per extension) that all stay live until the list is
			// printed, so the collector's work at the default
			// GOGC=100 is wasted: the process exits right after. A
			// larger target skips it (a fifth of the command's time
			// with 200 extensions) and still bounds the heap at 5x
			// what is live. Only the gemkit process itself (Main) may
			// do this; callers of Run, such as tests, go on after.
			if a.setGCPercent != nil {
				defer a.setGCPercent(a.setGCPercent(400))
			}
			st, err := openStore(cmd)
			if err != nil {
				return err
			}
			st = withWritable(a, st)
			all, err := st.List()
			if err != nil {
				return err
			}
			enabled, err := st.Enablements()
			if err != nil {
				fmt.Fprintf(a.Err, "gemkit: %v\n", err)
			}
			ens := extview.Enablements(all, enabled)
			// The text list shows a row of each extension; --json
			// shows everything (extview.List).
			items, conflicts, err := extview.List(a.switcher(st), all, ens, asJSON)
			if err != nil {
				fmt.Fprintf(a.Err, "gemkit: %v\n", err)
			}
			// One write at the end: tabwriter writes each cell on its
			// own, a system call each on an unbuffered stdout.
			out := bufio.NewWriter(a.Out)
			defer out.Flush()
			if asJSON {
				if err := writeJSON(out, items); err != nil {
					return err
				}
				return errConflicts(conflicts)
			}
			if len(items) == 0 {
				fmt.Fprintf(out, "No extensions installed in %s.\n", st.Dir())
				return nil
			}
			writeListTable(out, items, conflicts)
			if err := out.Flush(); err != nil {
				return err
			}
			return errConflicts(conflicts)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// writeListTable writes the text list: a row of each extension, then a
// line on each that cannot be read or has manifest problems, a note on
// each installed from a sub-folder, and the conflicts.
func writeListTable(out io.Writer, items []extview.Item, conflicts []extension.Conflict) {
	tw := tabwriter.NewWriter(printableWriter{out}, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tENABLED\tTOOLS\tMCP\tSOURCE")
	var broken []extview.Item
	for _, it := range items {
		src := "-"
		if it.Source != nil {
			src = it.Source.Type + " " + extension.RedactSource(it.Source.Source)
			if it.Source.Ref != "" {
				src += "@" + it.Source.Ref
			}
			if it.Source.Subdir != "" {
				src += " (" + it.Source.Subdir + ")"
			}
		}
		version := it.Version
		if version == "" {
			version = "?"
		}
		enabled := enabledWord(it.Enabled)
		if it.HeldInGemini != nil {
			enabled = "held (changed)"
			if it.HeldInGemini.Fix != "" {
				enabled = "held"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", it.Name, version, enabled, len(it.Tools), len(it.MCPServers), src)
		if it.Error != "" || extview.Stopping(it.Problems) != "" {
			broken = append(broken, it)
		}
	}
	tw.Flush()
	for _, it := range broken {
		if it.Error != "" {
			fmt.Fprintf(printableWriter{out}, "! %s cannot be read: %s\n", it.Name, firstLine(it.Error))
		} else {
			fmt.Fprintf(printableWriter{out}, "! %s: %s; see `gemkit extensions validate %s`\n", it.Name, extview.Stopping(it.Problems), it.Path)
		}
	}
	for _, it := range items {
		if h := it.HeldInGemini; h != nil && h.Fix != "" {
			fmt.Fprintf(printableWriter{out}, "held: %s: %s; Gemini CLI runs none of it. To end the hold: %s\n", it.Name, h.Why, h.Fix)
		} else if h != nil {
			fmt.Fprintf(printableWriter{out}, "held: %s: %s; Gemini CLI runs none of it, and gemkit mcp none of what changed, until you agree again: `gemkit extensions consent %s --grant`\n", it.Name, h.Why, it.Name)
		}
		if it.Source != nil && it.Source.Subdir != "" {
			fmt.Fprintf(printableWriter{out}, "note: %s: %s\n", it.Name, it.UpdateNote)
		}
	}
	writeServerNotes(printableWriter{out}, items)
	for _, it := range items {
		if words := partSummary(it.CodeParts); words != "" {
			fmt.Fprintf(printableWriter{out}, "code of %s: %s\n", it.Name, words)
		}
	}
	writeConflicts(printableWriter{out}, conflicts)
}

// enabledWord says whether the extension runs in the workspace, noting
// when the user-level choice differs.
func enabledWord(e extension.Enablement) string {
	switch {
	case e.Workspace && e.User:
		return "yes"
	case e.Workspace:
		return "yes (workspace)"
	case e.User:
		return "no (workspace)"
	}
	return "no"
}
