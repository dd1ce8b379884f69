package langserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/progsearch"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/wswatch"
)

// Options configure a Pool.
type Options struct {
	// Workspace is the workspace folder, absolute.
	Workspace string
	// Config is the user's code-intelligence config (table, timeouts).
	Config Config
	// ConfigPath names the config file in messages (where to add a
	// server).
	ConfigPath string
	// LookPath finds commands; nil searches the part of Env's PATH a
	// server may be started from (Look: not the workspace, not a
	// virtualenv, not a rustup proxy without its component).
	LookPath LookPath
	// Env is the person's environment the servers' own is made from
	// (their profile keeps the locale and the toolchains' settings);
	// nil is gemkit's own.
	Env []string
	// Launcher starts the servers in gemkit's sandbox; nil is a
	// launcher that refuses what the kernel cannot enforce.
	Launcher *sandbox.Launcher
	// CacheDir holds each server's private cache (CacheDir/<name>), the
	// only folder it writes; empty is the user's cache folder's
	// gemkit/langserver.
	CacheDir string
	// Watch reports files changed on disk in the workspace to the running
	// servers (fsnotify, through internal/wswatch).
	Watch bool
	// Logger receives what happens; nil is slog.Default().
	Logger *slog.Logger
}

// Bounds of the Pool's waits.
const (
	// diagWait bounds the wait for a server's diagnostics of a file's
	// latest text.
	diagWait = 15 * time.Second
	// settleQuiet is how long a server must publish nothing for the
	// workspace's diagnostics to count as settled; settleMax bounds it.
	settleQuiet = 300 * time.Millisecond
	settleMax   = 3 * time.Second
	// maxOpen bounds the documents one server keeps open.
	maxOpen = 200
)

// Pool is gemkit's own language servers for one workspace: a
// codeintel.Source.
type Pool struct {
	ws       string
	table    []Server
	cfgPath  string
	idle     time.Duration
	request  time.Duration
	look     LookPath
	env      []string
	launcher *sandbox.Launcher
	cacheDir string
	log      *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	// watcher tells the running servers of files changed on disk; nil
	// without Options.Watch.
	watcher *wswatch.Watcher

	mu      sync.Mutex
	servers map[string]*running
	exts    map[string]bool
	markers map[string]bool
	found   time.Time // when exts and markers were found
	closed  bool

	lookMu sync.Mutex
	looked map[string]lookedPath
}

// lookedPath is where look found a command, and when.
type lookedPath struct {
	path string
	err  error
	at   time.Time
}

// lookTTL is how long where a command was found (or not) holds: every
// question finds its server, and a search of PATH is a stat of each of
// its folders.
const lookTTL = 5 * time.Second

// lookPath is look, its answers kept for lookTTL.
func (p *Pool) lookPath(file string) (string, error) {
	p.lookMu.Lock()
	defer p.lookMu.Unlock()
	if l, ok := p.looked[file]; ok && time.Since(l.at) < lookTTL {
		return l.path, l.err
	}
	path, err := p.look(file)
	if p.looked == nil {
		p.looked = map[string]lookedPath{}
	}
	p.looked[file] = lookedPath{path, err, time.Now()}
	return path, err
}

