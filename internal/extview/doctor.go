package extview

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// finding is one line of `extensions doctor`: the switch's findings
// and the rest alike.
type finding = extswitch.Finding

// Doctor is what `gemkit extensions doctor` finds in all, the installed
// extensions of sw's store, each finding with its fix: what Gemini CLI
// fails on (conflicts, returned apart for the exit), skips, drops or
// cannot do, where each part that runs code runs, the switches' whole
// picture, and what the sandbox refused lately. A switched extension
// whose files changed is held first.
func Doctor(sw *extswitch.Switch, all []*extension.Installed) (fs []finding, conflicts []extension.Conflict) {
	st := sw.Store
	conflicts = extension.Conflicts(all)
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
	// A switched extension whose files changed is held first: the hold
	// changes Gemini CLI's settings (mcp.excluded, the extension
	// disabled), which every finding below reads, so none tells of the
	// settings as they were before it (a tour's finding: a warning and
	// its fix out of date in the run that made them so).
	holdErrs := map[string]error{}
	for _, in := range all {
		if _, err := sw.HoldIfChanged(in, choices); err != nil {
			holdErrs[in.Name] = err
		}
	}
	// What Gemini CLI's settings say (mcp.excluded, hooksConfig.disabled,
	// gemkit mcp's entry) is not guessed at when the file cannot be
	// read: a finding drawn from nothing, with a fix that fails on the
	// same file, would be false.
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
	return fs, conflicts
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
			Message: Stopping(ve.Problems),
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
	if _, note := Updaters(in.Metadata); note != "" {
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

// refusalFindings are doctor's notes on what the sandbox refused an
// extension's servers lately: one per start of a server, each host
// once, with one command for what it likely needs.
func refusalFindings(name string, rps []extmcp.Report) []finding {
	var fs []finding
	for _, rp := range rps {
		lines := rp.Lines()
		fix := rp.Allow()
		if fix != "" {
			fix = "`" + fix + "` allows what it likely needs (what servers do in the background left out)"
		}
		fs = append(fs, finding{Level: "note", Extension: name, Message: strings.Join(lines, "\n      - "), Fix: fix})
	}
	return fs
}

// Stopping says what the problems of a manifest stop, with how many
// there are; "" when they stop nothing (warnings only).
func Stopping(probs []extension.Problem) string {
	count := map[extension.Effect]int{}
	for _, p := range probs {
		count[p.Effect]++
	}
	switch {
	case count[extension.EffectRefused] > 0:
		return fmt.Sprintf("Gemini CLI refuses its manifest too, and both leave it out (%d problem(s))", count[extension.EffectRefused])
	case count[extension.EffectTools] > 0:
		return fmt.Sprintf("gemkit does not run its own tools: %d problem(s) in the manifest's fields only gemkit reads", count[extension.EffectTools])
	}
	return ""
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
