package extswitch

import (
	"context"
	"log/slog"
	"os"

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

// ServedCheck is what the switch's listing found of one stdio server.
type ServedCheck struct {
	Label string
	Tools int
	Err   error // why gemkit mcp could not serve it; nil when it listed
}

// ListSwitched lists the stdio servers of in (just switched) as gemkit
// mcp does, in a workspace of their own that holds nothing, each
// bounded by extmcp.MaxStart.
func (s *Switch) ListSwitched(ctx context.Context, in *extension.Installed) []ServedCheck {
	settings, err := toolrun.InstalledSettings(in)
	if err != nil {
		return nil
	}
	ext := in.Extension
	set := &disclosure.Set{Extensions: []*disclosure.Extension{{Name: ext.Manifest.Name, Ext: ext, Settings: settings}}}
	all, _ := extmcp.Specs(set, s.policy().Choose())
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
	m := extmcp.NewManager(extmcp.Config{Launcher: launcher, Workspace: ws, Timeout: extmcp.MaxStart, Version: s.Version,
		Logger: slog.New(slog.DiscardHandler), ExtensionFolders: s.Store.ExtensionFolders, Environ: s.Environ})
	defer m.Close()
	m.Sync(specs)
	c, failed := m.Catalog(ctx)
	out := make([]ServedCheck, 0, len(specs))
	for _, sp := range specs {
		chk := ServedCheck{Label: sp.Label()}
		for _, t := range c.Tools {
			if t.Spec.Key() == sp.Key() {
				chk.Tools++
			}
		}
		for _, f := range failed {
			if f.Spec.Key() == sp.Key() {
				chk.Err = f.Err
			}
		}
		out = append(out, chk)
	}
	return out
}

// NotLoaded says why gemkit mcp serves none of in's servers, since
// gemkit does not load in (as disclosure.Load leaves it out: its
// manifest refused, its settings unreadable), with what to do; "" when
// it loads.
func NotLoaded(in *extension.Installed) string {
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
