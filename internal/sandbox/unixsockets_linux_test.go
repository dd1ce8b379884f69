package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// unixListener listens on addr (a path, or "@name" for an abstract
// socket) outside the sandbox, open to every user, and counts the
// connections it accepts: a sandboxed tool must make none.
func unixListener(t *testing.T, addr string) *atomic.Int32 {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if !strings.HasPrefix(addr, "@") {
		if err := os.Chmod(addr, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return &n
}

// TestUnixSocketsConfined: a tool allowed Unix sockets and its own
// processes' /proc (Policy.UnixSockets, Policy.OwnProcesses) still
// reaches no socket of a service outside the sandbox, by class: a
// pathname socket outside its view (in the home folder, in the host's
// /tmp), an abstract socket bound outside the sandbox, and no process
// outside it through /proc. In both modes, as root and as an
// unprivileged user (TestUnprivileged); without namespaces Unix sockets
// stay refused.
func TestUnixSocketsConfined(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.policy(permission.AccessWorkspace, permission.AccessNone)
			p.UnixSockets, p.OwnProcesses = true, true
			homeSock := filepath.Join(w.home, "service.sock")
			tmpSock := filepath.Join(w.root, "service.sock")
			abstract := "@gemkit-test-" + filepath.Base(w.root)
			counts := []*atomic.Int32{unixListener(t, homeSock), unixListener(t, tmpSock), unixListener(t, abstract)}
			// A process outside the sandbox with the secret in its
			// environment.
			outside := exec.Command("sleep", "60")
			outside.Env = []string{"TOKEN=" + w.secret}
			if err := outside.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { outside.Process.Kill(); outside.Wait() })
			connect := func(addr string) []string {
				if strings.HasPrefix(addr, "@") {
					addr = "\x00" + addr[1:]
				}
				return []string{python, "-c", fmt.Sprintf("import socket; s = socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect(%q)", addr)}
			}
			cases := []struct {
				name string
				argv []string
			}{
				{"connect to a socket in the home folder", connect(homeSock)},
				{"connect to a socket in the host's /tmp", connect(tmpSock)},
				{"connect to an abstract socket bound outside", connect(abstract)},
				{"read a process outside through /proc", sh(fmt.Sprintf("cat /proc/%d/environ", outside.Process.Pid))},
				{"read every environment in /proc", sh("cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep TOKEN=")},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					runRefused(t, m.l, p, []string{w.secret}, c.argv...)
				})
			}
			for i, n := range counts {
				if n.Load() != 0 {
					t.Errorf("listener %d outside the sandbox accepted %d connections", i, n.Load())
				}
			}
		})
	}
}

// TestUnixSocketsInside: what the allowance is for works inside the
// sandbox, with namespaces: a socket the tool binds in its temp folder
// and an abstract one, each connected to by the tool; and a process of
// the tool reading another's /proc entry. Without the allowance the
// first and the last are refused.
func TestUnixSocketsInside(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	w := newWorld(t)
	echo := `import os, socket, sys
addr = sys.argv[1].replace("@", "\0", 1)
srv = socket.socket(socket.AF_UNIX); srv.bind(addr); srv.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect(addr)
a, _ = srv.accept(); a.sendall(b"inside-ok"); print(c.recv(16).decode())`
	sockets := []string{python, "-c", echo, filepath.Join(w.tmp, "s")}
	abstract := []string{python, "-c", echo, "@gemkit-inside-" + filepath.Base(w.root)}
	// Between its fork and the end of its exec a process's cmdline reads
	// as its parent's, then, for a moment inside the exec, as empty: it
	// is read until it names sleep (or the read is refused).
	procs := sh(`sleep 5 & p=$!; i=0; while [ $i -lt 100 ]; do c=$(cat /proc/$p/cmdline) || { r=$?; kill $p; exit $r; }; case "$c" in *sleep*) echo "$c"; kill $p; exit 0;; esac; i=$((i+1)); done; kill $p; exit 3`)

	allowed := w.policy(permission.AccessWorkspace, permission.AccessNone)
	allowed.UnixSockets, allowed.OwnProcesses = true, true
	for _, c := range []struct {
		argv []string
		want string
	}{{sockets, "inside-ok"}, {abstract, "inside-ok"}, {procs, "sleep"}} {
		r := run(t, &Launcher{}, allowed, 20*time.Second, c.argv...)
		if r.err != nil {
			t.Fatalf("%v: %v\n%s%s", c.argv, r.err, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, c.want) {
			t.Errorf("%v: %q, want %q in it", c.argv, r.stdout, c.want)
		}
	}
	plain := w.policy(permission.AccessWorkspace, permission.AccessNone)
	for _, argv := range [][]string{sockets, procs} {
		runRefused(t, &Launcher{}, plain, nil, argv...)
	}
	if err := (&Policy{Read: permission.AccessHome, UnixSockets: true, Workspace: w.ws, Home: w.home, ExtensionDir: w.ext, TempDir: w.tmp}).Check(); err == nil || !strings.Contains(err.Error(), "docker.sock") {
		t.Errorf("Unix sockets with read=home: %v", err)
	}
}

// TestUnixSocketRefusalReported: where Unix sockets are not allowed and
// refusals are reported, a tool's socket(AF_UNIX) is refused and
// reported by name.
func TestUnixSocketRefusalReported(t *testing.T) {
	python := systemPython(t)
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessNone)
	p.ReportRefusals = true
	var mu sync.Mutex
	var got []netproxy.Denial
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	proc, err := (&Launcher{}).Start(ctx, &Command{
		Policy: p, Path: python, Args: []string{"-c", "import socket; socket.socket(socket.AF_UNIX)"}, Dir: p.Workspace,
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir},
		Stdout: &out, Stderr: &out,
		OnDeny: func(d netproxy.Denial) { mu.Lock(); got = append(got, d); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Wait(); err == nil || !strings.Contains(out.String(), "Permission denied") {
		t.Fatalf("socket(AF_UNIX) not refused: %v %s", err, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(got, func(d netproxy.Denial) bool { return d.Method == UnixMethod && d.Reason == UnixNotAllowed }) {
		t.Errorf("reported %+v, want a %s denial", got, UnixMethod)
	}
}
