package lspsource

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/wswatch"
)

// Options configure a Finder. The zero value finds companions as the real
// Gemini CLI does from this process's environment.
type Options struct {
	// Discovery is how companions are found: its Cwd is set to the
	// workspace; the rest (discovery folder, environment, editor pid)
	// defaults as for client.Discover.
	Discovery client.Options
	// Recheck is how long a search that found no editor is trusted
	// before the next; default 2 s.
	Recheck time.Duration
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
}

// Finder finds the editor that serves a workspace through a gemkit
// companion and lends its language clients. Find is New's editor: cheap
// when nothing changed (a stat of the
// companion's discovery file), a new search when its companion went away,
// and at most one search per Recheck while none is found.
type Finder struct {
	ws   string
	opts Options
	log  *slog.Logger
	http *http.Client

	mu      sync.Mutex
	cur     *Companion
	clients *Clients  // cur's
	curFile string    // the discovery file of cur ("" when found by the environment)
	checked time.Time // when the last search found nothing
	// refused holds the companions whose editor lends no clients (the
	// terminal front-end, an LSP client's), by URL and authorization:
	// not asked again. The token is part of the key, since a companion
	// started later may be given the port of one that has gone.
	refused map[string]bool
	// stopWatch ends the workspace's watcher, once one runs.
	stopWatch func()
}

