package extswitch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// Where a part of an extension that runs code runs (CodePart.Where).
const (
	WhereGemkit     = "gemkit's sandbox"
	WhereToolBox    = "Gemini CLI's tool sandbox"
	WhereUnconfined = "unconfined"
	WhereOff        = "off"
)

// CodePart is one part of an extension that runs code on this computer,
// where it runs, and how to change that, as list, describe and doctor
// show it.
type CodePart struct {
	// Kind is "server", "agent server", "hook", "command" (a custom
	// command's !{...} shell) or "skill script".
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Where is WhereGemkit, WhereToolBox, WhereUnconfined or WhereOff
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

// CodeParts are the parts of in that run code, given the person's
// choice c and the host's settings gs.
func (s *Switch) CodeParts(in *extension.Installed, c extension.ServerChoice, gs Settings) []CodePart {
	if in.Extension == nil {
		return nil
	}
	ext := in.Extension
	m := ext.Manifest
	name := m.Name
	on, off := "gemkit extensions sandbox "+name, "gemkit extensions sandbox "+name+" --off"
	server := func(kind, n string) CodePart {
		p := CodePart{Kind: kind, Name: n}
		excluded := slices.Contains(gs.Excluded, shortName(n))
		switch {
		case c.Switched && excluded:
			p.Where, p.Why, p.Change = WhereGemkit, "switched to gemkit mcp, not started by Gemini CLI", off
		case c.Switched:
			p.Where, p.Why, p.Change = WhereUnconfined, "switched, but mcp.excluded lacks "+shortName(n)+": Gemini CLI starts it too", on
		case excluded:
			p.Where, p.Why, p.Change = WhereOff, "your mcp.excluded names it; gemkit does not serve it either", on
		default:
			p.Where, p.Why, p.Change = WhereUnconfined, "Gemini CLI starts it with your rights and environment", on
		}
		return p
	}
	var out []CodePart
	for _, n := range extension.SandboxedServers(m) {
		out = append(out, server("server", n))
	}
	cs := ext.CodeSources(s.Store.Workspace())
	for _, a := range cs.Agents {
		if extension.SandboxedServer(a.Def) {
			out = append(out, server("agent server", a.Agent+"/"+a.Server))
		}
	}
	if cs.HooksErr == nil {
		for _, h := range cs.Hooks {
			out = append(out, s.hookPart(ext, h, c, gs, on, off))
		}
	}
	tool := func(kind, n string) CodePart {
		if gs.ToolSandboxing {
			return CodePart{Kind: kind, Name: n, Where: WhereToolBox, Why: "security.toolSandboxing is on"}
		}
		return CodePart{Kind: kind, Name: n, Where: WhereUnconfined, Why: "Gemini CLI's shell tool runs it, once allowed, with your rights", Change: toolSandboxChange}
	}
	for _, cmd := range cs.ShellCommands {
		out = append(out, tool("command", cmd+" (its !{...} shell)"))
	}
	for _, sc := range cs.SkillScripts {
		out = append(out, tool("skill script", sc))
	}
	return append(out, policyParts(ext.Policies())...)
}

// hookPart is where the hook h of ext runs, given the person's choice c
// and the host's settings gs; on and off are the commands that switch
// the extension.
func (s *Switch) hookPart(ext *extension.Extension, h extension.CommandHook, c extension.ServerChoice, gs Settings, on, off string) CodePart {
	p := CodePart{Kind: "hook", Name: h.Label, Change: on}
	key, why := s.Host.HookKey(ext, h)
	i := slices.IndexFunc(c.Hooks, func(s extension.SwitchedHook) bool { return s.Label == h.Label })
	switch {
	case c.Switched && i >= 0 && c.Hooks[i].Command == "":
		p.Where, p.Why, p.Change = WhereOff, "your hooksConfig.disabled turned it off before the switch", ""
	case c.Switched && i >= 0 && !slices.Contains(gs.Disabled, c.Hooks[i].Key):
		p.Where, p.Why = WhereUnconfined, "switched, but hooksConfig.disabled lacks it: Gemini CLI runs it too"
	case c.Switched && i >= 0 && !slices.ContainsFunc(gs.Hooks, func(g HostHook) bool { return g.Command == c.Hooks[i].Command }):
		p.Where, p.Why = WhereOff, "switched, but gemkit's hook for it is gone from Gemini CLI's settings: nobody runs it"
	case c.Switched && i >= 0:
		p.Where, p.Why, p.Change = WhereGemkit, "run by gemkit's hook, in folders Gemini CLI trusts (it runs no hook of its settings elsewhere)", off
	case key != "" && slices.Contains(gs.Disabled, key):
		p.Where, p.Why = WhereOff, "your hooksConfig.disabled turns it off"
	case key == "":
		p.Where, p.Why, p.Change = WhereUnconfined, "Gemini CLI runs it through your shell; the switch cannot take it: "+why, "ask its author to give it a name"
	default:
		p.Where, p.Why = WhereUnconfined, "Gemini CLI runs it through your shell, with your rights and environment (its tool sandbox never applies to hooks)"
	}
	return p
}

// shortName is the server's own name of a part's name (agent/server).
func shortName(n string) string {
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		return n[i+1:]
	}
	return n
}

// PartWords is p in words, on one line.
func PartWords(p CodePart) string {
	s := fmt.Sprintf("%s %s: %s", p.Kind, p.Name, p.Where)
	if p.Why != "" {
		s += " (" + p.Why + ")"
	}
	if p.Change != "" {
		s += "; to change: " + p.Change
	}
	return s
}

// PartFindings are doctor's notes on the parts of in that run
// unconfined or not at all though it is switched.
func PartFindings(name string, c extension.ServerChoice, parts []CodePart) []Finding {
	var fs []Finding
	for _, p := range parts {
		if p.Kind == "server" {
			continue // ServerFindings
		}
		switch {
		case p.Where == WhereUnconfined && c.Switched && (p.Kind == "hook" || p.Kind == "agent server"):
			fs = append(fs, Finding{Level: "warning", Extension: name, Message: "switched to gemkit, but its " + PartWords(p)})
		case p.Where == WhereOff && c.Switched && p.Kind == "hook" && p.Change != "":
			fs = append(fs, Finding{Level: "warning", Extension: name, Message: "switched to gemkit, but its " + PartWords(p), Fix: "`gemkit extensions sandbox " + name + "` adds it again"})
		case p.Where == WhereUnconfined && !c.Switched && p.Kind == "hook":
			fs = append(fs, Finding{Level: "note", Extension: name, Message: "its " + PartWords(p)})
		case p.Where == WhereUnconfined && c.Switched:
			fs = append(fs, Finding{Level: "note", Extension: name, Message: "its " + PartWords(p)})
		}
	}
	return fs
}
