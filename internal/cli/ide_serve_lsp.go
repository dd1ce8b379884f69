package cli

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/companion"
	"github.com/gemkit/gemkit/ide/lspserver"
)

// runIDEServeLSP is `gemkit ide serve --editor lsp`: the companion starts
// once the language client's initialize has said where its workspace is
// and which process it is (unless --workspace and --ide-pid said so), and
// stops when the client exits or its stream ends.
func runIDEServeLSP(ctx context.Context, a *app, o serveOptions, cfg companion.Config, pidGiven, wsGiven bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The companion has a context of its own: the client's shutdown
	// request ends it while the language server waits for exit.
	compCtx, compCancel := context.WithCancel(ctx)
	defer compCancel()
	// shutDown is set once the client's shutdown request has stopped the
	// companion: its end then does not end gemkit before exit.
	var shutDown atomic.Bool
	var stopCompanion func() error
	// The editor owns both ends of stdout and stderr: once it is killed,
	// a write there (a reply, the log line saying the client went) would
	// end gemkit by SIGPIPE before it removes its discovery file. Ignored,
	// the write fails with EPIPE and the shutdown goes on.
	signal.Ignore(syscall.SIGPIPE)
	// resolve applies what initialize said, unless the flags said it.
	resolve := func(in lspserver.Init) (pid int, workspace []string) {
		pid, workspace = cfg.PID, cfg.Workspace
		if !wsGiven && len(in.Workspace) > 0 {
			workspace = in.Workspace
		}
		if !pidGiven && in.ProcessID > 0 {
			pid = in.ProcessID
		}
		return pid, workspace
	}
	ls := lspserver.New(a.In, a.Out, lspserver.Options{
		Logger: a.log, FixedWorkspace: wsGiven, Version: buildVersion(),
		// The servers an editor starts per language or root share one
		// companion (one discovery file, one context).
		Group: func(in lspserver.Init) string {
			pid, workspace := resolve(in)
			return lspserver.GroupPath(cfg.DiscoveryDir, pid, workspace)
		},
		// Answered only once the discovery and lock files are gone: lsp-mode
		// kills its server right after it sends exit.
		Shutdown: func() {
			shutDown.Store(true)
			_ = stopCompanion()
		},
	})
	cfg.Editor = ls
	// The companion starts on the client's reading goroutine while a
	// signal may end this one: mu orders the two, so that a companion
	// once started is always waited for (it removes its discovery file
	// as it stops) and none starts after the end has begun.
	var (
		mu                sync.Mutex
		launched, stopped bool
		serveErr          error
	)
	serveDone := make(chan struct{})
	start := func(in lspserver.Init) (companion.Events, error) {
		// Called once: on initialize, or when this server takes over
		// from the one that led its group.
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return nil, errors.New("gemkit is stopping")
		}
		cfg.PID, cfg.Workspace = resolve(in)
		if o.ideName == ide.DefaultIDEName && o.displayName == ide.DefaultIDEDisplayName && in.ClientName != "" {
			cfg.IDEInfo = ide.IDEInfo{Name: strings.ToLower(strings.Fields(in.ClientName)[0]), DisplayName: in.ClientName}
		}
		srv, err := companion.New(cfg)
		if err != nil {
			return nil, err
		}
		launched = true
		go func() {
			serveErr = srv.Serve(compCtx)
			close(serveDone)
		}()
		select {
		case <-srv.Ready():
		case <-serveDone:
			if serveErr == nil {
				serveErr = errors.New("the companion stopped before it was ready")
			}
			return nil, serveErr
		}
		fmt.Fprintf(a.Err, "gemkit: IDE companion serving %s for %s (discovery file %s)\n", srv.URL(), strings.Join(cfg.Workspace, ", "), srv.DiscoveryPath())
		if srv.ClaudePort() != 0 {
			fmt.Fprintf(a.Err, "gemkit: Claude Code endpoint ws://127.0.0.1:%d (lock file %s)\n", srv.ClaudePort(), srv.ClaudeLockPath())
		}
		return srv, nil
	}
	// stopCompanion ends the companion, if one started, and waits until
	// it has cleaned up; stop ends gemkit too.
	stopCompanion = func() error {
		compCancel()
		mu.Lock()
		stopped = true
		l := launched
		mu.Unlock()
		if !l {
			return nil
		}
		<-serveDone
		if serveErr != nil {
			return withExitCode(ExitError, serveErr)
		}
		return nil
	}
	stop := func() error {
		cancel()
		return stopCompanion()
	}
	clientDone := make(chan error, 1)
	go func() { clientDone <- ls.Run(ctx, start) }()

	var clientErr error
	companionDone := serveDone
wait:
	for {
		select {
		case clientErr = <-clientDone:
			break wait
		case <-companionDone: // the client's shutdown, a signal, or the editor process ended
			if shutDown.Load() {
				companionDone = nil // stopped by shutdown: exit comes next
				continue
			}
			err := stop()
			<-clientDone // Run returns once it has put back the saved files it holds
			return err
		case <-ctx.Done(): // a signal
			err := stop()
			<-clientDone
			return err
		}
	}
	// The client has gone: shut down cleanly.
	if err := stop(); err != nil {
		return err
	}
	if errors.Is(clientErr, lspserver.ErrNoShutdown) {
		// LSP: exit without shutdown ends the server with code 1.
		return withExitCode(ExitNo, clientErr)
	}
	if clientErr != nil {
		return withExitCode(ExitError, clientErr)
	}
	return nil
}
