package extswitch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"golang.org/x/sys/unix"
)

// WarmClient is a cold run of a hook that leaves a warm sandbox for the
// next run (the next run's client is package hookclient).
type WarmClient struct {
	session *exthook.Session
	key     string
	args    []string
	exe     string
	log     *slog.Logger
}

// Warm is the warm side of h's run by the gemkit program exe with the
// arguments args, or nil where there is none: no session to bind a warm
// sandbox to.
func Warm(h *exthook.Hook, exe string, args []string, log *slog.Logger) *WarmClient {
	s, err := exthook.FindSession()
	if err != nil {
		log.Debug("hook: no warm sandbox", "err", err)
		return nil
	}
	id, err := exthook.Identity(s, h.Workspace, h.Environ, args)
	if err != nil {
		return nil
	}
	return &WarmClient{session: s, key: exthook.Key(id), args: args, exe: exe, log: log}
}

// Key is the key the warm server of the next run serves.
func (w *WarmClient) Key() string { return w.key }

// Leave starts the warm server of the next run: this binary again, with
// this run's arguments and serve (the flag that makes it the server,
// and Key), environment and folder ws, in a session of its own, its
// standard streams on /dev/null (Gemini CLI waits for the end of the
// hook's), and the session's pidfd as descriptor 3. Nothing else of
// this process's descriptors reaches it.
func (w *WarmClient) Leave(ws string, serve ...string) {
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	cmd := exec.Command("/proc/self/exe", append(slices.Clone(w.args), serve...)...)
	// ps shows gemkit's program, which /proc/self/exe starts.
	if w.exe != "" {
		cmd.Args[0] = w.exe
	}
	cmd.Env = os.Environ()
	cmd.Dir = ws
	cmd.ExtraFiles = []*os.File{w.session.FD}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.log.Debug("hook: starting its warm server", "err", err)
		return
	}
	_ = cmd.Process.Release()
}

// WarmServer is the warm server of a hook's runs (exthook.Server), for
// the run by the arguments Args that started it, serving Key.
type WarmServer struct {
	Hook *LoadedHook
	Args []string
	Key  string
	// Reload reads the hook from the store again.
	Reload func() (*LoadedHook, error)
	Log    *slog.Logger
	// Done is told of each run's end.
	Done func(time.Time, exthook.Result)
	// Held, when set, is asked before each run, as the cold way asks
	// it: an error refuses the run (a switched Claude Code plugin whose
	// plugin changed since consent, claudeswitch.Held, which no watch
	// of the twin's folder sees).
	Held func() error
}

// Serve serves until the session ends, a run stays unclaimed for
// exthook.WarmIdle, a run is refused, or a run comes that the store
// says other things of (exthook.ErrStale: that run goes the cold way).
// Key must be its run's as this process finds it (the run that started
// it, in the same session).
//
// Consent is checked ahead: the extension's folder is watched
// (treewatch), then read, and each run's check reuses that reading
// while the watch has seen nothing (the records of consent are read at
// each run). A folder that changed leaves the run to the cold way.
func (ws *WarmServer) Serve(ctx context.Context) error {
	h := ws.Hook.H
	s, err := exthook.SessionFromFD(os.NewFile(3, "session"))
	if err != nil {
		return fmt.Errorf("warm hook server: %w", err)
	}
	id, err := exthook.Identity(s, h.Workspace, h.Environ, ws.Args)
	if err != nil || exthook.Key(id) != ws.Key {
		return errors.New("warm hook server: the run it was started for is not this one")
	}
	fp, err := h.Fingerprint()
	if err != nil {
		return fmt.Errorf("warm hook server: %w", err)
	}
	dir, err := exthook.WarmDir()
	if err != nil {
		return fmt.Errorf("warm hook server: %w", err)
	}
	ln, release, err := exthook.WarmListen(dir, ws.Key)
	if err != nil {
		return fmt.Errorf("warm hook server: %w", err)
	}
	defer release()
	check := ws.watch(fp)
	defer check.Close()
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
	srv := &exthook.Server{Hook: h, Launcher: &sandbox.Launcher{}, Listener: ln, Identity: id, Idle: exthook.WarmIdle, Fresh: check.Fresh, Done: ws.Done}
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, exthook.ErrStale) {
		return fmt.Errorf("warm hook server: %w", err)
	}
	return nil
}

