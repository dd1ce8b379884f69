package lspserver

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// Serve is the whole life of `gemkit ide serve --editor lsp`: the
// companion of cfg, with s as its [companion.Editor], starts once the client's
// initialize has said where its workspace is and which process it is,
// is shared by the servers of one editor and workspace (group.go), and
// stops on the client's shutdown request (before it is answered: some
// clients kill their server right after exit), when the client's stream
// ends, when ctx ends, or by itself when the client's process ends
// (cfg.WatchPID). Serve sets [Options.Group], when it is nil, and
// [Options.Shutdown] (after the one given) for its own use.
//
// What initialize tells fills what cfg leaves open: cfg.PID when 0 (else
// the parent process), the workspace unless [Options.FixedWorkspace]
// (cfg.Workspace then stands; it is also the fallback when the client
// opened no folder), and the editor's name from clientInfo unless
// cfg.IDEInfo names one other than gemkit's default.
//
// Serve returns once the companion, if it started, has removed its
// discovery and lock files: nil after shutdown and exit or when the
// stream ended, [ErrNoShutdown] after exit alone, else why the client or
// the companion failed. A program serving on its own stdout should
// catch SIGPIPE (signal.Notify; ignored, it would stay ignored in the
// programs it starts): the editor owns both ends of stdout and stderr,
// and a write there once it is killed must not end the program before
// its files are removed.
func (s *Server) Serve(ctx context.Context, cfg companion.Config) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg.Editor = s
	l := newLife(ctx, cfg, s.opts.FixedWorkspace)
	if s.opts.Group == nil {
		s.opts.Group = l.group
	}
	s.opts.Shutdown = l.onShutdown(s.opts.Shutdown)
	clientDone := make(chan error, 1)
	go func() { clientDone <- s.Run(ctx, l.start) }()
	companionDone := l.done
	for {
		select {
		case err := <-clientDone: // the client has gone: stop cleanly
			if serr := l.stop(); serr != nil {
				return serr
			}
			return err
		case <-companionDone: // the client's shutdown, or its process ended
			if l.shutDown.Load() {
				companionDone = nil // stopped by shutdown: exit comes next
				continue
			}
		case <-ctx.Done(): // ctx ended
		}
		cancel()
		err := l.stop()
		<-clientDone // Run returns once it has put back the saved files it holds
		return err
	}
}

// life is the companion of one language server: started at most once,
// on initialize or when the server takes over its group, and always
// waited for once started, since it removes its discovery file as it
// stops.
type life struct {
	cfg            companion.Config
	fixedWorkspace bool
	pidGiven       bool
	nameGiven      bool

	// ctx is the companion's: the client's shutdown request ends it
	// while the server waits for exit.
	ctx    context.Context
	cancel context.CancelFunc
	// shutDown is set once the client's shutdown request has stopped the
	// companion: its end then does not end Serve before exit.
	shutDown atomic.Bool

	// The companion starts on the client's reading goroutine while ctx
	// may end on another: mu orders the two, so that a companion once
	// started is always waited for and none starts after the end has
	// begun.
	mu                sync.Mutex
	launched, stopped bool
	err               error         // Serve's, once done is closed
	done              chan struct{} // closed once the companion has stopped
}

func newLife(ctx context.Context, cfg companion.Config, fixedWorkspace bool) *life {
	l := &life{
		cfg:            cfg,
		fixedWorkspace: fixedWorkspace,
		pidGiven:       cfg.PID != 0,
		nameGiven:      cfg.IDEInfo != (ide.IDEInfo{}) && cfg.IDEInfo != ide.IDEInfo{Name: ide.DefaultIDEName, DisplayName: ide.DefaultIDEDisplayName},
		done:           make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(ctx)
	return l
}

// resolve applies what initialize said, unless cfg said it.
func (l *life) resolve(in Init) (pid int, workspace []string) {
	pid, workspace = l.cfg.PID, l.cfg.Workspace
	if !l.fixedWorkspace && len(in.Workspace) > 0 {
		workspace = in.Workspace
	}
	if !l.pidGiven && in.ProcessID > 0 {
		pid = in.ProcessID
	}
	if pid == 0 {
		pid = os.Getppid()
	}
	return pid, workspace
}

// group is the socket of the group of the client's editor and workspace:
// the servers an editor starts per language or root share one companion
// (one discovery file, one context).
func (l *life) group(in Init) string {
	pid, workspace := l.resolve(in)
	dir := l.cfg.DiscoveryDir
	if dir == "" {
		dir = discovery.Dir()
	}
	return GroupPath(dir, pid, workspace)
}

// start is the StartFunc: called once, on initialize, or when this
// server takes over from the one that led its group.
func (l *life) start(in Init) (companion.Events, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil, errors.New("gemkit is stopping")
	}
	cfg := l.cfg
	cfg.PID, cfg.Workspace = l.resolve(in)
	if !l.nameGiven && in.ClientName != "" {
		cfg.IDEInfo = ide.IDEInfo{Name: strings.ToLower(strings.Fields(in.ClientName)[0]), DisplayName: in.ClientName}
	}
	srv, done, err := companion.Start(l.ctx, cfg)
	if err != nil {
		return nil, err
	}
	l.launched = true
	go func() {
		l.err = <-done
		close(l.done)
	}()
	return srv, nil
}

// onShutdown is Options.Shutdown: the companion stops, its files
// removed, before the client's shutdown is answered; then next, if set.
func (l *life) onShutdown(next func()) func() {
	return func() {
		l.shutDown.Store(true)
		_ = l.stop()
		if next != nil {
			next()
		}
	}
}

// stop ends the companion, if one started, and waits until it has
// cleaned up; none starts afterwards.
func (l *life) stop() error {
	l.cancel()
	l.mu.Lock()
	l.stopped = true
	launched := l.launched
	l.mu.Unlock()
	if !launched {
		return nil
	}
	<-l.done
	return l.err
}
