package langserver

import (
	"context"

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