// watch places the watches of the warm server's check (StoreCheck) and
// sets the hook's Gate to reuse the extension's files as read while
// they show no change. The folder is watched before it is read: a
// change after the reading began is an event. An extension with links
// out of its folder is read at each run (what they lead to is not in
// the tree).
func (ws *WarmServer) watch(fp string) *StoreCheck {
	lh := ws.Hook
	check := &StoreCheck{Workspace: lh.H.Workspace, FP: fp, Reload: func() (string, error) {
		now, err := ws.Reload()
		if err != nil {
			return "", err
		}
		return now.H.Fingerprint()
	}}
	var checked *CheckedFiles
	if w, err := treewatch.New(lh.Ext.Dir); err == nil {
		check.Tree = w
		if now, err := lh.sw.Store.CheckFiles(lh.Ext.Dir); len(now.LinksOut) == 0 && (err == nil || extension.Unbindable(err)) {
			checked = &CheckedFiles{Content: now, Err: err}
		}
	} else {
		ws.Log.Debug("hook: the extension's folder is not watched", "err", err)
	}
	lh.H.Gate = func(context.Context) error {
		if ws.Held != nil {
			if err := ws.Held(); err != nil {
				return err
			}
		}
		if checked != nil && !check.Tree.Changed() {
			return lh.Consent(checked)
		}
		return lh.Consent(nil)
	}
	// The store's files and folders that LoadHook reads are watched too,
	// then read again: while neither watch has seen anything, the store
	// says what it said then, and a claim does not read it again.
	if check.Tree != nil {
		check.Names = WatchStore(lh, ws.Reload, fp, ws.Log)
	}
	return check
}

// WatchStore watches every file and folder of the store that LoadHook
// reads for lh (the extensions folder's entries, the hook's entry, the
// folder of its settings and their .env, the records of consent and of
// the switch), then reads them again (reload): the watch is returned
// only if that reading says what fp (lh's fingerprint) says. The
// extension's own folder is watched apart (treewatch.New), before: that
// reading comes after both watches, so a change since lh was read is
// either seen by it or an event. A hook that may write reads every
// installed extension's entry (installedFolders): it is not watched,
// and read again at each claim, as is everything when a watch cannot be
// placed.
func WatchStore(lh *LoadedHook, reload func() (*LoadedHook, error), fp string, log *slog.Logger) *treewatch.Names {
	if len(lh.H.ReadOnly) > 0 {
		return nil
	}
	st := lh.sw.Store
	settings := lh.In.UserSettingsDir()
	listed := []string{st.Dir(), lh.In.Entry}
	if settings != lh.In.Entry {
		listed = append(listed, settings)
	}
	files := append(st.ChoiceFiles(), filepath.Join(settings, ".env"))
	w, err := treewatch.WatchNames(listed, files)
	if err != nil {
		log.Debug("hook: the store is not watched", "err", err)
		return nil
	}
	now, err := reload()
	if err != nil {
		w.Close()
		return nil
	}
	if got, err := now.H.Fingerprint(); err != nil || got != fp {
		w.Close()
		return nil
	}
	return w
}

// StoreCheck is a warm server's check, at each claim, that the store
// and the extension's folder say of the hook what they said when its
// sandbox was set up (FP, its fingerprint).
type StoreCheck struct {
	Tree      *treewatch.Watch // the extension's folder, or nil
	Names     *treewatch.Names // the store's files (WatchStore), or nil
	Workspace string
	FP        string
	// Reload reads the hook from the store again, and is its
	// fingerprint; Reads counts its calls.
	Reload func() (string, error)
	Reads  atomic.Int32
}

// Fresh is nil while the sandbox set up ahead is still the run's: the
// watches have seen nothing (the store is not read again then), or
// the store read again says the same.
func (c *StoreCheck) Fresh() error {
	if c.Tree != nil && c.Tree.Changed() {
		return errors.New("the extension's folder changed")
	}
	if c.Names != nil && !c.Names.Changed() {
		if ws, err := os.Getwd(); err == nil && ws == c.Workspace {
			return nil
		}
	}
	c.Reads.Add(1)
	got, err := c.Reload()
	if err != nil {
		return err
	}
	if got != c.FP {
		return errors.New("the extension store says other things of the hook now")
	}
	return nil
}

// Close ends the check's watches.
func (c *StoreCheck) Close() {
	if c.Names != nil {
		c.Names.Close()
	}
	if c.Tree != nil {
		c.Tree.Close()
	}
}
