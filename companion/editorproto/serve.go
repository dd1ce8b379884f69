package editorproto

import (
	"context"

	"github.com/gemkit/gemkit/companion"
)

// Serve is the whole life of a companion whose editor is c (`gemkit ide
// serve --editor stdio`): it starts the companion of cfg with c as its
// Editor, tells the editor where it serves (server/ready), passes the
// editor's reports to it, and stops it when the editor closes its stream
// or ctx ends. The companion also stops by itself when cfg.WatchPID is set
// and the editor's process ends. Serve returns once the companion has
// removed its discovery file: nil after a clean stop, else why it could
// not start or serve.
func (c *Conn) Serve(ctx context.Context, cfg companion.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg.Editor = c
	srv, done, err := companion.Start(ctx, cfg)
	if err != nil {
		return err
	}
	if err := c.SendReady(Ready{Port: srv.Port(), DiscoveryFile: srv.DiscoveryPath(), Env: srv.Env(), Endpoints: Endpoints(srv)}); err != nil {
		c.log.Error("telling the editor the server is ready", "err", err)
	}
	go func() {
		if err := c.Run(ctx, srv); err != nil {
			c.log.Error("editor protocol", "err", err)
		}
		cancel() // the editor has gone: stop cleanly
	}()
	return <-done
}
