package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// Where a part of an extension that runs code runs (codePart.Where).
const (
	whereGemkit     = "gemkit's sandbox"
	whereToolBox    = "Gemini CLI's tool sandbox"
	whereUnconfined = "unconfined"
	whereOff        = "off"
)

// codePart is one part of an extension that runs code on this computer,
// where it runs, and how to change that, as list, describe and doctor
// show it.
type codePart struct {
	// Kind is "server", "agent server", "hook", "command" (a custom
	// command's !{...} shell) or "skill script".
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Where is whereGemkit, whereToolBox, whereUnconfined or whereOff
	// (neither Gemini CLI nor gemkit runs it).
	Where string `json:"where"`
	// Why says more of Where, "" when nothing.
	Why string `json:"why,omitempty"`
	// Change is what changes it: a command, or a setting.
	Change string `json:"change,omitempty"`
}

// toolSandboxChange is how a person has Gemini CLI run its shell tool's
// commands in its own sandbox.
const toolSandboxChange = `set "security": {"toolSandboxing": true} in ~/.gemini/settings.json (Gemini CLI's own sandbox for its shell tool)`

// codeParts are the parts of in that run code, given the person's
// choice c and Gemini CLI's user settings gs.
func codeParts(st *extension.Store, in *extension.Installed, c extension.ServerChoice, gs geminisettings.Settings) []codePart {
	if in.Extension == nil {
		return nil
	}
	ext := in.Extension
	m := ext.Manifest
	name := m.Name
	on, off := "gemkit extensions sandbox "+name, "gemkit extensions sandbox "+name+" --off"
	server := func(kind, n string, def []byte) codePart {
		p := codePart{Kind: kind, Name: n}
		excluded := slices.Contains(gs.Excluded, shortName(n))
		switch {
		case c.Switched && excluded:
			p.Where, p.Why, p.Change = whereGemkit, "switched to gemkit mcp, not started by Gemini CLI", off
		case c.Switched:
			p.Where, p.Why, p.Change = whereUnconfined, "switched, but mcp.excluded lacks "+shortName(n)+": Gemini CLI starts it too", on
		case excluded:
			p.Where, p.Why, p.Change = whereOff, "your mcp.excluded names it; gemkit does not serve it either", on
		default:
			p.Where, p.Why, p.Change = whereUnconfined, "Gemini CLI starts it with your rights and environment", on
		}
		return p
	}
	var out []codePart
	for _, n := range extension.SandboxedServers(m) {
		out = append(out, server("server", n, m.MCPServers[n]))
	}
	cs := ext.CodeSources(st.Workspace())
	for _, a := range cs.Agents {
		if extension.SandboxedServer(a.Def) {
			out = append(out, server("agent server", a.Agent+"/"+a.Server, a.Def))
		}
	}
	if cs.HooksErr == nil {
		for _, h := range cs.Hooks {
			p := codePart{Kind: "hook", Name: h.Label, Change: on}
			key, why := h.DisableKey(ext.Dir, m.Settings)
			i := slices.IndexFunc(c.Hooks, func(s extension.SwitchedHook) bool { return s.Label == h.Label })
			switch {
			case c.Switched && i >= 0 && c.Hooks[i].Command == "":
				p.Where, p.Why, p.Change = whereOff, "your hooksConfig.disabled turned it off before the switch", ""
			case c.Switched && i >= 0 && !slices.Contains(gs.Disabled, c.Hooks[i].Key):
				p.Where, p.Why = whereUnconfined, "switched, but hooksConfig.disabled lacks it: Gemini CLI runs it too"
			case c.Switched && i >= 0 && !slices.ContainsFunc(gs.Hooks, func(g geminisettings.Hook) bool { return g.Command == c.Hooks[i].Command }):
				p.Where, p.Why = whereOff, "switched, but gemkit's hook for it is gone from Gemini CLI's settings: nobody runs it"
			case c.Switched && i >= 0:
				p.Where, p.Why, p.Change = whereGemkit, "run by gemkit's hook, in folders Gemini CLI trusts (it runs no hook of its settings elsewhere)", off
			case key != "" && slices.Contains(gs.Disabled, key):
				p.Where, p.Why = whereOff, "your hooksConfig.disabled turns it off"
			case key == "":
				p.Where, p.Why, p.Change = whereUnconfined, "Gemini CLI runs it through your shell; the switch cannot take it: "+why, "ask its author to give it a name"
			default:
				p.Where, p.Why = whereUnconfined, "Gemini CLI runs it through your shell, with your rights and environment (its tool sandbox never applies to hooks)"
			}
			out = append(out, p)
		}
	}
	tool := func(kind, n string) codePart {
		if gs.ToolSandboxing {
			return codePart{Kind: kind, Name: n, Where: whereToolBox, Why: "security.toolSandboxing is on"}
		}
		return codePart{Kind: kind, Name: n, Where: whereUnconfined, Why: "Gemini CLI's shell tool runs it, once allowed, with your rights", Change: toolSandboxChange}
	}
	for _, cmd := range cs.ShellCommands {
		out = append(out, tool("command", cmd+" (its !{...} shell)"))
	}
	for _, s := range cs.SkillScripts {
		out = append(out, tool("skill script", s))
	}
	return append(out, policyParts(ext.Policies())...)
}

// shortName is the server's own name of a part's name (agent/server).
func shortName(n string) string {
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		return n[i+1:]
	}
	return n
}

