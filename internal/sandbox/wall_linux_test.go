package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestSecondWall are the attacks Landlock alone let through (metadata of
// files outside every scope, other terminals, memory of every kind, the
// temp dir's size): the mount namespace, seccomp and the memory bound
// stop them, as root and as uid 65534 (TestUnprivileged). Each is beside
// the legitimate use it must not break.
func TestSecondWall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	l := &Launcher{}
	w := newWorld(t)
	key := filepath.Join(w.home, ".ssh", "id_rsa")
	input := filepath.Join(w.ws, "input.txt")
	// A program outside every write scope, owned by whoever runs the
	// test (root in CI): setuid on it would be a privilege for later.
	prog := filepath.Join(w.home, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	none := w.policy(permission.AccessNone, permission.AccessNone)
	homeRead := w.policy(permission.AccessHome, permission.AccessNone)
	homeWrite := w.policy(permission.AccessHome, permission.AccessHome)
	ws := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	full := w.policy(permission.AccessFull, permission.AccessFull)
	stamps := stampFiles(t, key, input, prog, w.ext)
	unchanged := stamps.unchanged
	xattr := func(p string) []string { return xattrArgv(python, p) }
	setflags := func(p string) []string { return setflagsArgv(python, p) }
	cases := []struct {
		name   string
		policy Policy
		argv   []string
		check  func(t *testing.T)
	}{
		{"chmod a key under read=none", none, sh("chmod 666 " + key), unchanged(key)},
		{"chmod a key it may read", homeRead, sh("chmod 666 " + key), unchanged(key)},
		{"utimensat on a key it may read", homeRead, sh("touch -d 2001-01-01 " + key), unchanged(key)},
		{"setxattr on a key it may read", homeRead, xattr(key), nil},
		{"FS_IOC_SETFLAGS on a key it may read", homeRead, setflags(key), nil},
		{"stat a key under read=none", none, sh("stat -c %s " + key), nil},
		{"chmod the extension's own folder under write=home", homeWrite, sh("chmod 777 " + w.ext), unchanged(w.ext)},
		{"setuid a program outside the write scope", homeRead, sh("chmod u+s " + prog), unchanged(prog)},
		{"setuid a file in the write scope", ws, sh("chmod u+s " + input), unchanged(input)},
		{"setgid a file in the write scope (fchmodat)", ws, []string{python, "-c", fmt.Sprintf("import os; os.chmod(%q, 0o2755)", input)}, unchanged(input)},
		{"list other terminals under read=full", full, sh("ls /dev/pts/"), nil},
		{"open a new terminal under read=full", full, []string{python, "-c", "open('/dev/ptmx', 'rb+')"}, nil},
		{"open the controlling terminal", full, sh("echo x > /dev/tty"), nil},
		{"open the console under write=full", full, sh("echo x > /dev/console"), nil},
		{"mount over the workspace", ws, []string{python, "-c", "import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).mount(b'none', b'.', b'tmpfs', 0, None) == 0 else 1)"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runRefused(t, l, c.policy, []string{w.secret}, c.argv...)
			if !r.proc.Enforcement.MountNS {
				t.Fatalf("no mount namespace: %+v", r.proc.Enforcement)
			}
			if c.check != nil {
				c.check(t)
			}
		})
	}

	// Without a mount namespace seccomp still refuses xattrs and inode
	// flags everywhere (modes and times stay a documented gap there).
	for _, c := range []struct {
		name string
		argv []string
	}{{"setxattr without a mount namespace", xattr(key)}, {"FS_IOC_SETFLAGS without a mount namespace", setflags(key)}, {"setxattr on a workspace file without a mount namespace", xattr(input)}} {
		t.Run(c.name, func(t *testing.T) {
			r := runRefused(t, &Launcher{NoNamespaces: true}, homeWrite, []string{w.secret}, c.argv...)
			if !strings.Contains(r.stderr, "Operation not permitted") {
				t.Fatalf("not refused by seccomp: %s", r.stderr)
			}
		})
	}

	// What the tool may write, it may chmod and touch; devices work.
	t.Run("chmod and touch a workspace file", func(t *testing.T) {
		r := run(t, l, ws, 20*time.Second, sh("chmod 600 input.txt && touch -d 2001-01-01 input.txt && stat -c %a input.txt && echo x > /dev/null && head -c 4 /dev/urandom | wc -c")...)
		if r.err != nil || r.stdout != "600\n4\n" {
			t.Fatalf("%v %q %q", r.err, r.stdout, r.stderr)
		}
		os.Chmod(input, stamps[input].Mode().Perm())
		os.Chtimes(input, stamps[input].ModTime(), stamps[input].ModTime())
	})
}

// fileStamps are files' modes and modification times as a test found
// them, to check that an attack changed neither.
type fileStamps map[string]os.FileInfo

// stampFiles records the stamps of paths.
func stampFiles(t *testing.T, paths ...string) fileStamps {
	t.Helper()
	stamps := fileStamps{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		stamps[p] = fi
	}
	return stamps
}

// unchanged is a check that p has the mode and time it was stamped with.
func (s fileStamps) unchanged(p string) func(t *testing.T) {
	return func(t *testing.T) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode() != s[p].Mode() || !fi.ModTime().Equal(s[p].ModTime()) {
			t.Fatalf("%s changed: %v %v (was %v %v)", p, fi.Mode(), fi.ModTime(), s[p].Mode(), s[p].ModTime())
		}
	}
}