// New returns the Pool of a workspace. Servers start on demand.
func New(opts Options) (*Pool, error) {
	ws, err := fsutil.Workspace(opts.Workspace)
	if err != nil {
		return nil, err
	}
	table, err := opts.Config.Table()
	if err != nil {
		return nil, err
	}
	idle, request, err := opts.Config.Timeouts()
	if err != nil {
		return nil, err
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	look := opts.LookPath
	if look == nil {
		look = Look(ws, env)
	}
	launcher := opts.Launcher
	if launcher == nil {
		launcher = &sandbox.Launcher{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{ws: ws, table: table, cfgPath: opts.ConfigPath, idle: idle, request: request, look: look,
		env: env, launcher: launcher, cacheDir: opts.CacheDir, log: log, ctx: ctx, cancel: cancel, servers: map[string]*running{}}
	if opts.Watch {
		w, err := wswatch.New(wswatch.Options{Roots: []string{ws}, Logger: log})
		if err != nil {
			log.Warn("code intelligence: files changed in the workspace will be read again only when asked about", "err", err)
		} else {
			p.watcher = w
			go w.Run(ctx, watchSink{p})
		}
	}
	return p, nil
}

// Workspace is the Pool's workspace folder.
func (p *Pool) Workspace() string { return p.ws }

// Close stops every server (shutdown, exit, and their process groups
// killed when they do not go).
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	rs := make([]*running, 0, len(p.servers))
	for _, r := range p.servers {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	p.cancel()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop() }()
	}
	wg.Wait()
	return nil
}

// ServerInfo describes a running server, for `gemkit codeintel status`.
type ServerInfo struct {
	Name     string `json:"name"`
	Language string `json:"language"`
	Command  string `json:"command"`
	Pid      int    `json:"pid,omitempty"`
	Running  bool   `json:"running"`
	Indexing string `json:"indexing,omitempty"`
	// LoadError says why the server could not load the workspace, with
	// what to do (lsp/clients' loadError).
	LoadError string `json:"loadError,omitempty"`
	OpenDocs  int    `json:"openDocs"`
	Crashes   int    `json:"crashes,omitempty"`
	Failed    string `json:"failed,omitempty"`
}

// Servers describes the servers started so far.
func (p *Pool) Servers() []ServerInfo {
	p.mu.Lock()
	rs := make([]*running, 0, len(p.servers))
	for _, r := range p.servers {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	var out []ServerInfo
	for _, r := range rs {
		r.mu.Lock()
		in := ServerInfo{Name: r.server.Name, Language: r.server.Language, Command: strings.Join(append([]string{r.path}, r.server.Command[1:]...), " "), Crashes: r.crashes}
		if r.client != nil {
			in.Running, in.Pid, in.Indexing, in.OpenDocs = true, r.client.Pid(), r.client.Indexing(), len(r.client.OpenDocs())
			in.LoadError = p.loadError(r.client)
		}
		if r.failed != nil {
			in.Failed = r.failed.Error()
		}
		r.mu.Unlock()
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b ServerInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// serverFor returns the running entry for a file's language, or a
// *codeintel.NoServerError saying why there is none.
func (p *Pool) serverFor(path string) (*running, error) {
	ch, err := find(p.table, p.lookPath, p.cfgPath, path)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("gemkit's language servers are shutting down")
	}
	r := p.servers[ch.server.Name]
	if r == nil {
		r = &running{p: p, server: ch.server, path: ch.path, used: map[string]time.Time{}}
		p.servers[ch.server.Name] = r
	}
	return r, nil
}

// Check says, without starting anything, whether a server of the table
// (on PATH, as look finds it) serves path: nil, or the
// *codeintel.NoServerError a Pool would answer with. cfgPath names the
// config file in that answer.
func Check(table []Server, look LookPath, cfgPath, path string) error {
	_, err := find(table, look, cfgPath, path)
	return err
}

// find chooses the server for path, or words why there is none.
func find(table []Server, look LookPath, cfgPath, path string) (choice, error) {
	ext := strings.ToLower(filepath.Ext(path))
	ch, tried, err := choose(table, ext, look)
	if err == nil {
		return ch, nil
	}
	where := "the codeIntel object of gemkit's config file"
	if cfgPath != "" {
		where = "codeIntel.languageServers in " + cfgPath
	}
	if len(tried) == 0 {
		what := ext + " files"
		if ext == "" {
			what = "files without an extension like " + filepath.Base(path)
		}
		return choice{}, &codeintel.NoServerError{Path: path, Reason: fmt.Sprintf("gemkit knows no language server for %s; add one under %s", what, where)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "no language server for %s files is installed (gemkit looks for it on PATH): ", tried[0].Language)
	for i, s := range tried {
		if i > 0 {
			b.WriteString("; or ")
		}
		fmt.Fprintf(&b, "%s", s.Command[0])
		install := s.Install
		var nf *progsearch.NotFoundError
		var mc *MissingComponentError
		switch _, err := look(s.Command[0]); {
		case errors.As(err, &nf) && nf.Skipped != "":
			fmt.Fprintf(&b, " (not %s: gemkit starts no language server from the workspace or a virtualenv, which a tool may write)", nf.Skipped)
		case errors.As(err, &mc):
			fmt.Fprintf(&b, " (%v)", mc)
			install = mc.Fix
		}
		if install != "" {
			fmt.Fprintf(&b, " — install it with: %s", install)
		}
	}
	return choice{}, &codeintel.NoServerError{Language: tried[0].Language, Path: path, Reason: b.String()}
}
