// Changes to the workspace's files, given by an editor or an agent or seen
// on disk by the watcher, passed to the running servers.

package langserver

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

// changed passes changes to the servers (lsp/changed): a running server gets the new
// text of a file it has open, and hears of the others; a server not
// running is not started for a change on disk, but is for a text given
// (the caller wants the server to see it: an edit's old text).
func (p *Pool) changed(ctx context.Context, changes []codeintel.Change) error {
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
			p.notOpen(r, c, ch.Path)
		}
	}
	return nil
}

// runningFor returns the entry of the server that serves path, if one
// was started.
func (p *Pool) runningFor(path string) *running {
	ext := strings.ToLower(filepath.Ext(path))
	ch, _, err := choose(p.table, ext, p.lookPath)
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
	p.notOpen(r, c, path)
}

// notOpen tells c of a file changed on disk that it does not have open:
// workspace/didChangeWatchedFiles; a server without
// textDocument/diagnostic is also given the file, open
// (typescript-language-server leaves that notification to tsserver's own
// watching of the disk, which notices late): its next diagnostics, asked
// of tsserver or published, are those of the new text.
func (p *Pool) notOpen(r *running, c *lspclient.Client, path string) {
	typ := 2
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		typ = 3
	}
	c.Watched([]lspclient.FileEvent{{Path: path, Type: typ}})
	if typ == 2 && !c.Offers("diagnosticProvider") && len(c.OpenDocs()) > 0 {
		if err := r.openChanged(c, path); err != nil {
			p.log.Debug("code intelligence: a changed file could not be given to its server", "path", path, "err", err)
		}
	}
}