// xattrArgv is a python command that sets an extended attribute on p.
func xattrArgv(python, p string) []string {
	return []string{python, "-c", fmt.Sprintf("import os; os.setxattr(%q, 'user.gemkit', b'1')", p)}
}

// setflagsArgv is a python command that sets p's inode flags: the ioctl
// FS_IOC_SETFLAGS with FS_NOATIME_FL.
func setflagsArgv(python, p string) []string {
	return []string{python, "-c", fmt.Sprintf("import fcntl, os, struct; fd = os.open(%q, os.O_RDONLY); fcntl.ioctl(fd, 0x40086602, struct.pack('l', 0x80))", p)}
}

// TestMemoryBound: the whole process tree's memory is bounded, of every
// kind, where a cgroup can be made (root here), and what each process
// writes of its own otherwise (uid 65534 here): its private memory, a
// mapping that grows down (a stack RLIMIT_DATA does not count, refused),
// its main stack (whose hard limit it cannot raise); the temp dir is a
// bounded tmpfs; 200 MB under the default bound works.
func TestMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.MemoryBytes = 256 << 20
	p.TempBytes = 32 << 20
	l := &Launcher{}
	// Whether this machine lets this user make a memory cgroup (root
	// here, uid 65534 not): the runs must then use one.
	canCgroup := false
	if cg, err := newCgroup(1<<30, 0); err == nil {
		canCgroup = true
		cg.remove()
	} else {
		t.Logf("no memory cgroup for uid %d: %v", os.Getuid(), err)
	}
	if os.Getuid() == 0 && !canCgroup {
		t.Logf("running as root without a usable memory cgroup: the whole-tree case is not bounded here")
	}
	const touch = "def touch(m, n):\n    for i in range(0, n, 4096): m[i] = 1\n"
	cases := []struct {
		name, script string
		cgroupOnly   bool
		rlimitOnly   bool
	}{
		{"private memory", touch + "m = bytearray(600 << 20)\ntouch(m, 600 << 20)\n", false, false},
		{"private mmap", "import mmap\n" + touch + "m = mmap.mmap(-1, 600 << 20, flags=mmap.MAP_PRIVATE)\ntouch(m, 600 << 20)\n", false, false},
		{"mapping that grows down", "import mmap\n" + touch + "m = mmap.mmap(-1, 600 << 20, flags=mmap.MAP_PRIVATE | 0x100)\ntouch(m, 600 << 20)\n", false, false},
		// Under a cgroup the stack's pages are the cgroup's to count,
		// and no rlimit is set.
		{"stack limit raised", "import resource\nresource.setrlimit(resource.RLIMIT_STACK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n", false, true},
		// Shared memory is the cgroup's alone: documented (a memfd's
		// pages are no process's address space either).
		{"shared anonymous mmap", "import mmap\n" + touch + "m = mmap.mmap(-1, 600 << 20, flags=mmap.MAP_SHARED)\ntouch(m, 600 << 20)\n", true, false},
		{"memfd", "import os, mmap\n" + touch + "fd = os.memfd_create('x')\nos.ftruncate(fd, 600 << 20)\nm = mmap.mmap(fd, 600 << 20)\ntouch(m, 600 << 20)\n", true, false},
		{"a dozen children of 100 MB", "import os, time\nkids = []\nfor i in range(12):\n    pid = os.fork()\n    if pid == 0:\n        b = bytearray(100 << 20)\n        for j in range(0, len(b), 4096): b[j] = 1\n        time.sleep(3)\n        os._exit(0)\n    kids.append(pid)\nok = all(os.waitpid(k, 0)[1] == 0 for k in kids)\nimport sys\nsys.exit(0 if ok else 1)\n", true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, l, p, 60*time.Second, python, "-c", c.script)
			t.Logf("memory %q: %v %s", r.proc.Enforcement.Memory, r.err, lastLine(r.stderr))
			if c.rlimitOnly && !r.proc.Enforcement.DataRlimit {
				if r.err != nil {
					t.Fatalf("refused under a cgroup: %v %s", r.err, r.stderr)
				}
				return
			}
			if c.cgroupOnly && !strings.HasPrefix(r.proc.Enforcement.Memory, "cgroup") {
				if canCgroup {
					t.Fatalf("this machine lets gemkit make a cgroup, and the run had none: %+v", r.proc.Enforcement)
				}
				return // RLIMIT_DATA bounds each process's own memory only: documented
			}
			if r.err == nil {
				t.Fatalf("used more than its bound: %+v %q", r.proc.Enforcement, r.stdout)
			}
		})
	}
	t.Run("temp dir is a bounded tmpfs", func(t *testing.T) {
		r := run(t, l, p, 20*time.Second, sh("head -c 64000000 /dev/zero > $TMPDIR/big")...)
		if r.err == nil {
			t.Fatal("wrote 64 MB into a 32 MB temp dir")
		}
		if entries, _ := os.ReadDir(w.tmp); len(entries) != 0 {
			t.Fatalf("the tool wrote to the host's temp dir: %v", entries)
		}
	})
	t.Run("200 MB under the default bound", func(t *testing.T) {
		q := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
		r := run(t, l, q, 60*time.Second, python, "-c", "b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nimport os\nif os.fork() == 0:\n    c = bytearray(50 << 20)\n    os._exit(0)\nos.wait()\nprint('ok')")
		if r.err != nil || r.stdout != "ok\n" {
			t.Fatalf("%v %q %q", r.err, r.stdout, r.stderr)
		}
		if canCgroup && r.proc.Enforcement.Memory == "rlimit" {
			t.Fatalf("no cgroup where one can be made: %+v", r.proc.Enforcement)
		}
	})
}

