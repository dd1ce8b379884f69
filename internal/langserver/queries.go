// The questions of codeintel.Source about one position or one file, and
// the workspace symbols every server of the workspace answers together.

package langserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/lspclient"
)

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

// Confined reports that the servers answering run in gemkit's sandbox,
// each in its profile (codeintel.Confined): they read only the workspace
// and their read-only folders, never a closed path.
func (p *Pool) Confined() bool { return true }
