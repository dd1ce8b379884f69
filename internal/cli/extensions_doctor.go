package cli

import (
	"bufio"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
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
			conflicts := extension.Conflicts(all)
			var fs []finding
			for _, c := range conflicts {
				level := "warning"
				if c.Fatal {
					level = "error"
				}
				fs = append(fs, finding{Level: level, Extension: c.Name, Message: c.Message, Fix: c.Fix})
			}
			choices, err := st.ServerChoices()
			if err != nil {
				fs = append(fs, finding{Level: "warning", Message: "where the extensions' MCP servers run cannot be told: " + err.Error()})
			}
			// A switched extension whose files changed is held first:
			// the hold changes Gemini CLI's settings (mcp.excluded, the
			// extension disabled), which every finding below reads, so
			// none tells of the settings as they were before it (a
			// tour's finding: a warning and its fix out of date in the
			// run that made them so).
			holdErrs := map[string]error{}
			for _, in := range all {
				if _, err := sw.HoldIfChanged(in, choices); err != nil {
					holdErrs[in.Name] = err
				}
			}
			// What Gemini CLI's settings say (mcp.excluded,
			// hooksConfig.disabled, gemkit mcp's entry) is not guessed
			// at when the file cannot be read: a finding drawn from
			// nothing, with a fix that fails on the same file, would be
			// false.
			gs, gerr := sw.Host.Read()
			if gerr != nil {
				fs = append(fs, finding{Level: "warning",
					Message: "Gemini CLI's settings cannot be read, so which extensions' servers and hooks are switched to gemkit (mcp.excluded, hooksConfig.disabled), and whether Gemini CLI reaches gemkit mcp, cannot be told until the file is fixed: " + gerr.Error(),
					Fix:     "once the file is fixed, `gemkit extensions doctor` tells the rest"})
			}
			refused := extmcp.RecentRefusals()
			for _, in := range all {
				fs = append(fs, entryFindings(st, in)...)
				if gerr == nil {
					fs = append(fs, sw.ServerFindings(in, choices, gs)...)
					fs = append(fs, extswitch.GemkitNameFinding(in, gs)...)
				}
				fs = append(fs, sw.HoldFindings(in, holdErrs[in.Name])...)
				_, switched := extswitch.SwitchedChoice(in, choices)
				fs = append(fs, extswitch.PolicyFindings(in, switched)...)
				if m := in.Manifest(); m != nil && gerr == nil {
					fs = append(fs, extswitch.PartFindings(m.Name, choices[m.Name], sw.CodeParts(in, choices[m.Name], gs))...)
				}
				fs = append(fs, refusalFindings(in.Name, extmcp.StillRefused(refused[in.Name], extension.ServerGrant(in.Manifest()).Union(choices[in.Name].Widening), choices[in.Name].HookWidening, extmcp.RefusalsSince(st, in)))...)
			}
			if gerr == nil {
				fs = append(fs, sw.SwitchFindings(all, gs)...)
			}
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

// entryFindings are the warnings and notes about one installed
// extension.
func entryFindings(st *extension.Store, in *extension.Installed) []finding {
	var fs []finding
	var ve *extension.ValidationError
	if in.Err != nil && !errors.As(in.Err, &ve) {
		return append(fs, finding{Level: "warning", Extension: in.Name,
			Message: "cannot be read (Gemini CLI skips it too, printing \"Skipping extension in " + in.Entry + "\"): " + firstLine(in.Err.Error()),
			Fix:     "repair it, or remove it with `gemkit extensions uninstall " + in.Name + "`"})
	}
	name := in.Name
	if m := in.Manifest(); m != nil {
		name = m.Name
	}
	if ve != nil {
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: stopping(ve.Problems),
			Fix:     "see `gemkit extensions validate " + in.Extension.Dir + "`"})
	}
	if in.Extension == nil {
		return fs
	}
	fs = append(fs, reservedFindings(in.Extension.Manifest)...)
	for _, p := range in.Extension.MissingContextFiles() {
		fs = append(fs, finding{Level: "note", Extension: name, Message: p.Path + ": " + p.Message, Fix: p.Fix})
	}
	if _, err := in.Extension.CommandHooks(); agentread.IsUnreadable(err) {
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "gemkit cannot read hooks/hooks.json exactly as Gemini CLI does (" + agentread.Why(err) + "): Gemini CLI may run hooks from it that gemkit does not see, so gemkit holds the extension in Gemini CLI once it is switched",
			Fix:     "repair hooks/hooks.json in " + in.Extension.Dir + " (or ask the extension's author to)"})
	} else if err != nil {
		// Gemini CLI loads none of them and tells only its debug log
		// (loadExtensionHooks); validate passes the file, as its does.
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "hooks/hooks.json cannot be read (" + strings.TrimPrefix(firstLine(err.Error()), "hooks/hooks.json: ") + "): Gemini CLI runs none of its hooks, saying so only in its debug log, and gemkit switches none",
			Fix:     "repair hooks/hooks.json in " + in.Extension.Dir + "; `gemkit extensions describe " + name + "` lists its hooks once it can be read"})
	}
	for _, d := range in.Extension.DiscardedHooks() {
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "Gemini CLI skips this part of hooks/hooks.json, and gemkit does too: " + d,
			Fix:     "correct it in " + filepath.Join(in.Extension.Dir, "hooks", "hooks.json") + " (events: " + strings.Join(extension.HookEvents, ", ") + "; a hook's type: command)"})
	}
	if _, note := extview.Updaters(in.Metadata); note != "" {
		fs = append(fs, finding{Level: "note", Extension: name, Message: note})
	}
	if ignored := in.IgnoredSettings(); len(ignored) > 0 {
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "the linked folder's .env gives " + strings.Join(ignored, ", ") + " a value that neither Gemini CLI nor gemkit reads: a linked extension's values are in " + filepath.Join(in.UserSettingsDir(), ".env"),
			Fix:     "move them there, or set them with `gemini extensions config " + name + " VAR`"})
	}
	for _, s := range in.Settings(st.Dir(), st.Workspace()) {
		if s.Set != nil && !*s.Set {
			fs = append(fs, finding{Level: "note", Extension: name, Message: "setting " + s.Name + " ($" + s.EnvVar + ") has no value",
				Fix: "set it with `gemini extensions config " + name + " " + s.EnvVar + "`"})
		}
	}
	return fs
}

// reservedFindings are the names of m that gemkit mcp refuses because
// they are gemkit's own (disclosure.ReservedBy): its tools', and, when
// every name under the extension's is one (an extension named code),
// its servers' tools and prompts.
func reservedFindings(m *extension.Manifest) []finding {
	var fs []finding
	fix := "the extension's author can rename it; gemkit's own stays served"
	// A name gemkit reserves by its prefix takes every item of the
	// extension's: whatever a server lists, it is refused.
	if n, owner, ok := disclosure.ReservedItem(m.Name, "any"); ok && len(m.MCPServers) > 0 {
		fs = append(fs, finding{Level: "warning", Extension: m.Name,
			Message: "every tool and prompt of its MCP servers would be served by gemkit mcp under a name like " + n + ", a name of " + owner + ": none of them is served", Fix: fix})
	}
	for _, t := range m.Tools {
		if n, owner, ok := disclosure.ReservedItem(m.Name, t.Name); ok {
			fs = append(fs, finding{Level: "warning", Extension: m.Name,
				Message: "its tool " + t.Name + " would be served as " + n + ", a name of " + owner + ": it is not served", Fix: fix})
		}
	}
	return fs
}