// TestThreadStacks: a thread's stack is reserved whole (8 MiB here) and
// little of it is used. A cgroup counts what is used: forty threads run
// in 256 MiB. RLIMIT_DATA counts what is made writable: without a cgroup
// (uid 65534 here) it refuses the thirtieth or so, as documented. It was
// set under a cgroup too, where node, refused its worker threads under
// a 16 MB bound, waited for them until its timeout; it stays only where
// the cgroup cannot bound swap on a machine that has some.
func TestThreadStacks(t *testing.T) {
	python := systemPython(t)
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessNone)
	p.MemoryBytes = 256 << 20
	canCgroup := false
	if cg, err := newCgroup(1<<30, 0); err == nil {
		canCgroup = true
		cg.remove()
	}
	const threads = "import threading, time\nthreading.stack_size(8 << 20)\nts = [threading.Thread(target=time.sleep, args=(0.2,)) for _ in range(40)]\nfor x in ts: x.start()\nfor x in ts: x.join()\nprint('ok')\n"
	r := run(t, &Launcher{}, p, 60*time.Second, python, "-c", threads)
	if r.proc.Enforcement.Memory == "rlimit" && canCgroup {
		t.Fatalf("this machine lets gemkit make a cgroup, and the run had none: %+v", r.proc.Enforcement)
	}
	if r.proc.Enforcement.DataRlimit {
		// No cgroup, or one that cannot bound swap on a machine with
		// some.
		if r.err == nil || !strings.Contains(r.stderr, "can't start new thread") {
			t.Fatalf("RLIMIT_DATA let forty threads of 8 MiB run in 256 MiB: %v %q %s", r.err, r.stdout, r.stderr)
		}
		return
	}
	if r.err != nil || r.stdout != "ok\n" {
		t.Fatalf("memory %q: %v %q %s", r.proc.Enforcement.Memory, r.err, r.stdout, r.stderr)
	}
}

