package workspaceintel

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/langserver"
)

// Diagnostics answers a companion's diagnostics (Claude Code's
// getDiagnostics; companion's Config.Diagnostics) from gemkit's own
// language servers, for a front-end whose editor reports none of its
// own (the terminal, an LSP client's). It asks no editor: it serves the
// companion, which is the editor's side. Each workspace folder's code
// intelligence opens at its first question.
type Diagnostics struct {
	workspace []string
	cfg       Config

	mu     sync.Mutex
	opened map[string]*Intel

	// table is the language servers' table, read at the first Serves
	// (cfgPath its config file); tableErr why it could not be.
	tableOnce sync.Once
	table     []langserver.Server
	cfgPath   string
	tableErr  error
}

// NewDiagnostics returns the Diagnostics of the workspace folders
// (absolute), opened with cfg (its Editor left out).
func NewDiagnostics(workspace []string, cfg Config) *Diagnostics {
	cfg.Editor = nil
	return &Diagnostics{workspace: workspace, cfg: cfg, opened: map[string]*Intel{}}
}

// Close closes the code intelligence of every folder it opened.
func (d *Diagnostics) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for ws, in := range d.opened {
		in.Close()
		delete(d.opened, ws)
	}
}

// tools are the tools of the folder ws, opened at the first call.
func (d *Diagnostics) tools(ws string) (*codeintel.Tools, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if in := d.opened[ws]; in != nil {
		return in.Tools, nil
	}
	in, err := Workspace(ws, d.cfg)
	if err != nil {
		return nil, err
	}
	d.opened[ws] = in
	return in.Tools, nil
}

// Serves reports, without starting anything, whether one of gemkit's
// own servers would answer for path (a file of a workspace folder, of a
// language the table has a server on PATH for): the companion then
// knows an answer late from them would leave path's incomplete. A table
// that cannot be read serves every file.
func (d *Diagnostics) Serves(path string) bool {
	ws := ""
	for _, w := range d.workspace {
		if ws == "" && fsutil.Within(w, path) {
			ws = w
		}
	}
	if ws == "" {
		return false
	}
	d.tableOnce.Do(func() {
		var lsc langserver.Config
		if d.cfgPath, lsc, d.tableErr = load(d.cfg.ConfigPath); d.tableErr == nil {
			d.table, d.tableErr = lsc.Table()
		}
	})
	return d.tableErr != nil || langserver.Check(d.table, langserver.RustupLook(exec.LookPath, ws, os.Environ()), d.cfgPath, path) == nil
}

// Diagnostics implements companion.DiagnosticsEditor: the diagnostics of
// path, or of every file of the first workspace folder. A file no language server serves has none; a file the
// answers may not quote (codeintel.Quoting: a closed path a server read,
// one outside its read-only folders) is left out, since its messages
// quote its text.
func (d *Diagnostics) Diagnostics(ctx context.Context, path string) ([]ide.FileDiagnostics, error) {
	ws := ""
	for _, w := range d.workspace {
		if path == "" || fsutil.Within(w, path) {
			ws = w
			break
		}
	}
	if ws == "" {
		return []ide.FileDiagnostics{}, nil
	}
	tools, err := d.tools(ws)
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
		return []ide.FileDiagnostics{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]ide.FileDiagnostics, 0, len(files))
	for _, f := range files {
		if ok, _ := tools.Quotes(f.Path); !ok {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}
