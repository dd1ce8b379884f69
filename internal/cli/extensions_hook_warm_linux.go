package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/exthook"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/treewatch"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// warmServeFlag is the hidden flag of `gemkit extensions hook` that
// makes it a hook's warm server (exthook.Serve), with the key it serves.
const warmServeFlag = "warm-serve"

// warmClient is a cold run of a hook that leaves a warm sandbox for
// the next run (the next run's client is package hookclient).
type warmClient struct {
	a       *app
	session *exthook.Session
	key     string
	args    []string
}

// warmHook is the warm side of h's run, or nil where there is none: a
// run in a test's process (Run, not Main), streams that are not the
// process's descriptors, or no session to bind a warm sandbox to.
func warmHook(a *app, h *exthook.Hook) *warmClient {
	if a.executable == nil || a.args == nil || slices.Contains(a.args, "--") {
		return nil
	}
	_, ok1 := a.In.(*os.File)
	_, ok2 := a.Out.(*os.File)
	_, ok3 := a.Err.(*os.File)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	s, err := exthook.FindSession()
	if err != nil {
		a.log.Debug("hook: no warm sandbox", "err", err)
		return nil
	}
	id, err := exthook.Identity(s, h.Workspace, h.Environ, a.args)
	if err != nil {
		return nil
	}
	return &warmClient{a: a, session: s, key: exthook.Key(id), args: a.args}
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

// serveWarmHook is the warm server of lh's runs: key must be its run's
// as this process finds it (the run that started it, in the same
// session), and it serves until the session ends, a run stays unclaimed
// for exthook.WarmIdle, a run is refused, or a run comes that the store
// says other things of (exthook.ErrStale: that run goes the cold way).
//
// Consent is checked ahead: the extension's folder is watched
// (treewatch), then read, and each run's check reuses that reading
// while the watch has seen nothing (the records of consent are read at
// each run). A folder that changed leaves the run to the cold way.
func serveWarmHook(ctx context.Context, cmd *cobra.Command, a *app, lh *loadedHook, name, label, key string, done func(time.Time, exthook.Result)) error {
	h := lh.h
	s, err := exthook.SessionFromFD(os.NewFile(3, "session"))
	if err != nil {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
	}
	args := slices.Clone(a.args)
	if i := slices.Index(args, "--"+warmServeFlag); i >= 0 && i+1 < len(args) {
		args = slices.Delete(args, i, i+2)
	}
	id, err := exthook.Identity(s, h.Workspace, h.Environ, args)
	if err != nil || exthook.Key(id) != key {
		return withExitCode(ExitNo, errors.New("warm hook server: the run it was started for is not this one"))
	}
	fp, err := h.Fingerprint()
	if err != nil {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
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
	// The folder is watched before it is read: a change after the
	// reading began is an event. An extension with links out of its
	// folder is read at each run (what they lead to is not in the tree).
	var checked *checkedFiles
	var watch *treewatch.Watch
	if w, err := treewatch.New(lh.ext.Dir); err == nil {
		watch = w
		defer watch.Close()
		if now, err := lh.st.CheckFiles(lh.ext.Dir); len(now.LinksOut) == 0 && (err == nil || extension.Unbindable(err)) {
			checked = &checkedFiles{content: now, err: err}
		}
	} else {
		a.log.Debug("hook: the extension's folder is not watched", "err", err)
	}
	h.Gate = func(context.Context) error {
		if checked != nil && !watch.Changed() {
			return lh.consent(a, checked)
		}
		return lh.consent(a, nil)
	}
	// The store's files and folders that loadHook reads are watched
	// too, then read again: while neither watch has seen anything, the
	// store says what it said then, and a claim does not read it again.
	var names *treewatch.Names
	if watch != nil {
		names = storeWatch(cmd, a, lh, name, label, fp)
		if names != nil {
			defer names.Close()
		}
	}
	check := &storeCheck{tree: watch, names: names, workspace: h.Workspace, fp: fp, reload: func() (string, error) {
		now, err := loadHook(cmd, a, name, label)
		if err != nil {
			return "", err
		}
		return now.h.Fingerprint()
	}}
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
	srv := &exthook.Server{Hook: h, Launcher: &sandbox.Launcher{}, Listener: ln, Identity: id, Idle: exthook.WarmIdle, Fresh: check.fresh, Done: done}
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, exthook.ErrStale) {
		return withExitCode(ExitNo, fmt.Errorf("warm hook server: %w", err))
	}
	return nil
}

// storeWatch watches every file and folder of the store that loadHook
// reads for lh (the extensions folder's entries, the hook's entry, the
// folder of its settings and their .env, the records of consent and of
// the switch), then reads them again: the watch is returned only if
// that reading says what fp (lh's fingerprint) says. The extension's
// own folder is watched apart (treewatch.New), before: that reading
// comes after both watches, so a change since lh was read is either
// seen by it or an event. A hook that may write
// reads every installed extension's entry (installedFolders): it is
// not watched, and read again at each claim, as is everything when a
// watch cannot be placed.
func storeWatch(cmd *cobra.Command, a *app, lh *loadedHook, name, label, fp string) *treewatch.Names {
	if len(lh.h.ReadOnly) > 0 {
		return nil
	}
	settings := lh.in.UserSettingsDir()
	listed := []string{lh.st.Dir(), lh.in.Entry}
	if settings != lh.in.Entry {
		listed = append(listed, settings)
	}
	files := append(lh.st.ChoiceFiles(), filepath.Join(settings, ".env"))
	w, err := treewatch.WatchNames(listed, files)
	if err != nil {
		a.log.Debug("hook: the store is not watched", "err", err)
		return nil
	}
	now, err := loadHook(cmd, a, name, label)
	if err != nil {
		w.Close()
		return nil
	}
	if got, err := now.h.Fingerprint(); err != nil || got != fp {
		w.Close()
		return nil
	}
	return w
}

// storeCheck is a warm server's check, at each claim, that the store
// and the extension's folder say of the hook what they said when its
// sandbox was set up (fp, its fingerprint).
type storeCheck struct {
	tree      *treewatch.Watch // the extension's folder, or nil
	names     *treewatch.Names // the store's files (storeWatch), or nil
	workspace string
	fp        string
	// reload reads the hook from the store again, and is its
	// fingerprint; reads counts its calls.
	reload func() (string, error)
	reads  atomic.Int32
}

// fresh is nil while the sandbox set up ahead is still the run's: the
// watches have seen nothing (the store is not read again then), or
// the store read again says the same.
func (c *storeCheck) fresh() error {
	if c.tree != nil && c.tree.Changed() {
		return errors.New("the extension's folder changed")
	}
	if c.names != nil && !c.names.Changed() {
		if ws, err := os.Getwd(); err == nil && ws == c.workspace {
			return nil
		}
	}
	c.reads.Add(1)
	got, err := c.reload()
	if err != nil {
		return err
	}
	if got != c.fp {
		return errors.New("the extension store says other things of the hook now")
	}
	return nil
}
