package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/extension"
)

func newExtNewCmd(a *app) *cobra.Command {
	var names []string
	for _, t := range extension.Templates() {
		names = append(names, t.Name)
	}
	for k := range extension.TemplateAliases() {
		names = append(names, k)
	}
	slices.Sort(names)
	cmd := &cobra.Command{
		Use:   "new <folder> [template]",
		Short: "Create a new extension from a template",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return names, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		Long: func() string {
			var b strings.Builder
			b.WriteString("Create a new extension in <folder>, named after the folder. Templates:\n\n")
			for _, t := range extension.Templates() {
				fmt.Fprintf(&b, "  %-9s %s\n", t.Name, t.Description)
			}
			b.WriteString("\nThe default is " + extension.DefaultTemplate + ". Every template passes `gemkit extensions validate`.")
			aliases := extension.TemplateAliases()
			for _, k := range slices.Sorted(maps.Keys(aliases)) {
				fmt.Fprintf(&b, "\nGemini CLI's %s is %s here.", k, aliases[k])
			}
			return b.String()
		}(),
		Args: argsUsage(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			tmpl := ""
			if len(args) == 2 {
				tmpl = args[1]
			}
			files, err := extension.CreateFromTemplate(args[0], tmpl)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "Created %s:\n", args[0])
			for _, f := range files {
				fmt.Fprintf(a.Out, "  %s\n", f)
			}
			fmt.Fprintf(a.Out, "Check it with `gemkit extensions validate %s`; try it with `gemkit extensions link %s`.\n", args[0], args[0])
			return nil
		},
	}
	return cmd
}

func newExtValidateCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate <folder>",
		Short: "Check an extension folder and list every problem with its fix",
		Args:  argsUsage(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, _ := cmd.Flags().GetString("workspace")
			ext, err := extension.LoadWith(args[0], extension.LoadOptions{WorkspacePath: ws})
			var ve *extension.ValidationError
			if err != nil && !errors.As(err, &ve) {
				if asJSON {
					writeJSON(a.Out, map[string]any{"valid": false, "error": err.Error(), "problems": []extension.Problem{}})
				}
				return err
			}
			// Every problem, warnings too: a publisher fixes them all.
			probs := append([]extension.Problem{}, ext.Problems...)
			probs = append(probs, ext.MissingContextFiles()...)
			probs = append(probs, installedConflicts(cmd, ext)...)
			if asJSON {
				if err := writeJSON(a.Out, map[string]any{"valid": len(probs) == 0, "name": ext.Manifest.Name, "manifest": ext.ManifestPath(), "problems": probs}); err != nil {
					return err
				}
			} else if out := (printableWriter{a.Out}); len(probs) == 0 {
				fmt.Fprintf(out, "%s is valid: %s %s\n", ext.ManifestPath(), ext.Manifest.Name, ext.Manifest.Version)
			} else {
				fmt.Fprintf(out, "%s has %d problem(s):\n", ext.ManifestPath(), len(probs))
				for _, p := range probs {
					where := p.Path
					if where == "" {
						where = "(manifest)"
					}
					fmt.Fprintf(out, "  %s: %s\n      fix: %s\n      %s\n", where, p.Message, p.Fix, p.Effect.Words())
				}
			}
			if len(probs) > 0 {
				return withExitCode(ExitNo, nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// installedConflicts returns, when dir is an installed extension (its
// entry or a linked folder), a problem for each other installed extension
// of the same name: Gemini CLI fails while both are there.
func installedConflicts(cmd *cobra.Command, ext *extension.Extension) []extension.Problem {
	all := listInstalled(cmd)
	var entry string
	for _, in := range all {
		if in.Extension != nil && in.Extension.Dir == ext.Dir {
			entry = in.Entry
		}
	}
	if entry == "" {
		return nil
	}
	var out []extension.Problem
	for _, c := range extension.ConflictsOf(extension.Conflicts(all), entry) {
		if c.Fatal {
			out = append(out, extension.Problem{Path: "name", Message: c.Message, Fix: c.Fix, Effect: extension.EffectRefused})
		}
	}
	return out
}