// TestRuntimeReservations: a runtime that reserves far more address
// space than it uses runs under the memory bound, with or without a
// cgroup: Node's fetch, whose HTTP parser (undici's) is WebAssembly, and
// WebAssembly memories, for each of which V8 reserves 10 GiB of guard
// region. Under the address-space bound the sandbox once set without a
// cgroup, fetch failed ("Cannot allocate Wasm memory", an unhandled
// rejection) and the server died mid-call.
func TestRuntimeReservations(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node in the sandbox for a second: runs without -short, as in CI")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: interop's tests need Node 20 (scripts/setup-and-test installs it)")
	}
	// The sandbox lets the tool neither listen nor reach a host but
	// through the proxy, which fetch ignores: each fetch is refused, after
	// undici has made its parser (at the first fetch, whatever comes of it).
	const script = `let refused = 0;
for (let i = 0; i < 20; i++) {
  try { await fetch("http://127.0.0.1:9/"); } catch { refused++; }
}
const mems = [];
for (let i = 0; i < 8; i++) mems.push(new WebAssembly.Memory({initial: 16}));
console.log('refused', refused, 'memories', mems.length);
`
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessNone)
	p.MemoryBytes = 512 << 20
	for _, l := range []*Launcher{{NoCgroup: true}, {}} {
		r := run(t, l, p, 60*time.Second, node, "--input-type=module", "-e", script)
		if r.err != nil || strings.TrimSpace(r.stdout) != "refused 20 memories 8" {
			t.Errorf("memory %q: %v %q %s", r.proc.Enforcement.Memory, r.err, r.stdout, r.stderr)
		}
	}
}

// TestLocalhostAllowed: a tool whose allowedHosts lists localhost (a
// local model server) reaches this machine's loopback server through the
// proxy, with no private-address exception switched on; loopback by
// address stays refused.
func TestLocalhostAllowed(t *testing.T) {
	python := systemPython(t)
	ln := sandboxtest.HTTPServer(t, "local model")
	port := ln.Addr().(*net.TCPAddr).Port
	w := newWorld(t)
	p := w.policy(permission.AccessNone, permission.AccessNone, fmt.Sprintf("localhost:%d", port))
	get := `import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())
except Exception as e:
    print("refused", e); sys.exit(1)`
	r := run(t, &Launcher{}, p, 30*time.Second, python, "-c", get, fmt.Sprintf("http://localhost:%d/", port))
	if r.err != nil || strings.TrimSpace(r.stdout) != "local model" {
		t.Fatalf("localhost: %v %q %q", r.err, r.stdout, r.stderr)
	}
	r = run(t, &Launcher{}, p, 30*time.Second, python, "-c", get, fmt.Sprintf("http://127.0.0.1:%d/", port))
	if r.err == nil {
		t.Fatalf("127.0.0.1 reached with only localhost listed: %q", r.stdout)
	}
}

