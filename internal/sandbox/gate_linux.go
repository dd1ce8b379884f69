package sandbox

import (
	"context"
	"fmt"
	"os"
	"sync"

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

// startWord is one attempt's word to its child on child.GateFD: Go once
// the child is inside the run's cgroup and the Command's gate (if any)
// has passed, or the end of the pipe when either failed. The child sets
// up the sandbox meanwhile. Moving a process into a cgroup waits for a
// grace period of the kernel's RCU (the write lock of the cgroups'
// threadgroup semaphore): milliseconds, which then overlap the child's
// set-up instead of preceding it, while the tool still starts inside
// its cgroup.
type startWord struct {
	r, w *os.File
	// added is the outcome of moving the child into its cgroup, sent
	// once (nil without a cgroup); wait keeps it.
	added    chan error
	waitOnce sync.Once
	addErr   error
}

// wait waits for the move into the cgroup to end and returns its error.
func (sw *startWord) wait() error {
	sw.waitOnce.Do(func() { sw.addErr = <-sw.added })
	return sw.addErr
}

func newStartWord() (*startWord, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &startWord{r: r, w: w, added: make(chan error, 1)}, nil
}

// send moves the child pid into cg (when there is one), then waits for
// g (when there is one), and says Go to the child only if both passed.
func (sw *startWord) send(cg *cgroup, pid int, g *gate) {
	go func() {
		defer sw.w.Close()
		var err error
		if cg != nil {
			err = cg.add(pid)
		}
		sw.added <- err
		if err != nil {
			return
		}
		if g != nil {
			<-g.done
			if g.err != nil {
				return
			}
		}
		_, _ = sw.w.Write([]byte{child.Go})
	}()
}

// close closes both ends, for a child that never started.
func (sw *startWord) close() {
	sw.r.Close()
	sw.w.Close()
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
