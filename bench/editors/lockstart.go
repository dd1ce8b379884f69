//go:build linux

package main

// Neovim's start → the plugin's lock file in $CLAUDE_CONFIG_DIR/ide: how
// long a Claude Code started with the editor may find no IDE. Claude Code
// 2.1.330 looks for lock files once its interface is up and, finding none
// that names its folder or port, looks again a second later.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lockOnce starts the plugin's Neovim afresh (a new home, so an empty lock
// folder) in a window of s's tmux server and times it until a lock file
// is renamed or written into the lock folder, seen through inotify; then
// it quits that Neovim.
func (s *session) lockOnce(o options, round int) (time.Duration, error) {
	dir := filepath.Join(s.home, "lockstart", strconv.Itoa(round))
	home, ws, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "ws"), filepath.Join(dir, "tmp")
	lockDir := filepath.Join(home, ".claude", "ide")
	for _, d := range []string{lockDir, ws, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return 0, err
		}
	}
	file := filepath.Join(ws, filepath.Base(o.file))
	if err := os.WriteFile(file, []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		return 0, err
	}
	init := filepath.Join(home, "init.lua")
	if err := os.WriteFile(init, []byte(s.p.setup), 0o600); err != nil {
		return 0, err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, lockDir, unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		return 0, err
	}
	seen := make(chan time.Time, 1)
	go func() { seen <- waitLock(fd) }()
	name := "lockstart" + strconv.Itoa(round)
	args := append([]string{"-S", s.tsock, "new-window", "-d", "-n", name, "-c", ws, "env", "-i"}, neovimEnv(home, tmp)...)
	args = append(args, o.nvim, "-n", "-i", "NONE", "-u", init, file)
	t0 := time.Now()
	if b, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("tmux new-window: %v %s", err, b)
	}
	defer func() {
		_ = exec.Command("tmux", "-S", s.tsock, "send-keys", "-t", name, "Escape", ":qa!", "Enter").Run()
		time.Sleep(300 * time.Millisecond) // Neovim quits, and the plugin's companion with it
		_ = exec.Command("tmux", "-S", s.tsock, "kill-window", "-t", name).Run()
	}()
	select {
	case at := <-seen:
		if at.IsZero() {
			return 0, errors.New("reading inotify events failed")
		}
		return at.Sub(t0), nil
	case <-time.After(10 * time.Second):
		return 0, errors.New("no lock file in " + lockDir + " within 10 s of Neovim's start")
	}
}

// waitLock reads inotify events from fd until one names a lock file
// (<port>.lock, not a plugin's temporary file) and returns when it was
// read; the zero time when reading fails.
func waitLock(fd int) time.Time {
	var buf [4096]byte
	for {
		n, err := unix.Read(fd, buf[:])
		if err != nil || n <= 0 {
			return time.Time{}
		}
		at := time.Now()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			name := strings.TrimRight(string(nameBytes), "\x00")
			if strings.HasSuffix(name, ".lock") && !strings.HasPrefix(name, ".") {
				return at
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