// NewFinder returns the Finder of the editor serving workspace (an
// absolute folder).
func NewFinder(workspace string, o Options) *Finder {
	if o.Recheck <= 0 {
		o.Recheck = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Discovery.Cwd = workspace
	tr := &http.Transport{
		// The companion is on loopback: no proxy, as the real CLI
		// (createProxyAwareFetch in gemini-cli 0.61.0
		// packages/core/src/ide/ide-connection-utils.ts).
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	return &Finder{ws: workspace, opts: o, log: o.Logger, http: &http.Client{Transport: tr}, refused: map[string]bool{}}
}

// Find returns the editor's clients, nil when no editor serving the
// workspace lends them now.
func (f *Finder) Find(ctx context.Context) *Clients {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.cur; s != nil {
		stale := s.gone.Load()
		if f.curFile != "" && !stale {
			if _, err := os.Stat(f.curFile); err != nil {
				stale = true
			}
		}
		if s.lends.Load() < 0 {
			f.refused[s.url+" "+s.auth] = true
			stale = true
		}
		if !stale {
			return f.clients
		}
		f.log.Debug("the editor's companion went away", "url", s.url)
		f.cur, f.curFile, f.clients = nil, "", nil
		f.checked = time.Time{}
	}
	if time.Since(f.checked) < f.opts.Recheck {
		return nil
	}
	f.cur, f.curFile = f.search(ctx)
	if f.cur == nil {
		f.checked = time.Now()
		return nil
	}
	f.clients = &Clients{Conn: f.cur, Name: f.cur.editor, Unsaved: true}
	f.watch()
	return f.clients
}

// Companion is the companion whose editor lends its clients now (Find's),
// nil when none does.
func (f *Finder) Companion(ctx context.Context) *Companion {
	if f.Find(ctx) == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

// Close stops the workspace's watcher and releases the idle connections
// to the companion.
func (f *Finder) Close() {
	f.mu.Lock()
	stop := f.stopWatch
	f.stopWatch = func() {}
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
	f.http.CloseIdleConnections()
}

// watch starts, once, a watcher of the workspace (internal/wswatch, as
// gemkit's own servers have) that tells the editor of the files written
// on disk, by an agent that writes them itself (Gemini CLI's write_file):
// the editor reloads their buffers, and its clients hear of the others,
// which they would not otherwise (Neovim on Linux watches no files for
// its servers). The caller holds f.mu.
func (f *Finder) watch() {
	if f.stopWatch != nil {
		return
	}
	f.stopWatch = func() {}
	w, err := wswatch.New(wswatch.Options{Roots: []string{f.ws}, Logger: f.log})
	if err != nil {
		f.log.Debug("files written in the workspace reach the editor's clients only when asked about", "err", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx, changes{f})
	}()
	f.stopWatch = func() {
		cancel()
		<-done
		w.Close()
	}
}

// changes passes what the watcher sees to the editor.
type changes struct{ f *Finder }

func (c changes) Focus(path string, _ *ide.Cursor, _ string) { c.f.changed(path) }
func (c changes) Delete(path string)                         { c.f.changed(path) }

// changed tells the current editor that path changed on disk.
func (f *Finder) changed(path string) {
	f.mu.Lock()
	s := f.cur
	f.mu.Unlock()
	if s == nil || s.gone.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Call(ctx, ide.MethodLSPChanged, ide.LSPChangedParams{Paths: []string{path}}, nil); err != nil {
		f.log.Debug("telling the editor of a file changed on disk", "path", path, "err", err)
	}
}

// candidate is one companion to ask.
type candidate struct {
	host   string
	port   int
	token  string
	file   string
	editor string
}

// search looks for a companion whose workspace holds the workspace and
// whose editor lends language clients: first the one the real CLI would
// connect to, then any other serving the workspace.
func (f *Finder) search(ctx context.Context) (*Companion, string) {
	plan, err := client.Discover(ctx, f.opts.Discovery)
	if err != nil {
		f.log.Debug("looking for the editor's companion", "err", err)
		return nil, ""
	}
	var cands []candidate
	editor := "the editor"
	if plan.IDE != nil && plan.IDE.DisplayName != "" {
		editor = plan.IDE.DisplayName
	}
	if plan.Workspace == nil {
		file := ""
		if plan.Choice != nil && plan.Choice.Chosen != nil {
			file = plan.Choice.Chosen.Path
		}
		for _, ep := range plan.Endpoints {
			if ep.Transport == "http" && ep.Port > 0 && ep.Port <= 65535 && ep.Token != "" {
				fl := file
				if ep.Source != client.FromFile {
					fl = ""
				}
				cands = append(cands, candidate{host: ep.Host, port: ep.Port, token: ep.Token, file: fl, editor: editor})
			}
		}
	}
	if plan.Choice != nil {
		for _, c := range plan.Choice.Serving() {
			if c.Contents.Port <= 0 || c.Contents.Port > 65535 || c.Contents.AuthToken == nil {
				continue
			}
			name := "the editor"
			if c.Contents.IDEInfo != nil && c.Contents.IDEInfo.DisplayName != "" {
				name = c.Contents.IDEInfo.DisplayName
			}
			cands = append(cands, candidate{host: "127.0.0.1", port: c.Contents.Port, token: *c.Contents.AuthToken, file: c.Path, editor: name})
		}
	}
	seen := map[string]bool{}
	for _, c := range cands {
		if c.host == "" {
			c.host = "127.0.0.1"
		}
		url := "http://" + net.JoinHostPort(c.host, strconv.Itoa(c.port)) + ide.LSPPath
		if seen[url] || f.refused[url+" Bearer "+c.token] {
			continue
		}
		seen[url] = true
		s := &Companion{url: url, auth: "Bearer " + c.token, http: f.http, editor: c.editor}
		// One question tells whether the editor lends clients at all.
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var res ide.LSPClientsResult
		err := s.Call(pctx, ide.MethodLSPClients, ide.LSPClientsParams{}, &res)
		cancel()
		switch {
		case err == nil:
			f.log.Debug("the editor's language clients answer", "editor", c.editor, "url", url, "clients", len(res.Clients))
			return s, c.file
		case s.lends.Load() < 0:
			f.refused[url+" "+s.auth] = true
			f.log.Debug("the editor lends no language clients", "editor", c.editor, "url", url, "err", err)
		default:
			f.log.Debug("the editor's companion did not answer", "editor", c.editor, "url", url, "err", err)
		}
	}
	return nil, ""
}
