package langserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/lspclient"
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
	// LookPath finds commands; nil is exec.LookPath.
	LookPath LookPath
	// Env is the servers' environment; nil is gemkit's own.
	Env []string
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
	ws      string
	table   []Server
	cfgPath string
	idle    time.Duration
	request time.Duration
	look    LookPath
	env     []string
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	servers map[string]*running
	exts    map[string]bool
	markers map[string]bool
	found   time.Time // when exts and markers were found
	closed  bool
}

// running is one server of the table, started or not.
type running struct {
	p      *Pool
	server Server
	path   string // the command, found on PATH

	startMu sync.Mutex // held while starting
	mu      sync.Mutex
	client  *lspclient.Client
	started time.Time
	crashes int
	failed  error // after the second crash: why it is not started again
	stopped bool  // stopped on purpose (idle, Close)
	inUse   int
	idle    *time.Timer
	used    map[string]time.Time // open documents, by last use
}

// New returns the Pool of a workspace. Servers start on demand.
func New(opts Options) (*Pool, error) {
	ws, err := filepath.EvalSymlinks(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	table, err := opts.Config.Table()
	if err != nil {
		return nil, err
	}
	idle, request, err := opts.Config.Timeouts()
	if err != nil {
		return nil, err
	}
	look := opts.LookPath
	if look == nil {
		look = exec.LookPath
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{ws: ws, table: table, cfgPath: opts.ConfigPath, idle: idle, request: request, look: look,
		env: opts.Env, log: log, ctx: ctx, cancel: cancel, servers: map[string]*running{}}
	if opts.Watch {
		w, err := wswatch.New(wswatch.Options{Roots: []string{ws}, Logger: log})
		if err != nil {
			log.Warn("code intelligence: files changed in the workspace will be read again only when asked about", "err", err)
		} else {
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
	OpenDocs int    `json:"openDocs"`
	Crashes  int    `json:"crashes,omitempty"`
	Failed   string `json:"failed,omitempty"`
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
	ch, err := find(p.table, p.look, p.cfgPath, path)
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
		if s.Install != "" {
			fmt.Fprintf(&b, " — install it with: %s", s.Install)
		}
	}
	return choice{}, &codeintel.NoServerError{Language: tried[0].Language, Path: path, Reason: b.String()}
}

// client starts the server if it is not running and marks it in use
// until done is called.
func (r *running) acquire(ctx context.Context) (*lspclient.Client, func(), error) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	if r.failed != nil {
		err := r.failed
		r.mu.Unlock()
		return nil, nil, err
	}
	c := r.client
	if c != nil {
		r.inUse++
		if r.idle != nil {
			r.idle.Stop()
		}
		r.mu.Unlock()
		return c, r.release, nil
	}
	r.mu.Unlock()
	start := time.Now()
	c, err := lspclient.Start(ctx, lspclient.Config{
		Name: r.server.Name, Command: append([]string{r.path}, r.server.Command[1:]...), Dir: r.p.ws, Env: r.p.env,
		InitializationOptions: r.server.InitializationOptions, Settings: r.server.Settings,
		RequestTimeout: r.p.request, Logger: r.p.log,
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, err
		}
		r.crashes++
		if r.crashes >= 2 {
			r.failed = &codeintel.ServerError{Server: r.server.Name, Reason: fmt.Sprintf("it failed twice and is not started again until gemkit's language servers restart (when the last agent of this workspace goes); last: %v", err)}
			return nil, nil, r.failed
		}
		return nil, nil, &codeintel.ServerError{Server: r.server.Name, Reason: err.Error()}
	}
	r.p.log.Info("code intelligence: language server started", "server", r.server.Name, "pid", c.Pid(), "took", time.Since(start).Round(time.Millisecond))
	r.client, r.started, r.stopped = c, time.Now(), false
	r.used = map[string]time.Time{}
	r.inUse++
	go r.watch(c)
	return c, r.release, nil
}

// watch notes a server's exit: a crash is restarted at the next question,
// once; a second one leaves it failed, with why.
func (r *running) watch(c *lspclient.Client) {
	<-c.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != c {
		return
	}
	r.client = nil
	if r.stopped {
		return
	}
	r.crashes++
	r.p.log.Warn("code intelligence: language server exited", "server", r.server.Name, "err", c.Err(), "crashes", r.crashes)
	if r.crashes >= 2 {
		r.failed = &codeintel.ServerError{Server: r.server.Name, Reason: fmt.Sprintf("it crashed twice and is not started again until gemkit's language servers restart (when the last agent of this workspace goes); last: %v", c.Err())}
	}
}

func (r *running) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inUse--
	if r.inUse > 0 || r.client == nil {
		return
	}
	if r.idle == nil {
		r.idle = time.AfterFunc(r.p.idle, r.stopIdle)
	} else {
		r.idle.Reset(r.p.idle)
	}
}

// stopIdle stops a server nobody asked for during the idle timeout.
func (r *running) stopIdle() {
	r.mu.Lock()
	busy := r.inUse > 0 || r.client == nil
	r.mu.Unlock()
	if busy {
		return
	}
	r.p.log.Info("code intelligence: stopping an idle language server", "server", r.server.Name, "idle", r.p.idle)
	r.stop()
}

// stop shuts the server down, if it runs.
func (r *running) stop() {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.mu.Lock()
	c := r.client
	r.stopped = true
	if r.idle != nil {
		r.idle.Stop()
	}
	r.mu.Unlock()
	if c != nil {
		c.Shutdown(context.Background())
	}
}

// open opens (or syncs) path in c, closing the least recently used
// documents past maxOpen.
func (r *running) open(c *lspclient.Client, path string) error {
	if _, err := c.Open(path, r.server.languageID(path)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist on disk (a file must be saved before its language server can read it)", path)
		}
		return err
	}
	r.mu.Lock()
	r.used[path] = time.Now()
	var drop []string
	if len(r.used) > maxOpen {
		type u struct {
			p string
			t time.Time
		}
		var all []u
		for p, t := range r.used {
			all = append(all, u{p, t})
		}
		slices.SortFunc(all, func(a, b u) int { return a.t.Compare(b.t) })
		for _, x := range all[:len(all)-maxOpen] {
			drop = append(drop, x.p)
			delete(r.used, x.p)
		}
	}
	r.mu.Unlock()
	for _, p := range drop {
		c.Close(p)
	}
	return nil
}

