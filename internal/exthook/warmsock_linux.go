package exthook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"

	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/hookclient"
	"github.com/gemkit/gemkit/internal/proc"
	"golang.org/x/sys/unix"
)

// WarmDir is the private folder of the warm sandboxes' sockets: gemkit's
// runtime folder of this user ($XDG_RUNTIME_DIR/gemkit, else
// gemkit-<uid> in the temporary folder), made 0700 and refused when it
// is a link, another user's, or open to others; every folder it may be
// is closed to every tool (gemkitdir.MakeRuntime, permission).
func WarmDir() (string, error) { return gemkitdir.MakeRuntime() }

// WarmSocket is the socket of the warm sandbox with key in dir.
func WarmSocket(dir, key string) string { return hookclient.Socket(dir, key) }

// Session is the process a warm sandbox lives no longer than: the
// nearest ancestor of this process that is not a shell (Gemini CLI,
// which runs a hook through bash -c), held by a pidfd so that its end is
// seen and a recycled pid never taken for it.
type Session struct {
	Pid   int
	Start uint64 // its start time, in clock ticks after boot
	FD    *os.File
}

// FindSession finds this process's session (see Session).
func FindSession() (*Session, error) {
	pid, start, err := hookclient.Session()
	if err != nil {
		return nil, err
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	// The pidfd is of the process seen above only if it started then.
	if again, err := proc.ReadStat(pid); err != nil || again.Start != start {
		unix.Close(fd)
		return nil, errors.New("the session's process changed")
	}
	return &Session{Pid: pid, Start: start, FD: os.NewFile(uintptr(fd), "session")}, nil
}

// SessionFromFD is the session a warm server was handed as the pidfd f.
func SessionFromFD(f *os.File) (*Session, error) {
	pid, err := proc.PidfdPid(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	if pid <= 1 {
		return nil, errors.New("the session has ended")
	}
	st, err := proc.ReadStat(pid)
	if err != nil {
		return nil, err
	}
	return &Session{Pid: pid, Start: st.Start, FD: f}, nil
}

// Ended returns a channel closed once the session's process has ended.
// Its pidfd is waited on in Go's poller (a copy of it, non-blocking),
// not in a poll(2) of its own thread: a goroutine in a blocking call
// keeps the runtime's monitor waking; by poll(2) only if that fails.
func (s *Session) Ended() <-chan struct{} {
	ch := make(chan struct{})
	exited := func(fd int) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err != unix.EINTR && (err != nil || n > 0)
	}
	go func() {
		defer close(ch)
		if f := pollerPidfd(s.FD); f != nil {
			defer f.Close()
			if c, err := f.SyscallConn(); err == nil && c.Read(func(fd uintptr) bool { return exited(int(fd)) }) == nil {
				return
			}
		}
		for {
			pfd := []unix.PollFd{{Fd: int32(s.FD.Fd()), Events: unix.POLLIN}}
			if _, err := unix.Poll(pfd, -1); err == unix.EINTR {
				continue
			} else if err != nil || pfd[0].Revents != 0 {
				return
			}
		}
	}()
	return ch
}

// pollerPidfd is a copy of the pidfd f, non-blocking (which changes
// only what waitid(2) on it does) and so in Go's poller, or nil.
func pollerPidfd(f *os.File) *os.File {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nfd := -1
	_ = raw.Control(func(fd uintptr) { nfd, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
	if nfd < 0 {
		return nil
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil
	}
	return os.NewFile(uintptr(nfd), "session-pidfd")
}

// Identity is the identity of a run in session s of gemkit with args,
// in the folder cwd with the environment env (hookclient.Identity: what
// the run's client knows before it reads anything).
func Identity(s *Session, cwd string, env, args []string) ([]byte, error) {
	return hookclient.Identity(s.Pid, s.Start, cwd, env, args)
}

// Key is the name of the warm sandbox of the run whose identity is id
// (hookclient.KeyOf).
func Key(id []byte) string { return hookclient.KeyOf(id) }

// Fingerprint is a digest of everything of h that the extension store
// and the extension's folder decide (the hook as its extension declares
// it, the extension and its folder, its settings, what the person
// allowed it, the workspace, the folders it may not write) and its
// environment: a warm server serves a run only while the store says
// the same of the hook as when its sandbox was set up.
func (h *Hook) Fingerprint() (string, error) {
	env := slices.Clone(h.Environ)
	sort.Strings(env)
	b, err := json.Marshal(struct {
		Ext, Dir, Workspace string
		Hook                any
		Settings            map[string]string
		Widening            any
		ReadOnly, Env       []string
	}{h.Extension, h.Dir, h.Workspace, h.Hook, h.Settings, h.Widening, h.ReadOnly, env})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// WarmListen listens on the socket of key in dir for the one server of
// that key: it takes the key's lock (held until the listener closes), so
// that of two servers started together one serves and the other
// returns an error.
func WarmListen(dir, key string) (*net.UnixListener, func(), error) {
	lock := filepath.Join(dir, "hook-"+key+".lock")
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("another warm sandbox serves %s: %w", key, err)
	}
	path := WarmSocket(dir, key)
	os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	ln.SetUnlinkOnClose(true)
	release := func() {
		ln.Close()
		os.Remove(lock)
		f.Close()
	}
	return ln, release, nil
}

// ErrNoWarm is WarmRun's error when no warm sandbox took the run: the
// caller runs the hook itself, nothing of it having run.
var ErrNoWarm = errors.New("no warm sandbox")

// WarmRun hands a run of the hook with identity id (Identity), if its
// warm sandbox waits in dir, the descriptors stdin, stdout and stderr, and returns
// its exit code once its command has ended, or the words of a refusal
// (the command did not run). ErrNoWarm (wrapped) says no warm sandbox
// took it; another error, that the run was taken and ended without an
// answer. The server must run as this user (SO_PEERCRED). ctx's end
// ends the run: the server stops the hook when its client goes.
func WarmRun(ctx context.Context, dir string, id []byte, stdin, stdout, stderr *os.File) (code int, refused string, err error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: WarmSocket(dir, Key(id)), Net: "unix"})
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", ErrNoWarm, err)
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	if err := proc.SameUser(conn); err != nil {
		return 0, "", fmt.Errorf("%w: %v", ErrNoWarm, err)
	}
	rights := unix.UnixRights(int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd()))
	req := hookclient.RequestOf(id)
	n, _, err := conn.WriteMsgUnix(req, rights, nil)
	if err == nil && n < len(req) {
		_, err = conn.Write(req[n:])
	}
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", ErrNoWarm, err)
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil || b[0] != hookclient.Claimed {
		return 0, "", fmt.Errorf("%w: not taken (%v)", ErrNoWarm, err)
	}
	raw, err := io.ReadAll(io.LimitReader(conn, 1<<20))
	if err != nil {
		return 0, "", err
	}
	ans, err := hookclient.DecodeAnswer(raw)
	if err != nil {
		return 0, "", err
	}
	return ans.Code, ans.Refused, nil
}
