//go:build unix

package lspbroker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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
	logf, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
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

// logTail is the end of a broker's log, on one line.
func logTail(path string) string {
	b, _ := os.ReadFile(path)
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
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
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
