package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide/client"
	"github.com/gemkit/gemkit/ide/companion"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/editorsource"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/lspbroker"
	"github.com/gemkit/gemkit/internal/model"
)

// codeIntels are the code-intelligence tools a run opened, one per
// workspace (gemkit acp's sessions may share one), closed when the run
// ends: the workspace's broker then ends unless another agent uses it.
type codeIntels struct {
	mu    sync.Mutex
	open  map[string]*codeIntel
	close []func()
	// holdFor, when not 0, is the agent process a short-lived gemkit
	// (the hook) works for: the broker keeps the servers while it lives.
	holdFor int
	// noEditor leaves the editor's language clients out: gemkit ide
	// serve is the editor's side, and asks its editor itself.
	noEditor bool
}

// codeIntel is the tools of one workspace and what they need closed.
type codeIntel struct {
	tools *codeintel.Tools
}

// configFile is the config file's path: path, or the default.
func configFile(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	return model.ConfigPath()
}

// codeIntel returns the code-intelligence tools of a workspace: over
// the workspace's broker (started on first use) where the system runs
// brokers and this process is gemkit's own binary, else over language
// servers of this process's own. configPath "" is the default config
// file.
func (a *app) codeIntel(workspace, configPath string) (*codeintel.Tools, error) {
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return nil, err
	}
	a.intel.mu.Lock()
	defer a.intel.mu.Unlock()
	if ci := a.intel.open[ws]; ci != nil {
		return ci.tools, nil
	}
	own, table, closeOwn, err := a.ownServers(ws, configPath, a.intel.holdFor)
	if err != nil {
		return nil, err
	}
	tools, err := codeintel.NewTools(codeintel.Choose(a.editorSource(ws), own), ws, codeintel.Options{Quoting: a.codeIntelQuoting(ws, table)})
	if err != nil {
		closeOwn()
		return nil, err
	}
	if a.intel.open == nil {
		a.intel.open = map[string]*codeIntel{}
	}
	a.intel.open[ws] = &codeIntel{tools: tools}
	a.intel.close = append(a.intel.close, func() { tools.Close(); closeOwn() })
	return tools, nil
}

