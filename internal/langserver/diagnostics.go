// Diagnostics of some files, or of the whole workspace once its servers
// have loaded it and their publishing has settled.

package langserver

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// diagnostics are the current diagnostics of paths, or of the whole
// workspace with none (diagnostics/get).
func (p *Pool) diagnostics(ctx context.Context, paths []string) ([]codeintel.FileDiagnostics, error) {
	// A file written just before the question, which the watcher has
	// not reported yet (it lets a file settle first), is told to the
	// servers now: its effect on the files asked about is waited for.
	if p.watcher != nil {
		p.watcher.Sync(ctx)
	}
	if len(paths) == 0 {
		return p.workspaceDiagnostics(ctx)
	}
	out := make([]codeintel.FileDiagnostics, 0, len(paths))
	for _, path := range paths {
		r, c, done, err := p.at(ctx, path)
		if err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, diagWait)
		ds, stale := c.Diagnostics(wctx, path)
		cancel()
		done()
		out = append(out, codeintel.FileDiagnostics{Path: path, Diagnostics: ds, Stale: stale, Fix: p.moduleFix(r.server, path, ds)})
	}
	return out, nil
}

// workspaceDiagnostics collects what every server of the workspace has
// published for the workspace's files, once their first load is done
// and their publishing has settled.
func (p *Pool) workspaceDiagnostics(ctx context.Context) ([]codeintel.FileDiagnostics, error) {
	var mu sync.Mutex
	byPath := map[string][]codeintel.Diagnostic{}
	fixes := map[string]string{}
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
			if fix := p.moduleFix(r.server, path, ds); fix != "" {
				fixes[path] = fix
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]codeintel.FileDiagnostics, 0, len(byPath))
	for path, ds := range byPath {
		out = append(out, codeintel.FileDiagnostics{Path: path, Diagnostics: ds, Fix: fixes[path]})
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
				// Only asked: a file the server answers it does not
				// check (gopls: one its build constraints leave out) is
				// never published either, and is not waited for.
				if ds, err := c.Pull(ctx, f); err == nil {
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
