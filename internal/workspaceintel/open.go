// Package workspaceintel opens a workspace's code intelligence: the tools of
// internal/codeintel over internal/lspsource's one Source, whose clients
// are the editor's (through its companion, when one serves the
// workspace) and gemkit's own language servers (through the workspace's
// broker, else a Pool in this process), and what the answers may quote.
//
// It is a package of its own, above the others, because it is the one
// place that knows them all: codeintel holds the tools and the Source
// interface, and is imported by langserver (whose Pool answers in
// codeintel's types) and lspsource (which turns the clients' answers
// into them); lspsource does not know the Pool or the broker, only the
// protocol they speak; lspbroker forwards that protocol without knowing
// who answers. Were Workspace in codeintel, codeintel would import
// langserver, which imports codeintel.
package workspaceintel

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/config"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/langserver"
	"github.com/gemkit/gemkit/internal/lspbroker"
	"github.com/gemkit/gemkit/internal/lspsource"
	"github.com/gemkit/gemkit/internal/permission"
)

// Config is what Workspace needs besides the folder.
type Config struct {
	// ConfigPath is gemkit's config file, whose codeIntel object adds or
	// changes language servers; "" is the default (model.ConfigPath).
	ConfigPath string
	// Executable is gemkit's own binary, which runs the workspace's
	// broker (`gemkit codeintel broker`); nil, or a system without
	// brokers, runs the servers in this process.
	Executable func() (string, error)
	// Version is gemkit's version: a broker is shared only by processes
	// of one version.
	Version string
	// HoldFor, when not 0, is the agent process a short-lived gemkit
	// (the Gemini CLI hook) works for: the broker keeps the servers
	// while it lives.
	HoldFor int
	// Editor, when set, is how the companion of an editor serving the
	// workspace is found (its Cwd is set to the workspace); its language
	// clients then answer first. nil asks no editor: the companion's own
	// process, which is the editor's side.
	Editor *client.Options
	// Home and Getenv locate the paths closed to every tool
	// (permission.ClosedPaths), which an answer never quotes; nil Getenv
	// is os.Getenv.
	Home   string
	Getenv func(string) string
	// Tools configures the tools; its Quoting is set here.
	Tools codeintel.Options
	// Logger receives what happens; nil discards it.
	Logger *slog.Logger
}

// Intel is a workspace's code intelligence, open.
type Intel struct {
	// Tools are the tools of the workspace.
	Tools *codeintel.Tools
	// Finder finds the editor serving the workspace; nil without
	// Config.Editor.
	Finder *lspsource.Finder
	close  []func()
}

// Close stops what Workspace started: the workspace's broker then ends
// unless another agent uses it; servers of this process stop.
func (in *Intel) Close() {
	for i := len(in.close) - 1; i >= 0; i-- {
		in.close[i]()
	}
	in.close = nil
}

// Workspace opens the code intelligence of the folder ws. No language
// server starts before the first question.
func Workspace(ws string, cfg Config) (*Intel, error) {
	ws, err := fsutil.Workspace(ws)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path, lsc, err := load(cfg.ConfigPath)
	if err != nil {
		return nil, err
	}
	table, err := lsc.Table()
	if err != nil {
		return nil, err
	}
	in := &Intel{}
	own, err := in.own(ws, path, lsc, table, cfg, log)
	if err != nil {
		return nil, err
	}
	var find func(context.Context) *lspsource.Clients
	if cfg.Editor != nil {
		in.Finder = lspsource.NewFinder(ws, lspsource.Options{Discovery: *cfg.Editor, Logger: log})
		in.close = append(in.close, in.Finder.Close)
		find = in.Finder.Find
	}
	topts := cfg.Tools
	topts.Quoting = quoting(ws, table, cfg)
	tools, err := codeintel.NewTools(lspsource.New(find, own), ws, topts)
	if err != nil {
		in.Close()
		return nil, err
	}
	in.Tools = tools
	in.close = append(in.close, func() { tools.Close() })
	return in, nil
}

// own is gemkit's own servers for ws: the workspace's broker where the
// system runs brokers and gemkit's own binary is known, else a Pool in
// this process.
func (in *Intel) own(ws, path string, lsc langserver.Config, table []langserver.Server, cfg Config, log *slog.Logger) (*lspsource.Clients, error) {
	cl := &lspsource.Clients{Confined: true}
	if lspbroker.Supported && cfg.Executable != nil {
		exe, err := cfg.Executable()
		if err == nil {
			sock, logPath, err := broker(ws, lsc, cfg.Version)
			if err != nil {
				return nil, err
			}
			c := &lspbroker.Client{
				Socket: sock,
				Start: lspbroker.Command{
					Path: exe,
					Args: []string{"codeintel", "broker", "--workspace", ws, "--config", path, "--socket", sock, "--log", logPath},
					Log:  logPath,
				}.Start,
				HoldFor: cfg.HoldFor,
				Logger:  log,
			}
			in.close = append(in.close, func() { c.Close() })
			cl.Conn = c
			// A question about a file no server serves starts no broker.
			look := langserver.RustupLook(exec.LookPath, ws, os.Environ())
			cl.Check = func(file string) error { return langserver.Check(table, look, path, file) }
			return cl, nil
		}
		log.Debug("code intelligence: no broker (gemkit's own executable is not known); language servers run in this process", "err", err)
	}
	p, err := langserver.New(langserver.Options{Workspace: ws, Config: lsc, ConfigPath: path, Watch: true, Logger: log})
	if err != nil {
		return nil, err
	}
	in.close = append(in.close, func() { p.Close() })
	cl.Conn = p
	return cl, nil
}

// BrokerSocket is the socket of the broker of ws for the config file
// configPath ("" the default) and gemkit's version, for the commands
// that look for one without starting it.
func BrokerSocket(ws, configPath, version string) (string, error) {
	_, lsc, err := load(configPath)
	if err != nil {
		return "", err
	}
	sock, _, err := broker(ws, lsc, version)
	return sock, err
}

// broker is the socket and log of the broker of ws.
func broker(ws string, lsc langserver.Config, version string) (sock, logPath string, err error) {
	dir, err := gemkitdir.MakeRuntime()
	if err != nil {
		return "", "", err
	}
	fingerprint, _ := json.Marshal(lsc)
	key := lspbroker.Key(ws, fingerprint, version)
	return lspbroker.SocketPath(dir, key), lspbroker.LogPath(dir, key), nil
}

// load reads the config file path ("" the default).
func load(path string) (string, langserver.Config, error) {
	path, err := config.Path(path)
	if err != nil {
		return "", langserver.Config{}, err
	}
	lsc, err := langserver.ConfigFile(path)
	return path, lsc, err
}

// quoting is what the answers of ws may quote besides its files
// (codeintel.Quoting): the read-only folders of its language servers
// (langserver.ReadRoots, the folders their sandbox profiles read), and
// no path closed to every tool (permission.ClosedPaths, with the running
// servers' secrets wherever their environment put them).
func quoting(ws string, table []langserver.Server, cfg Config) codeintel.Quoting {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	in := permission.ClosedOf(getenv)
	in.Home = cfg.Home
	locator := &permission.Locator{}
	return codeintel.Quoting{
		Roots: func() []string {
			// The environment the Pool makes the servers' profiles from.
			return langserver.ReadRoots(table, ws, os.Environ())
		},
		Closed: func() []string {
			in := in
			in.Writers = locator.Writers()
			return permission.ClosedPaths(in)
		},
	}
}
