package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// The switch says "gemkit mcp serves it" only of a server gemkit mcp
// serves: once it has switched and recorded consent, it starts each
// stdio server it took as gemkit mcp does (in the sandbox, under the
// consent just recorded, checked the same way) and lists it. What it
// lists is kept as gemkit mcp keeps it (extmcp's kept catalogs), so the
// first client's list is answered from there; a server that cannot
// start or list is told at once, with why and what to do, and list,
// describe and doctor say it from what was kept. mcp-server-kubernetes
// 4.1.7 was switched with "gemkit mcp serves it" while gemkit mcp
// offered only its placeholder. Remote servers are not connected to
// here: that reaches beyond this computer, which the switch does not.

// servedCheck is what the switch's listing found of one stdio server.
type servedCheck struct {
	label string
	tools int
	err   error // why gemkit mcp could not serve it; nil when it listed
}

// listSwitched lists the stdio servers of in (just switched) as gemkit
// mcp does, in a workspace of their own that holds nothing, each
// bounded by extmcp.MaxStart.
func listSwitched(ctx context.Context, a *app, st *extension.Store, in *extension.Installed) []servedCheck {
	settings, err := toolrun.InstalledSettings(in)
	if err != nil {
		return nil
	}
	ext := in.Extension
	set := &disclosure.Set{Extensions: []*disclosure.Extension{{Name: ext.Manifest.Name, Ext: ext, Settings: settings}}}
	all, _ := extmcp.Specs(set, servePolicy(a, st).Choose())
	var specs []extmcp.Spec
	for _, sp := range all {
		if !sp.Remote() {
			specs = append(specs, sp)
		}
	}
	if len(specs) == 0 {
		return nil
	}
	ws, err := os.MkdirTemp("", "gemkit-switch-ws-")
	if err != nil {
		return nil
	}
	// The servers may have written there: removed as gemkit removes
	// what a sandboxed process wrote.
	defer fsutil.RemoveTree(ws)
	launcher := &sandbox.Launcher{}
	defer launcher.Close()
	m := extmcp.NewManager(extmcp.Config{Launcher: launcher, Workspace: ws, Timeout: extmcp.MaxStart, Version: buildVersion(),
		Logger: slog.New(slog.DiscardHandler), ExtensionFolders: st.ExtensionFolders, Environ: a.environ()})
	defer m.Close()
	m.Sync(specs)
	c, failed := m.Catalog(ctx)
	out := make([]servedCheck, 0, len(specs))
	for _, sp := range specs {
		chk := servedCheck{label: sp.Label()}
		for _, t := range c.Tools {
			if t.Spec.Key() == sp.Key() {
				chk.tools++
			}
		}
		for _, f := range failed {
			if f.Spec.Key() == sp.Key() {
				chk.err = f.Err
			}
		}
		out = append(out, chk)
	}
	return out
}

// servedLines say, of the servers the switch listed (checks), which
// gemkit mcp serves, with their tools, and which it does not, each with
// why and what to do; served are the labels it serves.
func servedLines(name string, checks []servedCheck) (served []string, lines []string) {
	for _, c := range checks {
		if c.err == nil {
			served = append(served, fmt.Sprintf("%s (%d tool%s)", extension.Printable(c.label), c.tools, plural(c.tools)))
			continue
		}
		lines = append(lines, fmt.Sprintf("NOT SERVED: gemkit mcp could not serve %s, and Gemini CLI no longer starts it: %s. Fix what it says, then run `gemkit extensions sandbox %s` again, which lists it again; or give it back to Gemini CLI: `gemkit extensions sandbox %s --off`",
			extension.Printable(c.label), strings.TrimSuffix(extension.PrintableText(c.err.Error()), "."), extension.Printable(name), extension.Printable(name)))
	}
	return served, lines
}

// notLoaded says why gemkit mcp serves none of in's servers, since
// gemkit does not load in (as disclosure.Load leaves it out: its
// manifest refused, its settings unreadable), with what to do; "" when
// it loads.
func notLoaded(in *extension.Installed) string {
	name := in.Name
	if m := in.Manifest(); m != nil {
		name = m.Name
	}
	if in.Extension == nil || in.Err != nil {
		why := "it cannot be read"
		if in.Err != nil {
			why = in.Err.Error()
		}
		return extmcp.NotLoadedWords(name, "cannot be used: "+why)
	}
	if _, err := toolrun.InstalledSettings(in); err != nil {
		return extmcp.NotLoadedWords(name, "settings cannot be read: "+err.Error())
	}
	return ""
}

// listingProblems say, of the last listings of an extension's servers
// (extmcp.Policy.LastListings), those gemkit mcp could not serve, with
// why: when and how the start or listing failed, its cause first.
func listingProblems(listed map[string]extmcp.Listing) []string {
	var why []string
	for _, label := range sortedKeys(listed) {
		if l := listed[label]; l.Failed != "" {
			why = append(why, fmt.Sprintf("the last time gemkit mcp started it (%s), %s", l.At.Local().Format(time.DateTime), l.Failed))
		}
	}
	return why
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
	return fmt.Sprintf("served by gemkit mcp: %d tool%s, as it last listed them", l.Tools, plural(l.Tools))
}
