package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extswitch"
	"github.com/gemkit/gemkit/internal/extview"
	"github.com/gemkit/gemkit/internal/permission"
)

// environ is the app's environment as a list, for what takes one (the
// process's own by default): with an environment of the app's own, the
// variables a server's profile reads.
func (a *app) environ() []string {
	if a.lookupEnv == nil {
		return os.Environ()
	}
	var out []string
	for _, k := range append([]string{"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMPDIR", "TMP", "TEMP"}, permission.CredentialVariables()...) {
		if v, ok := a.lookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// servePolicy is the policy of which of st's extensions' servers
// gemkit mcp serves, and whether they may start (extmcp.Policy), for the
// person whose home the app's environment names.
func servePolicy(a *app, st *extension.Store) extmcp.Policy {
	return extmcp.Policy{Store: st, Home: a.getenv("HOME")}
}

// withWritable is st with the folders a program other than the person
// may write (extmcp.Policy.Writable) known to its consent checks, so
// that every command takes the one check the start of a server makes
// (extension.Store.CheckFiles).
func withWritable(a *app, st *extension.Store) *extension.Store {
	return servePolicy(a, st).WithWritable()
}

// serverWords say where s's servers run and the command that changes
// it, in one line.
func serverWords(name string, s *extswitch.ServerState) string {
	words := sandboxWords(name, s)
	if len(s.Container) > 0 {
		c := extswitch.PrintableNames(s.Container) + ": " + extension.ContainerWords(s.ContainerCommand)
		if len(s.Sandboxable) == 0 {
			return c
		}
		words += "; " + c
	}
	return words
}

// sandboxWords are serverWords of the servers gemkit can sandbox.
func sandboxWords(name string, s *extswitch.ServerState) string {
	switch {
	case s.Switched && s.Untold != "":
		return fmt.Sprintf("%s: switched to gemkit; whether Gemini CLI also starts them cannot be told until its settings file can be read (%s)", extswitch.PrintableNames(s.Sandboxable), s.Untold)
	case s.Untold != "":
		return fmt.Sprintf("%s: not switched; whether Gemini CLI starts them cannot be told until its settings file can be read (%s); to run them in gemkit's sandbox: %s", extswitch.PrintableNames(s.Sandboxable), s.Untold, s.Command)
	case s.Switched && s.NotServed != "":
		return fmt.Sprintf("%s: switched to gemkit, but NOT SERVED by gemkit mcp, nor started by Gemini CLI: %s", extswitch.PrintableNames(s.Sandboxable), s.NotServed)
	case s.Switched && len(s.Unconfined) == 0 && len(s.RemoteInGemini) == 0:
		words := fmt.Sprintf("%s: in gemkit's sandbox (gemkit mcp), not started by Gemini CLI", extswitch.PrintableNames(s.Sandboxable))
		if len(s.Remote) > 0 {
			words += fmt.Sprintf("; %s: remote, connected to by gemkit mcp, not by Gemini CLI (not sandboxed: it runs elsewhere)", extswitch.PrintableNames(s.Remote))
		}
		if s.Agreed != "" {
			words += "; " + s.Agreed
		}
		return words + map[bool]string{false: "; back: ", true: "; an Agent Plugins plugin, which Gemini CLI never runs; to remove it: "}[s.Plugin] + s.Command
	case s.Switched:
		return fmt.Sprintf("switched to gemkit, but Gemini CLI's mcp.excluded lacks %s: run gemkit extensions sandbox %s again", extswitch.MissingWords(s), name)
	case len(s.Unpinnable) > 0 && len(s.Unconfined) == 0:
		return fmt.Sprintf("%s: not started by Gemini CLI (your mcp.excluded names them) nor by gemkit; gemkit's sandbox cannot run them: %s", extswitch.PrintableNames(s.Sandboxable), s.UnpinnableWhy)
	case len(s.Unpinnable) > 0:
		return fmt.Sprintf("%s: unconfined in Gemini CLI (your rights, your whole environment); gemkit's sandbox cannot run them: %s", extswitch.PrintableNames(s.Unconfined), s.UnpinnableWhy)
	case len(s.Unconfined) == 0:
		return fmt.Sprintf("%s: not started by Gemini CLI (your mcp.excluded names them) nor by gemkit; to run them in gemkit's sandbox: %s", extswitch.PrintableNames(s.Sandboxable), s.Command)
	}
	return fmt.Sprintf("%s: unconfined in Gemini CLI (your rights, your whole environment); to run them in gemkit's sandbox: %s", extswitch.PrintableNames(s.Unconfined), s.Command)
}

// writeServerNotes writes, under the list's table, where each
// extension's MCP servers run.
func writeServerNotes(w io.Writer, items []extview.Item) {
	for _, it := range items {
		if it.ServerSandbox != nil {
			fmt.Fprintf(w, "servers of %s: %s\n", it.Name, serverWords(it.Name, it.ServerSandbox))
		}
	}
}

// serversSandbox writes describe's lines on where the servers run, what
// they can do in gemkit's sandbox, and whether consent lets gemkit mcp
// serve them.
func (d *describer) serversSandbox(consent extview.Consent) {
	s := d.it.ServerSandbox
	if s == nil {
		return
	}
	w := d.w
	fmt.Fprintf(w, "  Where they run: %s\n", serverWords(d.m.Name, s))
	if len(s.Sandboxable) == 0 {
		return
	}
	fmt.Fprintf(w, "  In gemkit's sandbox each can: %s\n", extension.ServerProfileWordsOf(d.m, s.Widening))
	if !s.Widening.Empty() {
		fmt.Fprintf(w, "      widened by you; back to the default profile: gemkit extensions sandbox %s --default-profile\n", d.m.Name)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  Note: %s\n      fix: %s\n", n.Message, n.Fix)
	}
	if len(s.Remote) > 0 {
		fmt.Fprintf(w, "  Its remote servers (%s) go with the switch, not sandboxed, since they run elsewhere: switched, gemkit mcp connects to them from your computer as Gemini CLI would, sending the manifest's headers with only the extension's declared settings in them, but signs in to nothing (a server that asks for OAuth fails to connect)\n", strings.Join(s.Remote, ", "))
	}
	for _, n := range slices.Sorted(maps.Keys(s.Packages)) {
		fmt.Fprintf(w, "  %s: %s\n", n, extension.Printable(s.Packages[n].Words()))
	}
	if s.Switched && s.Untold == "" {
		for _, n := range s.Sandboxable {
			fmt.Fprintf(w, "  %s: %s\n", n, listedWords(s.Listed, n))
		}
	}
	switch {
	case s.Switched && s.NotServed == "" && s.Agreed != "":
		// Said where they run (serverWords).
	case s.Switched && s.NotServed == "" && (!consent.Granted || consent.FilesChanged):
		fmt.Fprintf(w, "      not served until you agree to the extension as it is now: %s\n", consentHint(d.m.Name))
	}
	extview.WriteRefusals(w, extmcp.StillRefused(extmcp.RecentRefusals()[d.m.Name], s.Grant.Union(s.Widening), d.it.Choice.HookWidening, consent.Since))
}

// listedWords say what gemkit mcp found of the switched server label
// the last time it listed it (listed): its tools, why it could not serve
// it, or that it has not listed it yet.
func listedWords(listed map[string]extmcp.Listing, label string) string {
	l, ok := listed[label]
	switch {
	case !ok:
		return "not listed by gemkit mcp since it was switched as it is now: a client's first list starts it"
	case l.Failed != "":
		return "NOT SERVED the last time gemkit mcp started it (" + l.At.Local().Format(time.DateTime) + ")"
	}
	return fmt.Sprintf("served by gemkit mcp: %d tool%s, as it last listed them", l.Tools, extswitch.Plural(l.Tools))
}

// partSummary is list's line of where an extension's code runs, ""
// when it has no part that runs code beside its servers (which
// writeServerNotes tells) or all of it is in a sandbox.
func partSummary(parts []extswitch.CodePart) string {
	var out []string
	for _, p := range parts {
		if p.Kind == "server" {
			continue
		}
		w := p.Where
		if p.Change != "" && p.Where != extswitch.WhereGemkit {
			w += ", to change: " + p.Change
		}
		out = append(out, p.Kind+" "+p.Name+": "+w)
	}
	return strings.Join(out, "; ")
}