// TestCgroupRemoved: the run's cgroup goes with the run, also when the
// tool cannot start.
func TestCgroupRemoved(t *testing.T) {
	lay := findCgroups()
	dir := filepath.Join(lay.v1["memory"], lay.own["memory"])
	// Other test binaries (go test runs packages side by side) make
	// cgroups of their own here, with random names: a cgroup that was not
	// there before must be gone soon after; a leaked one stays.
	cgroups := func() map[string]bool {
		m := map[string]bool{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "gemkit-tool-") {
				m[e.Name()] = true
			}
		}
		return m
	}
	before := cgroups()
	added := func() []string {
		var names []string
		for name := range cgroups() {
			if !before[name] {
				names = append(names, name)
			}
		}
		return names
	}
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	l := &Launcher{}
	r := run(t, l, p, 20*time.Second, "/bin/true")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r := run(t, l, p, 20*time.Second, "/nonexistent/tool"); r.err == nil {
		t.Fatal("a missing program started")
	}
	// Other processes' tools end on their own time, and the kernel tells
	// no one when a cgroup goes.
	if !gemkittest.Poll(20*time.Second, 50*time.Millisecond, func() bool { return len(added()) == 0 }) {
		t.Fatalf("cgroups left in %s: %v", dir, added())
	}
}

// TestToolInItsCgroup: the tool, and what it starts, run inside the
// run's cgroups from the start, whether the child moved itself in (v1,
// cgroup.joinFiles) or the parent moved it (v2, or no tasks file to
// open): the child's move of itself must not leave the exec'd program,
// or a process it forks, outside.
func TestToolInItsCgroup(t *testing.T) {
	if cg, err := newCgroup(1<<30, 0); err != nil {
		t.Skipf("uid %d cannot make a memory cgroup here (%v): the run has none to be in; CI runs as root, with one", os.Getuid(), err)
	} else {
		cg.remove()
	}
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	// Each process may read its own /proc entry (a fresh procfs of the
	// tool's PID namespace).
	p.OwnProcesses = true
	for _, tc := range []struct {
		name string
		gate bool
	}{{"no gate", false}, {"gated", true}} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Launcher{}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out bytes.Buffer
			cmd := &Command{
				Policy: p, Path: "/bin/sh", Args: []string{"-c", "cat /proc/self/cgroup; echo ---; cat /proc/$$/cgroup"}, Dir: p.Workspace,
				Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir},
				Stdout: &out, Stderr: os.Stderr,
			}
			if tc.gate {
				cmd.Gate = func(context.Context) error { return nil }
			}
			proc, err := l.Start(ctx, cmd)
			if err != nil {
				t.Fatal(err)
			}
			if err := proc.Wait(); err != nil {
				t.Fatal(err)
			}
			forked, shell, ok := strings.Cut(out.String(), "---\n")
			if !ok {
				t.Fatalf("output %q", out.String())
			}
			for who, lines := range map[string]string{"the tool": shell, "a process it forked": forked} {
				in := false
				for _, line := range strings.Split(lines, "\n") {
					// v1's memory line, or v2's unified one, names the run's
					// group.
					if f := strings.SplitN(line, ":", 3); len(f) == 3 && (f[1] == "memory" || f[0] == "0") && strings.Contains(f[2], "/gemkit-tool-") {
						in = true
					}
				}
				if !in {
					t.Errorf("%s is not in the run's cgroup (%s): %s", who, proc.Enforcement.Memory, lines)
				}
			}
		})
	}
}
