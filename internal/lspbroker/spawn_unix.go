//go:build unix

package lspbroker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Supported reports whether this system runs brokers (Unix sockets,
// sessions, file locks); elsewhere each process runs its own servers.
const Supported = true

// Ready is what a broker writes on its standard output once it listens.
const Ready = "ready"

// Command starts a broker as a process of its own: Path with Args, in a
// session of its own (an agent's Ctrl-C or its process group's end does
// not reach it; it ends when its last client goes), its standard error
// in Log.
type Command struct {
	Path string
	Args []string
	Env  []string
	Log  string
}

// startWait bounds a broker's start, until it listens.
const startWait = 30 * time.Second

// Start starts the broker and returns once it says it listens.
func (c Command) Start(ctx context.Context) error {
	logf, err := OpenLog(c.Log)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = c.Env
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Reaped when it ends, so that it leaves no zombie while this
	// process lives on.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	t := time.NewTimer(startWait)
	defer t.Stop()
	select {
	case l := <-line:
		if l == Ready {
			return nil
		}
		err := <-exited
		return fmt.Errorf("the broker ended at once (%v); its log, %s: %s", err, c.Log, logTail(c.Log))
	case <-t.C:
		cmd.Process.Kill()
		return fmt.Errorf("the broker did not start listening within %v; its log, %s: %s", startWait, c.Log, logTail(c.Log))
	case <-ctx.Done():
		cmd.Process.Kill()
		return ctx.Err()
	}
}

// OpenLog opens a broker's log for writing, emptied: a file of gemkit's
// own folder, so it is opened without following a link at its name
// (O_NOFOLLOW), and refused, in words, when it is not a regular file of
// this user's with one name (a hard link to another file, which a tool
// of this user could have made, would be emptied and written through).
// It is emptied only once so checked.
func OpenLog(path string) (*os.File, error) {
	f, err := openPrivate(path, os.O_WRONLY)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openPrivate opens (or creates, 0600) the file at path in gemkit's own
// folder with flag (O_WRONLY or O_RDWR), never following a link at its
// name, and refuses one that is not a regular file of this user's with
// one name.
func openPrivate(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%s is a symbolic link, not gemkit's file: something other than gemkit put it there; remove it", path)
	case errors.Is(err, syscall.EISDIR):
		return nil, fmt.Errorf("%s is a folder, not gemkit's file: something other than gemkit put it there; remove it", path)
	}
	if err != nil {
		return nil, err
	}
	if err := checkOwnFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s %w; remove it", path, err)
	}
	return f, nil
}

// checkOwnFile says what is wrong with an opened file that should be
// gemkit's own: not a regular file, another user's, or a file with
// another name elsewhere (a hard link).
func checkOwnFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file, so not gemkit's")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if int(st.Uid) != os.Getuid() {
			return fmt.Errorf("belongs to uid %d, not to this user", st.Uid)
		}
		if st.Nlink > 1 {
			return fmt.Errorf("has %d names (a hard link to another file), so it is not gemkit's alone", st.Nlink)
		}
	}
	return nil
}

// logTail is the end of a broker's log, on one line, read as OpenLog
// writes it (never through a link).
func logTail(path string) string {
	var b []byte
	if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0); err == nil {
		if checkOwnFile(f) == nil {
			b, _ = io.ReadAll(io.LimitReader(f, 1<<20))
		}
		f.Close()
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	if s == "" {
		return "(empty)"
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// lockFile takes an exclusive lock on path (made 0600), waiting for it,
// and returns its release.
func lockFile(path string) (func(), error) {
	f, err := openPrivate(path, os.O_RDWR)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}
