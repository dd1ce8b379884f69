package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/exthook"
	"github.com/gemkit/gemkit/internal/sandbox"
	"golang.org/x/sys/unix"
)

// warmServeFlag is the hidden flag of `gemkit extensions hook` that
// makes it a hook's warm server (exthook.Serve), with the key it serves.
const warmServeFlag = "warm-serve"

// warmClient is a run of a hook that may be served by a warm sandbox, and
// that leaves one for the next run when it runs cold.
type warmClient struct {
	a       *app
	h       *exthook.Hook
	session *exthook.Session
	dir     string
	key     string
	args    []string
	streams [3]*os.File
}

// warmHook is the warm side of h's run, or nil where there is none: a
// run in a test's process (Run, not Main), streams that are not the
// process's descriptors, or no session to bind a warm sandbox to.
func warmHook(a *app, h *exthook.Hook) *warmClient {
	if a.executable == nil || a.args == nil || slices.Contains(a.args, "--") {
		return nil
	}
	in, ok1 := a.In.(*os.File)
	out, ok2 := a.Out.(*os.File)
	errf, ok3 := a.Err.(*os.File)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	s, err := exthook.FindSession()
	if err != nil {
		a.log.Debug("hook: no warm sandbox", "err", err)
		return nil
	}
	key, err := h.Key(s, a.args)
	if err != nil {
		return nil
	}
	dir, err := exthook.WarmDir()
	if err != nil {
		a.log.Debug("hook: no warm sandbox", "err", err)
		return nil
	}
	return &warmClient{a: a, h: h, session: s, dir: dir, key: key, args: a.args, streams: [3]*os.File{in, out, errf}}
}

// run hands the run to the warm sandbox of its key, if one waits; ctx's
// end (Gemini CLI's SIGTERM at the hook's timeout) ends it.
func (w *warmClient) run(ctx context.Context) (code int, refused string, err error) {
	return exthook.WarmRun(ctx, w.dir, w.key, w.streams[0], w.streams[1], w.streams[2])
}

// leave starts the warm server of the next run: this binary again, as
// `gemkit extensions hook ... --warm-serve KEY` with this run's
// arguments, environment and folder, in a session of its own, its
// standard streams on /dev/null (Gemini CLI waits for the end of the
// hook's), and the session's pidfd as descriptor 3. Nothing else of
// this process's descriptors reaches it.
func (w *warmClient) leave(ws string) {
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	cmd := exec.Command("/proc/self/exe", append(slices.Clone(w.args), "--"+warmServeFlag, w.key)...)
	// ps shows gemkit's program, which /proc/self/exe starts.
	if exe, err := w.a.executable(); err == nil {
		cmd.Args[0] = exe
	}
	cmd.Env = os.Environ()
	cmd.Dir = ws
	cmd.ExtraFiles = []*os.File{w.session.FD}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.a.log.Debug("hook: starting its warm server", "err", err)
		return
	}
	_ = cmd.Process.Release()
}

// serveWarmHook is the warm server of h's runs: key must be h's as this
// process finds it (the run that started it, in the same session), and
// it serves until the session ends, a run stays unclaimed for
// exthook.WarmIdle, or a run is refused.
func serveWarmHook(ctx context.Context, a *app, h *exthook.Hook, key string, done func(time.Time, exthook.Result)) error {
	s, err := exthook.SessionFromFD(os.NewFile(3, "session"))
	if err != nil {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
	}
	args := slices.Clone(a.args)
	if i := slices.Index(args, "--"+warmServeFlag); i >= 0 && i+1 < len(args) {
		args = slices.Delete(args, i, i+2)
	}
	if mine, err := h.Key(s, args); err != nil || mine != key {
		return withExitCode(ExitNo, errors.New("warm hook server: the run it was started for is not this one"))
	}
	dir, err := exthook.WarmDir()
	if err != nil {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
	}
	ln, release, err := exthook.WarmListen(dir, key)
	if err != nil {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
	}
	defer release()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := s.Ended()
	go func() {
		select {
		case <-ended:
			cancel()
		case <-ctx.Done():
		}
	}()
	srv := &exthook.Server{Hook: h, Launcher: &sandbox.Launcher{}, Listener: ln, Idle: exthook.WarmIdle, Done: done}
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
	}
	return nil
}
