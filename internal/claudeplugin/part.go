package claudeplugin

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// The kinds of a plugin's parts that Claude Code starts as processes of
// their own, besides its MCP servers (ReadPart).
const (
	KindLSP     = "lsp"
	KindMonitor = "monitor"
)

// Part is one LSP server or monitor of a plugin, as its files write it
// (Claude Code's variables not replaced).
type Part struct {
	Kind, Name string
	// Command is an LSP server's program, with Args; a monitor's shell
	// command line, which Claude Code runs through a shell.
	Command string
	Args    []string
	// Env is an LSP server's env (a monitor has none).
	Env map[string]string
}

// lspEntry is an LSP server's entry in .lsp.json (Claude Code 2.1.330's
// schema: command, args, env, and the fields that are the client's:
// extensionToLanguage, transport, settings, timeouts...).
type lspEntry struct {
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Transport string            `json:"transport"`
}

// ReadPart reads the LSP server (kind KindLSP) or monitor (KindMonitor)
// name of the plugin in the folder dir, from .lsp.json or
// monitors/monitors.json or what its .claude-plugin/plugin.json names
// in their place, read as Claude Code 2.1.330 reads them (JSON.parse,
// through fsutil.Root: no link out of the folder). An LSP server whose
// transport is not stdio, a part that is not there or a file that
// cannot be read is an error that says so.
func ReadPart(dir, kind, name string) (Part, error) {
	r, err := fsutil.OpenRoot(dir)
	if err != nil {
		return Part{}, fmt.Errorf("plugin folder: %w", err)
	}
	defer r.Close()
	man, err := readValue(r, ".claude-plugin/plugin.json")
	if errors.Is(err, fs.ErrNotExist) {
		man, err = agentread.ParseJSON([]byte("{}"))
	}
	if err != nil {
		return Part{}, err
	}
	switch kind {
	case KindLSP:
		return lspPart(r, man, name)
	case KindMonitor:
		ms, err := monitors(r, man)
		if err != nil {
			return Part{}, err
		}
		var found []Part
		for _, m := range ms {
			if m.Name == name {
				found = append(found, Part{Kind: kind, Name: name, Command: m.Command})
			}
		}
		if len(found) != 1 {
			return Part{}, fmt.Errorf("the plugin in %s has %d monitors named %q (Claude Code runs one of each name)", dir, len(found), name)
		}
		return found[0], nil
	}
	return Part{}, fmt.Errorf("%q is no kind of part: %s or %s", kind, KindLSP, KindMonitor)
}

// lspPart reads the LSP server name.
func lspPart(r *fsutil.Root, man agentread.Value, name string) (Part, error) {
	v, where, ok, err := component(r, man, "lspServers", ".lsp.json")
	if err != nil {
		return Part{}, err
	}
	if !ok {
		return Part{}, fmt.Errorf("the plugin in %s has no LSP servers (no .lsp.json, nor lspServers in its plugin.json)", r.Path("."))
	}
	entry, has := v.Get(name)
	if !has || !v.IsObject() {
		return Part{}, fmt.Errorf("%s has no LSP server %q", where, name)
	}
	var e lspEntry
	if err := agentread.Decode(entry, &e, false); err != nil {
		return Part{}, fmt.Errorf("%s: %s: %w", where, name, err)
	}
	if e.Transport != "" && e.Transport != "stdio" {
		return Part{}, fmt.Errorf("%s: %s speaks over %s; gemkit runs an LSP server over its stdio only", where, name, e.Transport)
	}
	if e.Command == "" {
		return Part{}, fmt.Errorf("%s: %s has no command", where, name)
	}
	return Part{Kind: KindLSP, Name: name, Command: e.Command, Args: e.Args, Env: e.Env}, nil
}
