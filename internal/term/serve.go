package term

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/wswatch"
)

// ErrInputEnded is returned by Serve when its input ended and was not a
// terminal (standard input from /dev/null): nobody is left to answer
// diffs, so the companion stopped as soon as it had started.
var ErrInputEnded = errors.New("the input ended, so nobody can answer diffs here")

// Serve is the whole life of a companion with the terminal as its editor
// (`gemkit ide serve`): it starts the companion of cfg with f as its
// Editor, says how to reach it (Options.Watch, PrintEnv, Hint, then
// ServingText), runs f until the input ends or ctx does, and then stops
// the companion. On ctx's end (Ctrl-C, SIGTERM) the diffs still waiting
// are rejected first and the companion serves until those outcomes are
// out. It also stops when the companion does by itself (cfg.WatchPID and
// the editor's process ended). Serve returns once the companion has
// removed its discovery file: nil after a clean stop, ErrInputEnded, or
// why the companion could not start or serve.
func (f *Frontend) Serve(ctx context.Context, cfg companion.Config) error {
	cfg.Editor = f
	changed := cfg.OnClientsChange
	cfg.OnClientsChange = func() {
		f.ClientsChanged()
		if changed != nil {
			changed()
		}
	}
	srvCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	srv, done, err := companion.Start(srvCtx, cfg)
	if err != nil {
		return err
	}
	if f.opts.Clients == nil {
		f.opts.Clients = srv.Clients
	}
	f.announce(srvCtx, srv)
	frontCtx, cancelFront := context.WithCancel(ctx)
	defer cancelFront()
	ran := make(chan error, 1)
	go func() { ran <- f.Run(frontCtx, srv) }()
	select {
	case err := <-done: // the editor's process ended
		cancelFront()
		<-ran
		return err
	case err := <-ran:
		why := f.ended(ctx, err)
		stop()
		if err := <-done; err != nil {
			return err
		}
		return why
	}
}

// announce says how to reach the companion: the workspace watch, the
// export lines, the hint, and the notice Run prints first.
func (f *Frontend) announce(ctx context.Context, srv *companion.Server) {
	if f.opts.Watch {
		if err := f.watch(ctx, srv); err != nil {
			f.log.Warn("the files you save will not be sent as the open files", "err", err)
		}
	}
	if f.opts.PrintEnv {
		fmt.Fprint(f.opts.Out, discovery.ExportLines(srv.Env()))
	}
	if f.opts.Hint != "" {
		fmt.Fprint(f.opts.Out, f.opts.Hint)
	}
	var env map[string]string
	if !f.opts.PrintEnv {
		env = srv.Env()
	}
	f.Announce(ServingText(env))
}

// watch watches the workspace folders until ctx ends: with no editor to
// say which files are open, each file the person saves, in whatever
// editor, becomes the newest open file and the active one.
func (f *Frontend) watch(ctx context.Context, srv *companion.Server) error {
	w, err := wswatch.New(wswatch.Options{Roots: srv.Workspace(), Logger: f.log})
	if err != nil {
		return err
	}
	folders := "folders"
	if w.Dirs() == 1 {
		folders = "folder"
	}
	fmt.Fprintf(f.opts.Out, "  open files:     the files you save (watching %d %s; what git ignores is left out)\n", w.Dirs(), folders)
	go func() {
		if err := w.Run(ctx, srv); err != nil {
			f.log.Warn("workspace watcher stopped", "err", err)
		}
	}()
	return nil
}

// ended says why Run returned (err) and returns ErrInputEnded when the
// input ended without a terminal.
func (f *Frontend) ended(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		fmt.Fprintln(f.opts.Out, "Stopped (Ctrl-C or SIGTERM).")
	case err != nil:
		f.log.Error("terminal front-end", "err", err)
	case IsTerminal(f.opts.In):
		fmt.Fprintln(f.opts.Out, "Stopped (Ctrl-D).")
	default:
		return ErrInputEnded
	}
	return nil
}
