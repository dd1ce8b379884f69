package companion

import (
	"context"
	"errors"
)

// Start makes a [Server] of cfg and serves it ([Server.Serve]) on a
// goroutine of its own until ctx ends, returning once it is ready: the first
// step of every front-end, which then hands the Server to its editor. done
// receives Serve's result once it returns, after the discovery file is
// removed. The error is [New]'s, or Serve's when it stopped before it was
// ready.
func Start(ctx context.Context, cfg Config) (srv *Server, done <-chan error, err error) {
	s, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	select {
	case <-s.Ready():
		return s, served, nil
	case err := <-served:
		select {
		case <-s.Ready(): // ready, then stopped at once (ctx had ended)
			served <- err
			return s, served, nil
		default:
		}
		if err == nil {
			err = errors.New("companion: stopped before it was ready")
		}
		return nil, nil, err
	}
}