// partWords is p in words, on one line.
func partWords(p codePart) string {
	s := fmt.Sprintf("%s %s: %s", p.Kind, p.Name, p.Where)
	if p.Why != "" {
		s += " (" + p.Why + ")"
	}
	if p.Change != "" {
		s += "; to change: " + p.Change
	}
	return s
}

// writeCodeParts writes describe's section on where the extension's
// code runs.
func writeCodeParts(w io.Writer, parts []codePart) {
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere its code runs\n")
	for _, p := range parts {
		fmt.Fprintf(w, "  %s\n", partWords(p))
	}
}

// partSummary is list's line of where an extension's code runs, ""
// when it has no part that runs code beside its servers (which
// writeServerNotes tells) or all of it is in a sandbox.
func partSummary(parts []codePart) string {
	var out []string
	for _, p := range parts {
		if p.Kind == "server" {
			continue
		}
		w := p.Where
		if p.Change != "" && p.Where != whereGemkit {
			w += ", to change: " + p.Change
		}
		out = append(out, p.Kind+" "+p.Name+": "+w)
	}
	return strings.Join(out, "; ")
}

// partFindings are doctor's notes on the parts of in that run
// unconfined or not at all though it is switched.
func partFindings(name string, c extension.ServerChoice, parts []codePart) []finding {
	var fs []finding
	for _, p := range parts {
		if p.Kind == "server" {
			continue // serverFindings
		}
		switch {
		case p.Where == whereUnconfined && c.Switched && (p.Kind == "hook" || p.Kind == "agent server"):
			fs = append(fs, finding{Level: "warning", Extension: name, Message: "switched to gemkit, but its " + partWords(p)})
		case p.Where == whereOff && c.Switched && p.Kind == "hook" && p.Change != "":
			fs = append(fs, finding{Level: "warning", Extension: name, Message: "switched to gemkit, but its " + partWords(p), Fix: "`gemkit extensions sandbox " + name + "` adds it again"})
		case p.Where == whereUnconfined && !c.Switched && p.Kind == "hook":
			fs = append(fs, finding{Level: "note", Extension: name, Message: "its " + partWords(p)})
		case p.Where == whereUnconfined && c.Switched:
			fs = append(fs, finding{Level: "note", Extension: name, Message: "its " + partWords(p)})
		}
	}
	return fs
}

// switchFindings are doctor's findings on the whole picture of the
// switches: gemkit's records beside Gemini CLI's settings.
func switchFindings(st *extension.Store, all []*extension.Installed, gs geminisettings.Settings) []finding {
	sw, err := st.Switches()
	if err != nil {
		return []finding{{Level: "warning", Message: "the switches' records cannot be read: " + err.Error()}}
	}
	installed := map[string]bool{}
	for _, in := range all {
		if m := in.Manifest(); m != nil {
			installed[m.Name] = true
		}
	}
	fs := orphanFindings(st, all)
	for _, n := range slices.Sorted(maps.Keys(sw.Names)) {
		o := sw.Names[n]
		var gone []string
		for _, ext := range o.Needs {
			// One not installed is an orphan, which orphanFindings tells
			// with the fix that works for it.
			if installed[ext] && !sw.Choices[ext].Switched {
				gone = append(gone, ext)
			}
		}
		if len(gone) > 0 {
			fs = append(fs, finding{Level: "warning", Message: fmt.Sprintf("gemkit's records say %s need %s in mcp.excluded, but %s not switched any more", strings.Join(gone, ", "), n, isAre(len(gone))),
				Fix: "`gemkit extensions sandbox NAME --off` for each, or switch it again"})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sw.Disabled)) {
		if o := sw.Disabled[k]; !o.Yours && len(o.Needs) > 0 && !slices.Contains(gs.Disabled, k) {
			fs = append(fs, finding{Level: "warning", Message: fmt.Sprintf("hooksConfig.disabled lacks %q, which the switched %s need: Gemini CLI runs that hook itself, unconfined, beside gemkit's", k, strings.Join(o.Needs, ", ")),
				Fix: "`gemkit extensions sandbox " + o.Needs[0] + "` adds it again"})
		}
	}
	// A gemkit hook whose program is gone runs nothing.
	for _, h := range gs.Hooks {
		if !isGemkitHook(h.Command) {
			continue
		}
		if bin := strings.Trim(strings.Fields(h.Command)[0], "'"); strings.HasPrefix(bin, "/") {
			if _, err := os.Stat(bin); err != nil {
				fs = append(fs, finding{Level: "warning", Message: fmt.Sprintf("gemkit's %s hook %s starts %s, which is gone: the hook it stands for runs nowhere", h.Event, h.Name, bin),
					Fix: "switch its extension again with the gemkit you use now: `gemkit extensions sandbox NAME`"})
			}
		}
	}
	// A hook that turns up later under a string gemkit turned off.
	for name, c := range sw.Choices {
		if !c.Switched {
			continue
		}
		in, err := st.Get(name)
		if err != nil || in.Extension == nil {
			continue
		}
		parts, err := partsOf(&app{}, st, in.Extension)
		if err != nil {
			continue
		}
		parts.Hooks = slices.DeleteFunc(parts.Hooks, func(h switchHook) bool {
			return !slices.ContainsFunc(c.Hooks, func(s extension.SwitchedHook) bool { return s.Key == h.Key })
		})
		for _, clash := range hookClashes(st, name, parts, gs, sw) {
			fs = append(fs, finding{Level: "warning", Extension: name, Message: clash + " (hooksConfig.disabled turns it off now)",
				Fix: "rename that hook, or switch its extension too"})
		}
	}
	return fs
}

func isAre(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}