// closeCodeIntel closes every workspace's tools the run opened.
func (a *app) closeCodeIntel() {
	a.intel.mu.Lock()
	fns := a.intel.close
	a.intel.close, a.intel.open = nil, nil
	a.intel.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// editorSource finds the Source of an editor serving the workspace
// through a gemkit companion (internal/editorsource): its language
// clients answer first. The caller holds a.intel.mu. gemkit ide serve,
// the companion itself, has none.
func (a *app) editorSource(ws string) codeintel.EditorFinder {
	if a.intel.noEditor {
		return nil
	}
	lookup := a.lookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	f := editorsource.NewFinder(ws, editorsource.Options{
		Discovery: client.Options{Dir: a.discoveryDir(), Getenv: a.getenv, LookupEnv: lookup, Logger: a.log},
		Logger:    a.log,
	})
	a.intel.close = append(a.intel.close, f.Close)
	return f.Find
}

// ownServers is gemkit's own language servers for ws: the workspace's
// broker, or a Pool in this process; and their table.
func (a *app) ownServers(ws, configPath string, holdFor int) (codeintel.Source, []langserver.Server, func(), error) {
	path, err := configFile(configPath)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := langserver.ConfigFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	table, err := cfg.Table()
	if err != nil {
		return nil, nil, nil, err
	}
	if lspbroker.Supported && a.executable != nil {
		exe, err := a.executable()
		if err == nil {
			dir, err := lspbroker.Dir()
			if err != nil {
				return nil, nil, nil, err
			}
			fingerprint, _ := json.Marshal(cfg)
			key := lspbroker.Key(ws, fingerprint, buildVersion())
			sock := lspbroker.SocketPath(dir, key)
			c := &lspbroker.Client{
				Socket: sock,
				Check:  func(file string) error { return langserver.Check(table, exec.LookPath, path, file) },
				Start: lspbroker.Command{
					Path: exe,
					Args: []string{"codeintel", "broker", "--workspace", ws, "--config", path, "--socket", sock, "--log", lspbroker.LogPath(dir, key)},
					Log:  lspbroker.LogPath(dir, key),
				}.Start,
				HoldFor: holdFor,
				Logger:  a.log,
			}
			return c, table, func() { c.Close() }, nil
		}
		a.log.Debug("code intelligence: no broker (gemkit's own executable is not known); language servers run in this process", "err", err)
	}
	p, err := langserver.New(langserver.Options{Workspace: ws, Config: cfg, ConfigPath: path, Watch: true, Logger: a.log})
	if err != nil {
		return nil, nil, nil, err
	}
	return p, table, func() { p.Close() }, nil
}

// brokerSocket is the socket of the workspace's broker, for the commands
// that look for one without starting it.
func brokerSocket(ws, configPath string) (string, error) {
	path, err := configFile(configPath)
	if err != nil {
		return "", err
	}
	cfg, err := langserver.ConfigFile(path)
	if err != nil {
		return "", err
	}
	dir, err := lspbroker.Dir()
	if err != nil {
		return "", err
	}
	fingerprint, _ := json.Marshal(cfg)
	return lspbroker.SocketPath(dir, lspbroker.Key(ws, fingerprint, buildVersion())), nil
}

// workspaceDir is --workspace, else the run's folder, absolute with its
// links resolved.
func (a *app) workspaceDir(flag string) (string, error) {
	ws := flag
	if ws == "" {
		ws = a.cwd
	}
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	fi, err := os.Stat(ws)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("--workspace %s is not a folder", ws)
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(ws)
}

// ownDiagnostics answers the companion's diagnostics (Claude Code's
// getDiagnostics) from gemkit's own language servers, for a front-end
// whose editor reports none of its own (the terminal, an LSP client).
// The servers start at the first question.
type ownDiagnostics struct {
	a         *app
	workspace []string
}

// Diagnostics implements companion.DiagnosticsEditor: the diagnostics of
// path, or of every file of the first workspace folder. A file no
// language server serves has none; a file the code-intelligence answers
// may not quote (codeintel.Quoting) is left out.
func (d *ownDiagnostics) Diagnostics(ctx context.Context, path string) ([]companion.FileDiagnostics, error) {
	ws := ""
	for _, w := range d.workspace {
		if path == "" || fsutil.Within(w, path) {
			ws = w
			break
		}
	}
	if ws == "" {
		return []companion.FileDiagnostics{}, nil
	}
	tools, err := d.a.codeIntel(ws, "")
	if err != nil {
		return nil, err
	}
	var paths []string
	if path != "" {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		paths = []string{path}
	}
	files, err := tools.Source().Diagnostics(ctx, paths)
	if codeintel.IsNoServer(err) {
		return []companion.FileDiagnostics{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]companion.FileDiagnostics, 0, len(files))
	for _, f := range files {
		// A file an answer may not quote (a closed path a server read,
		// one outside its read-only folders) is left out: its messages
		// quote its text.
		if ok, _ := tools.Quotes(f.Path); !ok {
			continue
		}
		fd := companion.FileDiagnostics{Path: f.Path, Diagnostics: make([]companion.Diagnostic, 0, len(f.Diagnostics))}
		for _, dg := range f.Diagnostics {
			// The companion's positions are 1-based, as the editor
			// protocol's.
			fd.Diagnostics = append(fd.Diagnostics, companion.Diagnostic{
				Message: dg.Message, Severity: dg.Severity.String(), Source: dg.Source, Code: dg.Code,
				Range: companion.Range{
					Start: companion.Position{Line: dg.Range.Start.Line + 1, Character: dg.Range.Start.Character + 1},
					End:   companion.Position{Line: dg.Range.End.Line + 1, Character: dg.Range.End.Character + 1},
				},
			})
		}
		out = append(out, fd)
	}
	return out, nil
}

// editorState is what `gemkit codeintel status` says of the editor that
// lends its language clients.
type editorState struct {
	Editor   string `json:"editor"`
	Endpoint string `json:"endpoint"`
	// Clients names the clients it runs now ("gopls"), "" when none.
	Clients string `json:"clients"`
}

// editorStatus finds the editor serving ws that lends its language
// clients; nil when none does.
func (a *app) editorStatus(ctx context.Context, ws string) *editorState {
	a.intel.mu.Lock()
	find := a.editorSource(ws)
	a.intel.mu.Unlock()
	if find == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	src, ok := find(ctx).(*editorsource.Source)
	if !ok || src == nil {
		return nil
	}
	st := &editorState{Editor: src.Editor(), Endpoint: src.Endpoint()}
	if s, err := src.Status(ctx, ""); err == nil {
		st.Clients = strings.TrimPrefix(s.Server, src.Editor()+"'s ")
	}
	return st
}
