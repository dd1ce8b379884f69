package sandbox

import (
	"context"
	"fmt"
	"os"

	"github.com/gemkit/gemkit/internal/sandbox/child"
)

// gate runs a Command's Gate once for all the attempts of a start (with
// a user namespace, then without), and tells each attempt's child
// whether to exec.
type gate struct {
	done chan struct{}
	err  error
}

// A Gate that panics has failed: its panic is Start's error, not the
// end of gemkit (and of the other servers it runs), and never leaves the
// gate done without an error, which would let the child exec.
func runGate(ctx context.Context, f func(context.Context) error) *gate {
	g := &gate{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		defer func() {
			if v := recover(); v != nil {
				g.err = fmt.Errorf("sandbox: the check before the program's start failed: panic: %v", v)
			}
		}()
		g.err = f(ctx)
	}()
	return g
}

// pipe returns the end a child reads on child.GateFD: child.Go arrives
// there once the gate has passed, or the pipe ends when it failed. The
// writer waits for the gate, which ends with ctx at the latest.
func (g *gate) pipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		<-g.done
		if g.err == nil {
			_, _ = w.Write([]byte{child.Go})
		}
		w.Close()
	}()
	return r, nil
}

// failed is the gate's error once it has returned one; nil while it
// runs, when it passed, and for no gate.
func (g *gate) failed() error {
	if g == nil {
		return nil
	}
	select {
	case <-g.done:
		return g.err
	default:
		return nil
	}
}
