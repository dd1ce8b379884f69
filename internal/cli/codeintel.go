package cli

import (
	"context"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/lspsource"
	"github.com/gemkit/gemkit/internal/workspaceintel"
)

// codeIntels are the code intelligence a run opened, one per workspace
// (gemkit acp's sessions may share one), closed when the run ends: the
// workspace's broker then ends unless another agent uses it.
type codeIntels struct {
	mu   sync.Mutex
	open map[string]*workspaceintel.Intel
	// diags are the companion's own diagnostics (gemkit ide serve).
	diags []*workspaceintel.Diagnostics
	// holdFor, when not 0, is the agent process a short-lived gemkit
	// (the hook) works for: the broker keeps the servers while it lives.
	holdFor int
}

// codeIntelConfig is how this run opens a workspace's code
// intelligence (configPath "" is the default config file): editor
// says whether an editor serving it is asked first.
func (a *app) codeIntelConfig(configPath string, editor bool) workspaceintel.Config {
	home, _ := resolveHome("")
	cfg := workspaceintel.Config{ConfigPath: configPath, Executable: a.executable, Version: buildVersion(),
		Home: home, Getenv: a.getenv, Logger: a.log}
	if editor {
		lookup := a.lookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		cfg.Editor = &client.Options{Dir: a.discoveryDir(), Getenv: a.getenv, LookupEnv: lookup, Logger: a.log}
	}
	return cfg
}

// codeIntel returns the code-intelligence tools of a workspace
// (workspaceintel.Workspace), opened once a run.
func (a *app) codeIntel(workspace, configPath string) (*codeintel.Tools, error) {
	in, err := a.openCodeIntel(workspace, configPath)
	if err != nil {
		return nil, err
	}
	return in.Tools, nil
}

func (a *app) openCodeIntel(workspace, configPath string) (*workspaceintel.Intel, error) {
	ws, err := fsutil.Workspace(workspace)
	if err != nil {
		return nil, err
	}
	a.intel.mu.Lock()
	defer a.intel.mu.Unlock()
	if in := a.intel.open[ws]; in != nil {
		return in, nil
	}
	cfg := a.codeIntelConfig(configPath, true)
	cfg.HoldFor = a.intel.holdFor
	in, err := workspaceintel.Workspace(ws, cfg)
	if err != nil {
		return nil, err
	}
	if a.intel.open == nil {
		a.intel.open = map[string]*workspaceintel.Intel{}
	}
	a.intel.open[ws] = in
	return in, nil
}

// closeCodeIntel closes every workspace's code intelligence the run
// opened.
func (a *app) closeCodeIntel() {
	a.intel.mu.Lock()
	opened := a.intel.open
	diags := a.intel.diags
	a.intel.open, a.intel.diags = nil, nil
	a.intel.mu.Unlock()
	for _, in := range opened {
		in.Close()
	}
	for _, d := range diags {
		d.Close()
	}
}

// ownDiagnostics are the diagnostics of gemkit's own language servers
// for a companion of the workspace folders (its Config.Diagnostics),
// closed when the run ends.
func (a *app) ownDiagnostics(workspace []string) *workspaceintel.Diagnostics {
	d := workspaceintel.NewDiagnostics(workspace, a.codeIntelConfig("", false))
	a.intel.mu.Lock()
	a.intel.diags = append(a.intel.diags, d)
	a.intel.mu.Unlock()
	return d
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
	f := lspsource.NewFinder(ws, lspsource.Options{Discovery: *a.codeIntelConfig("", true).Editor, Logger: a.log})
	defer f.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	comp := f.Companion(ctx)
	if comp == nil {
		return nil
	}
	st := &editorState{Editor: comp.Editor(), Endpoint: comp.Endpoint()}
	if s, err := lspsource.New(f.Find, nil).Status(ctx, ""); err == nil {
		st.Clients = strings.TrimPrefix(s.Server, comp.Editor()+"'s ")
	}
	return st
}
