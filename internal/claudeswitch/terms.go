package claudeswitch

import (
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// Terms is what the person agrees to when a plugin is switched, in
// Claude Code's words: the twin's consent binds the same bytes as an
// extension's, but the extension switch's text names Gemini CLI, its
// events and its variables, which a Claude Code user would misread.
type Terms struct {
	// Lines are the terms, a line each.
	Lines []string
	// Fetches says what Claude Code does with a package-runner server,
	// beside the pinned packages' lines.
	Fetches string
}

// hookWords say what a switched plugin's hook can do in gemkit's sandbox:
// the hook profile, with what gemkit's hook runner gives a Claude Code
// hook (`gemkit extensions hook --agent claude`).
const hookWords = "read your workspace, the plugin's copy and your system's programs; write nothing but a private temporary folder that goes with the run (its HOME and CLAUDE_PLUGIN_DATA); no network; of your environment only PATH, your user name, the locale and the terminal, with CLAUDE_PROJECT_DIR and CLAUDE_PLUGIN_ROOT (the copy); its input passes as Claude Code gave it, and its answer reaches Claude Code only as far as it blocks, asks or speaks: never a changed tool call or a permission granted"

// ClaudeFetches is what Claude Code does with a package-runner server
// of a plugin, said beside what gemkit does.
const ClaudeFetches = "Claude Code, with the same plugin, runs the runner itself at each start: it fetches the package from the registry (for a bare name or @latest, the newest) with your rights and runs whatever it got, which nobody agreed to."

// termsOf are the terms of switching p, converted into t and prepared
// as prep.
func termsOf(p *claudeplugin.Plugin, t *Twin, prep *extswitch.Prepared) Terms {
	id := extension.Printable(p.ID)
	lines := []string{fmt.Sprintf("Switching the Claude Code plugin %s%s to gemkit's sandbox, as a copy of %s (its twin %s).",
		id, versionWords(p.Version), extension.Printable(p.Root), t.Name)}
	if d := prep.Ext.Manifest.Description; d != "" {
		lines = append(lines, "  "+extension.Printable(d))
	}
	if len(p.Servers) > 0 {
		lines = append(lines, "", "MCP servers it will run:")
		for _, s := range p.Servers {
			where := "Claude Code no longer starts it; gemkit mcp runs it in gemkit's sandbox, where it can " + extension.ServerProfileWordsOf(prep.Ext.Manifest, prep.W)
			if s.Command == "" {
				where = "Claude Code no longer connects to it; gemkit mcp does, from your computer, sending only what the plugin's entry names: it runs elsewhere, so it is not sandboxed"
			}
			lines = append(lines, fmt.Sprintf("  - %s (%s): %s", extension.Printable(s.Name), commandWords(s), where))
		}
	}
	if hs := prep.Parts.Hooks; len(hs) > 0 {
		lines = append(lines, "", "Hooks it runs, on Claude Code's events:")
		for _, h := range hs {
			on := ""
			if h.Matcher != "" {
				on = ", matching " + h.Matcher
			}
			lines = append(lines, extension.Printable(fmt.Sprintf("  - %s (%s%s): Claude Code no longer runs it itself; gemkit runs it in its sandbox, where it can %s",
				h.Label, h.Command, on, hookWords)))
		}
	}
	for _, part := range []struct {
		what string
		ss   []claudeplugin.Server
	}{{"LSP servers", p.LSP}, {"Monitors", p.Monitors}} {
		if len(part.ss) == 0 {
			continue
		}
		lines = append(lines, "", part.what+" it runs:")
		for _, s := range part.ss {
			lines = append(lines, fmt.Sprintf("  - %s (%s): gemkit runs it in its sandbox (gemkit plugins part), where it can %s",
				extension.Printable(s.Name), commandWords(s), extension.ServerProfileWordsOf(prep.Ext.Manifest, prep.W)))
		}
	}
	if kept := keptWords(p); kept != "" {
		lines = append(lines, "", "Claude Code keeps, as they are now: "+kept+".")
	}
	lines = append(lines, "", "Plugins may come from third parties and nobody has vetted this one.")
	return Terms{Lines: lines, Fetches: ClaudeFetches}
}

func versionWords(v string) string {
	if v == "" {
		return ""
	}
	return " version " + extension.Printable(v)
}

// commandWords is a server's command line as the plugin writes it, or
// its URL.
func commandWords(s claudeplugin.Server) string {
	if s.Command == "" {
		return "remote: " + extension.Printable(s.URL)
	}
	return extension.Printable(strings.Join(append([]string{s.Command}, s.Args...), " "))
}

// keptWords name the plugin's skills, agents and commands.
func keptWords(p *claudeplugin.Plugin) string {
	var out []string
	for _, k := range []struct {
		what  string
		names []string
	}{{"skills", p.Skills}, {"agents", p.Agents}, {"commands", p.Commands}} {
		if len(k.names) > 0 {
			out = append(out, "its "+k.what+" "+extension.Printable(strings.Join(k.names, ", ")))
		}
	}
	return strings.Join(out, "; ")
}
