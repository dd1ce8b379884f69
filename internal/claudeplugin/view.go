package claudeplugin

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gemkit/gemkit/internal/extension"
)

// Find is the plugin id names (NAME@MARKETPLACE, exactly as Claude Code
// keys it), or an error that lists the installed ones.
func (h *Home) Find(id string) (*Plugin, error) {
	var ids []string
	for i := range h.Plugins {
		if h.Plugins[i].ID == id {
			return &h.Plugins[i], nil
		}
		ids = append(ids, h.Plugins[i].ID)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no plugin %q: no plugins installed in %s", id, h.Dir)
	}
	return nil, fmt.Errorf("no plugin %q in %s; installed: %s", id, h.Dir, strings.Join(ids, ", "))
}

// printable keeps what a plugin's files say from reaching the terminal
// as escape sequences.
type printable struct{ w io.Writer }

func (p printable) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, extension.PrintableText(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// enabledWord says where the plugin is enabled: the scope whose word
// holds, or "no".
func enabledWord(p Plugin) string {
	s, on := p.EnabledNow()
	switch {
	case s.Scope == "":
		return "no"
	case s.Unreadable:
		return "unknown (" + s.Scope + " settings unreadable)"
	case !on:
		return "no (" + s.Scope + ")"
	}
	return s.Scope
}

// WriteList writes a row of each plugin, then the files and plugins
// that could not be read as Claude Code reads them.
func WriteList(w io.Writer, h *Home) error {
	if len(h.Plugins) == 0 {
		fmt.Fprintf(w, "No Claude Code plugins installed in %s.\n", h.Dir)
	}
	tw := tabwriter.NewWriter(printable{w}, 0, 4, 2, ' ', 0)
	if len(h.Plugins) > 0 {
		fmt.Fprintln(tw, "PLUGIN\tVERSION\tENABLED\tMCP\tHOOKS\tLSP\tMONITORS\tSKILLS\tAGENTS\tCOMMANDS\tRUNS")
	}
	for _, p := range h.Plugins {
		if p.Unreadable != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\tunreadable\t\t\t\t\t\t\t%s\n", p.ID, orDash(p.Version), enabledWord(p), runsWord(p))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", p.ID, orDash(p.Version), enabledWord(p),
			len(p.Servers), len(p.Hooks), len(p.LSP), len(p.Monitors), len(p.Skills), len(p.Agents), len(p.Commands), runsWord(p))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range h.Plugins {
		if p.Unreadable != "" {
			fmt.Fprintf(printable{w}, "! %s: not read as Claude Code reads it: %s\n", p.ID, p.Unreadable)
		}
	}
	for _, u := range h.Unreadable {
		fmt.Fprintf(printable{w}, "! not read as Claude Code reads it: %s\n", u)
	}
	for _, p := range h.Plugins {
		if strings.HasPrefix(p.Runs, "held: ") {
			fmt.Fprintf(printable{w}, "! %s: %s\n", p.ID, p.Runs)
		}
	}
	if len(h.Plugins) > 0 {
		fmt.Fprintf(w, "RUNS: where the plugin's MCP servers, hooks, LSP servers and monitors run: unconfined in Claude Code, in gemkit's sandbox (gemkit plugins sandbox PLUGIN@MARKETPLACE), or held.\n")
	}
	return nil
}

// runsWord is the list's word for where p's parts run.
func runsWord(p Plugin) string {
	switch {
	case p.Runs == Runs:
		return "unconfined in Claude Code"
	case strings.HasPrefix(p.Runs, "held: "):
		return "held"
	}
	return p.Runs
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteDescribe writes everything about one plugin: where it comes
// from, where it is enabled, and each part with where it runs.
func WriteDescribe(w io.Writer, p *Plugin) error {
	pw := printable{w}
	fmt.Fprintf(pw, "%s\n  marketplace: %s (%s)\n  version: %s\n  installed: %s scope, at %s\n",
		p.ID, p.Marketplace, orDash(p.Source), orDash(p.Version), orDash(p.Scope), p.Path)
	if p.Root != "" && p.Root != p.Path {
		fmt.Fprintf(pw, "  runs from: %s (the directory marketplace's folder)\n", p.Root)
	}
	fmt.Fprintf(pw, "  enabled: %s\n", enabledWord(*p))
	for _, s := range p.Enabled {
		word := fmt.Sprint(s.Enabled)
		if s.Unreadable {
			word = "unreadable"
		}
		fmt.Fprintf(pw, "    %s (%s): %s\n", s.Scope, s.File, word)
	}
	if p.Unreadable != "" {
		fmt.Fprintf(pw, "  ! not read as Claude Code reads it: %s\n", p.Unreadable)
		return nil
	}
	fmt.Fprintf(pw, "  where its MCP servers, hooks, LSP servers and monitors run: %s\n", p.Runs)
	writeServers(pw, "MCP servers", p.Servers)
	if len(p.Hooks) > 0 {
		fmt.Fprintln(pw, "  hooks:")
		for _, h := range p.Hooks {
			fmt.Fprintf(pw, "    %s: %s\n", h.Event, strings.Join(h.Commands, "; "))
		}
	}
	writeServers(pw, "LSP servers", p.LSP)
	writeServers(pw, "monitors", p.Monitors)
	for _, l := range []struct {
		word  string
		names []string
	}{{"skills", p.Skills}, {"agents", p.Agents}, {"commands", p.Commands}} {
		if len(l.names) > 0 {
			fmt.Fprintf(pw, "  %s: %s\n", l.word, strings.Join(l.names, ", "))
		}
	}
	return nil
}

func writeServers(w io.Writer, word string, ss []Server) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", word)
	for _, s := range ss {
		run := s.URL
		if s.Command != "" {
			run = strings.Join(append([]string{s.Command}, s.Args...), " ")
		}
		fmt.Fprintf(w, "    %s: %s\n", s.Name, run)
	}
}
