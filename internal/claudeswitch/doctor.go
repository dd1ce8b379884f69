package claudeswitch

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// ListHelp is gemkit plugins's help.
const ListHelp = `Show the plugins installed in Claude Code ($CLAUDE_CONFIG_DIR, else
~/.claude), read as Claude Code 2.1.330 reads them: each plugin's
marketplace, version, the scopes that enable it (user settings, the
project's .claude/settings.json and settings.local.json), and its parts:
MCP servers, hooks, LSP servers, monitors, skills, agents and commands.

Each part runs unconfined in Claude Code's process tree, or once switched
(plugins sandbox) in gemkit's sandbox, or held when the plugin changed;
doctor checks that each switched plugin still is.`

// Finding is one thing doctor found wrong with a switched plugin, and
// what ends it.
type Finding struct {
	ID, Problem, Fix string
}

// Doctor checks each switched plugin, as read with the project's
// settings: held (its files changed), or Claude Code's settings no
// longer as the switch left them (the plugin enabled again, here or in
// the project; its twin or gemkit's marketplace gone; a denial gone), or
// its twin plugin gone.
func (s *Switch) Doctor(claudeDir, project string) ([]string, []Finding, error) {
	recs, err := s.ReadRecords()
	if err != nil {
		return nil, nil, err
	}
	h, err := claudeplugin.List(claudeDir, project)
	if err != nil {
		return nil, nil, err
	}
	v, _, _, err := readSettings(s.Settings)
	if err != nil {
		return nil, nil, err
	}
	var ok []string
	var out []Finding
	for _, id := range recs.Switched() {
		rec := recs.Plugins[id]
		again := "gemkit plugins sandbox " + extension.Printable(id)
		add := func(problem, fix string) { out = append(out, Finding{ID: id, Problem: problem, Fix: fix}) }
		n := len(out)
		if why := rec.heldWhy(); why != "" {
			add("held: "+why, again)
		}
		for _, p := range problems(v, rec, s) {
			add(p, again+" (it sets them again)")
		}
		if p, err := h.Find(id); err == nil {
			for _, sc := range p.Enabled {
				if sc.Scope != "user" && sc.Enabled {
					add(fmt.Sprintf("%s enables it (%s scope): Claude Code runs it there itself, unconfined, beside its twin", sc.File, sc.Scope), "remove it from enabledPlugins in "+sc.File)
				}
			}
		}
		if _, err := os.Stat(s.TwinPlugin(rec.Plugin)); err != nil {
			add("its twin plugin is gone from "+s.TwinPlugin(rec.Plugin), again)
		}
		if len(out) == n {
			ok = append(ok, id)
		}
	}
	return ok, out, nil
}

// problems are how the settings v differ from what rec's switch set.
func problems(v agentread.Value, rec *Record, s *Switch) []string {
	var out []string
	enabled, _ := v.Get("enabledPlugins")
	if on, _ := enabled.Get(rec.ID); on.Truthy() {
		out = append(out, fmt.Sprintf("%s enables it again (enabledPlugins): Claude Code runs it itself, unconfined, save the servers it denies", s.Settings))
	}
	if on, _ := enabled.Get(rec.Edit.Twin); !on.Truthy() {
		out = append(out, fmt.Sprintf("%s no longer enables its twin %s: its skills, agents and commands are gone from Claude Code, and nothing of it runs", s.Settings, rec.Edit.Twin))
	}
	markets, _ := v.Get("extraKnownMarketplaces")
	if _, has := markets.Get(Marketplace); !has {
		out = append(out, fmt.Sprintf("%s no longer names gemkit's marketplace %s (extraKnownMarketplaces): Claude Code cannot load the twin", s.Settings, Marketplace))
	}
	var denied []string
	d, _ := v.Get("deniedMcpServers")
	els, _ := d.Elems()
	for _, e := range els {
		if n, ok := e.Get("serverName"); ok {
			if str, ok := n.Str(); ok {
				denied = append(denied, str)
			}
		}
	}
	for _, n := range rec.Edit.Deny {
		if !slices.Contains(denied, n) {
			out = append(out, fmt.Sprintf("%s no longer denies %s (deniedMcpServers): should the plugin be enabled again, Claude Code would start that server unconfined", s.Settings, n))
		}
	}
	return out
}

// Check runs Doctor and says on w what it found (WriteDoctor).
func (s *Switch) Check(w io.Writer, claudeDir, project string) error {
	ok, found, err := s.Doctor(claudeDir, project)
	if err != nil {
		return err
	}
	return WriteDoctor(w, ok, found)
}

// WriteDoctor says on w what Doctor found: each plugin in order, and a
// Refused error when something is wrong (the command exits 1).
func WriteDoctor(w io.Writer, ok []string, found []Finding) error {
	for _, id := range ok {
		fmt.Fprintf(w, "ok: %s runs in gemkit's sandbox, as switched.\n", extension.Printable(id))
	}
	for _, f := range found {
		fmt.Fprintf(w, "! %s: %s\n    fix: %s\n", extension.Printable(f.ID), f.Problem, f.Fix)
	}
	if len(ok)+len(found) == 0 {
		fmt.Fprintln(w, "No Claude Code plugin is switched to gemkit's sandbox: gemkit plugins sandbox PLUGIN@MARKETPLACE switches one.")
	}
	if len(found) > 0 {
		return &extswitch.Refused{Err: fmt.Errorf("%d problem%s with the switched plugins", len(found), map[bool]string{true: "s"}[len(found) > 1])}
	}
	return nil
}