// syncOpen sends again every document c has open that changed on disk
// since: a file an agent wrote is what the next answer sees.
func (r *running) syncOpen(c *lspclient.Client) {
	for _, p := range c.OpenDocs() {
		if _, err := c.Open(p, r.server.languageID(p)); err != nil {
			r.mu.Lock()
			delete(r.used, p)
			r.mu.Unlock()
		}
	}
}

// at prepares a question about a position: the server for the file,
// started, with the file open and its other documents in step with the
// disk.
func (p *Pool) at(ctx context.Context, path string) (*running, *lspclient.Client, func(), error) {
	r, err := p.serverFor(path)
	if err != nil {
		return nil, nil, nil, err
	}
	c, done, err := r.acquire(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	r.syncOpen(c)
	if err := r.open(c, path); err != nil {
		done()
		return nil, nil, nil, err
	}
	return r, c, done, nil
}

// Status implements codeintel.Source.
func (p *Pool) Status(_ context.Context, path string) (codeintel.Status, error) {
	if path == "" {
		var names, busy []string
		for _, s := range p.Servers() {
			if s.Running {
				names = append(names, s.Name)
				if s.Indexing != "" {
					busy = append(busy, s.Name+": "+s.Indexing)
				}
			}
		}
		return codeintel.Status{Server: strings.Join(names, ", "), Indexing: strings.Join(busy, "; ")}, nil
	}
	r, err := p.serverFor(path)
	if err != nil {
		return codeintel.Status{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := codeintel.Status{Server: r.server.Name}
	if r.client != nil {
		st.Indexing = r.client.Indexing()
	}
	return st, nil
}

func locQuery(p *Pool, ctx context.Context, at codeintel.DocPos, f func(*lspclient.Client) ([]codeintel.Location, error)) ([]codeintel.Location, error) {
	_, c, done, err := p.at(ctx, at.Path)
	if err != nil {
		return nil, err
	}
	defer done()
	return f(c)
}

// Definition implements codeintel.Source.
func (p *Pool) Definition(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return locQuery(p, ctx, at, func(c *lspclient.Client) ([]codeintel.Location, error) { return c.Definition(ctx, at) })
}

// Implementations implements codeintel.Source.
func (p *Pool) Implementations(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return locQuery(p, ctx, at, func(c *lspclient.Client) ([]codeintel.Location, error) { return c.Implementations(ctx, at) })
}

// References implements codeintel.Source.
func (p *Pool) References(ctx context.Context, at codeintel.DocPos) ([]codeintel.Location, error) {
	return locQuery(p, ctx, at, func(c *lspclient.Client) ([]codeintel.Location, error) { return c.References(ctx, at) })
}

// Hover implements codeintel.Source.
func (p *Pool) Hover(ctx context.Context, at codeintel.DocPos) (codeintel.Hover, error) {
	_, c, done, err := p.at(ctx, at.Path)
	if err != nil {
		return codeintel.Hover{}, err
	}
	defer done()
	return c.Hover(ctx, at)
}

// DocumentSymbols implements codeintel.Source.
func (p *Pool) DocumentSymbols(ctx context.Context, path string) ([]codeintel.Symbol, error) {
	_, c, done, err := p.at(ctx, path)
	if err != nil {
		return nil, err
	}
	defer done()
	return c.DocumentSymbols(ctx, path)
}

// IncomingCalls implements codeintel.Source.
func (p *Pool) IncomingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	_, c, done, err := p.at(ctx, at.Path)
	if err != nil {
		return nil, err
	}
	defer done()
	return c.IncomingCalls(ctx, at)
}

// OutgoingCalls implements codeintel.Source.
func (p *Pool) OutgoingCalls(ctx context.Context, at codeintel.DocPos) ([]codeintel.Call, error) {
	_, c, done, err := p.at(ctx, at.Path)
	if err != nil {
		return nil, err
	}
	defer done()
	return c.OutgoingCalls(ctx, at)
}

// languages returns the entries for the languages the workspace holds,
// found again when last found more than a few seconds ago.
func (p *Pool) languages() []Server {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.found) > 5*time.Second {
		p.exts, p.markers = detect(p.ws)
		p.found = time.Now()
	}
	return present(p.table, p.exts, p.markers)
}

// someFile returns a file of the workspace with one of exts, or "".
func (p *Pool) someFile(exts map[string]string) string {
	found := ""
	p.walkFiles(exts, func(f string) bool {
		found = f
		return false
	})
	return found
}

// workspaceServers starts the servers of the workspace's languages, each
// with at least one document open (typescript-language-server knows no
// project before), and runs f on each, concurrently. The errors of
// languages with no server installed are returned apart.
func (p *Pool) workspaceServers(ctx context.Context, f func(r *running, c *lspclient.Client) error) (missing []error, err error) {
	langs := p.languages()
	if len(langs) == 0 {
		return nil, &codeintel.NoServerError{Reason: "the workspace holds no files of a language gemkit has a language server for"}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	seen := map[string]bool{}
	for _, s := range langs {
		file := p.someFile(s.Extensions)
		if file == "" {
			continue
		}
		r, err := p.serverFor(file)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		if seen[r.server.Name] {
			continue
		}
		seen[r.server.Name] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, done, err := r.acquire(ctx)
			if err == nil {
				defer done()
				r.syncOpen(c)
				if len(c.OpenDocs()) == 0 {
					err = r.open(c, file)
				}
				if err == nil {
					err = f(r, c)
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) == 0 {
		if len(missing) > 0 {
			return nil, missing[0]
		}
		return nil, &codeintel.NoServerError{Reason: "the workspace holds no files of a language gemkit has a language server for"}
	}
	if len(errs) == len(seen) {
		return missing, errs[0]
	}
	return missing, nil
}

// WorkspaceSymbols implements codeintel.Source: every language server of
// the workspace is asked.
func (p *Pool) WorkspaceSymbols(ctx context.Context, query string) ([]codeintel.Symbol, error) {
	var mu sync.Mutex
	var out []codeintel.Symbol
	_, err := p.workspaceServers(ctx, func(r *running, c *lspclient.Client) error {
		syms, err := c.WorkspaceSymbols(ctx, query)
		for err == nil && len(syms) == 0 && r.young() {
			// A server still reading the workspace may find nothing yet
			// without saying so: ask again shortly, while it is young.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
			syms, err = c.WorkspaceSymbols(ctx, query)
		}
		if errors.Is(err, codeintel.ErrUnsupported) {
			return nil
		}
		mu.Lock()
		out = append(out, syms...)
		mu.Unlock()
		return err
	})
	return out, err
}

// young reports whether the server started less than its Warmup ago.
func (r *running) young() bool {
	warmup, err := time.ParseDuration(r.server.Warmup)
	if err != nil || warmup <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.client != nil && time.Since(r.started) < warmup
}

// Diagnostics implements codeintel.Source.
func (p *Pool) Diagnostics(ctx context.Context, paths []string) ([]codeintel.FileDiagnostics, error) {
	if len(paths) == 0 {
		return p.workspaceDiagnostics(ctx)
	}
	out := make([]codeintel.FileDiagnostics, 0, len(paths))
	for _, path := range paths {
		_, c, done, err := p.at(ctx, path)
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, diagWait)
		ds, _ := c.Diagnostics(wctx, path)
		cancel()
		done()
		out = append(out, codeintel.FileDiagnostics{Path: path, Diagnostics: ds})
	}
	return out, nil
}

// workspaceDiagnostics collects what every server of the workspace has
// published for the workspace's files, once their first load is done
// and their publishing has settled.
func (p *Pool) workspaceDiagnostics(ctx context.Context) ([]codeintel.FileDiagnostics, error) {
	var mu sync.Mutex
	byPath := map[string][]codeintel.Diagnostic{}
	_, err := p.workspaceServers(ctx, func(r *running, c *lspclient.Client) error {
		wctx, cancel := context.WithTimeout(ctx, diagWait)
		defer cancel()
		c.WaitIdle(wctx)
		sctx, scancel := context.WithTimeout(ctx, settleMax)
		c.Settle(sctx, settleQuiet)
		scancel()
		var pulled map[string][]codeintel.Diagnostic
		if c.Offers("diagnosticProvider") {
			// Published diagnostics may be older than the server's view
			// (gopls publishes a change's effect on other packages a
			// second or more later, and what it found at start-up after
			// a file was given to it): ask for the current ones of the
			// open files, the files with problems, and the workspace's
			// other files of the language, up to maxPull.
			pulled = p.pullAll(wctx, r, c)
		} else {
			for _, d := range c.OpenDocs() {
				c.Diagnostics(wctx, d)
			}
		}
		all := c.AllDiagnostics()
		for path, ds := range pulled {
			all[path] = ds
		}
		mu.Lock()
		defer mu.Unlock()
		for path, ds := range all {
			if !fsutil.Within(p.ws, path) {
				continue
			}
			if _, err := os.Stat(path); err != nil {
				continue
			}
			byPath[path] = append(byPath[path], ds...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]codeintel.FileDiagnostics, 0, len(byPath))
	for path, ds := range byPath {
		out = append(out, codeintel.FileDiagnostics{Path: path, Diagnostics: ds})
	}
	slices.SortFunc(out, func(a, b codeintel.FileDiagnostics) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// maxPull bounds the files whose diagnostics are asked for at once for
// the workspace's.
const maxPull = 200

// pullAll asks c for the current diagnostics of the workspace's files of
// its language (see workspaceDiagnostics), a few at a time.
func (p *Pool) pullAll(ctx context.Context, r *running, c *lspclient.Client) map[string][]codeintel.Diagnostic {
	seen := map[string]bool{}
	var files []string
	add := func(f string) {
		if !seen[f] && len(files) < maxPull && fsutil.Within(p.ws, f) {
			seen[f] = true
			files = append(files, f)
		}
	}
	for _, f := range c.OpenDocs() {
		add(f)
	}
	for f := range c.AllDiagnostics() {
		add(f)
	}
	p.walkFiles(r.server.Extensions, func(f string) bool {
		add(f)
		return len(files) < maxPull
	})
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	out := map[string][]codeintel.Diagnostic{}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if ds, ok := c.Diagnostics(ctx, f); ok {
					mu.Lock()
					out[f] = ds
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range files {
		work <- f
	}
	close(work)
	wg.Wait()
	return out
}

// walkFiles calls f with the workspace's files with one of exts (no
// hidden folders, no dependencies' or build folders), until it returns
// false or maxDetect entries were looked at.
func (p *Pool) walkFiles(exts map[string]string, f func(string) bool) {
	seen := 0
	filepath.WalkDir(p.ws, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > maxDetect {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if path != p.ws && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if _, ok := exts[strings.ToLower(filepath.Ext(path))]; ok && d.Type().IsRegular() {
			if !f(path) {
				return filepath.SkipAll
			}
		}
		return nil
	})
}

// Changed implements codeintel.Source: a running server gets the new
// text of a file it has open, and hears of the others; a server not
// running is not started for a change on disk, but is for a text given
// (the caller wants the server to see it: an edit's old text).
func (p *Pool) Changed(ctx context.Context, changes []codeintel.Change) error {
	for _, ch := range changes {
		if ch.Text != nil {
			r, err := p.serverFor(ch.Path)
			if err != nil {
				return err
			}
			c, done, err := r.acquire(ctx)
			if err != nil {
				return err
			}
			_, err = c.Set(ch.Path, r.server.languageID(ch.Path), *ch.Text)
			if err == nil {
				r.mu.Lock()
				r.used[ch.Path] = time.Now()
				r.mu.Unlock()
			}
			done()
			if err != nil {
				return err
			}
			continue
		}
		r := p.runningFor(ch.Path)
		if r == nil {
			continue
		}
		r.mu.Lock()
		c := r.client
		r.mu.Unlock()
		if c == nil {
			continue
		}
		lang := r.server.languageID(ch.Path)
		switch {
		case slices.Contains(c.OpenDocs(), ch.Path):
			if _, err := c.Reload(ch.Path, lang); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if _, err := os.Stat(ch.Path); errors.Is(err, fs.ErrNotExist) {
				c.Watched([]lspclient.FileEvent{{Path: ch.Path, Type: 3}})
			}
		default:
			typ := 2
			if _, err := os.Stat(ch.Path); errors.Is(err, fs.ErrNotExist) {
				typ = 3
			}
			c.Watched([]lspclient.FileEvent{{Path: ch.Path, Type: typ}})
		}
	}
	return nil
}

// runningFor returns the entry of the server that serves path, if one
// was started.
func (p *Pool) runningFor(path string) *running {
	ext := strings.ToLower(filepath.Ext(path))
	ch, _, err := choose(p.table, ext, p.look)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[ch.server.Name]
}

// watchSink passes the workspace watcher's reports to the running
// servers.
type watchSink struct{ p *Pool }

func (s watchSink) Focus(path string, _ *ide.Cursor, _ string) { s.p.onDisk(path) }

func (s watchSink) Delete(path string) { s.p.onDisk(path) }

// onDisk passes a change the watcher saw on disk to the running server
// of the file: sent again when open, told of otherwise. A text given by
// Changed (an edit's old text, for a moment) is kept: it stands until
// its giver reloads it.
func (p *Pool) onDisk(path string) {
	r := p.runningFor(path)
	if r == nil {
		return
	}
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	if c == nil {
		return
	}
	if slices.Contains(c.OpenDocs(), path) {
		if _, err := c.Open(path, r.server.languageID(path)); err == nil {
			return
		}
	}
	typ := 2
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		typ = 3
	}
	c.Watched([]lspclient.FileEvent{{Path: path, Type: typ}})
}

var _ codeintel.Source = (*Pool)(nil)
