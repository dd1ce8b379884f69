// The workspace as the servers see it: the languages it holds, its files,
// and every server of those languages started together.

package langserver

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

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
