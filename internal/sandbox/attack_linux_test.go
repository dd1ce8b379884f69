package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// TestAttacks are what a malicious tool would try beyond the escapes of
// TestEscapesFail: gemkit's own configuration under the widest scopes,
// the parent process, shared memory, hard links out of read-only places.
// Every one must fail, in both modes, as root and as an unprivileged user.
func TestAttacks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	// The tool's parent is this test process (the sandbox child execs the
	// tool), which an attack would go for.
	ppid := os.Getpid()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			ws := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			home := w.policy(permission.AccessHome, permission.AccessHome)
			full := w.policy(permission.AccessFull, permission.AccessFull)
			gem := filepath.Join(w.home, ".gemini")
			consent := filepath.Join(gem, "gemkit", "consent.json")
			otherEnv := filepath.Join(gem, "extensions", "other", ".env")
			otherTool := filepath.Join(gem, "extensions", "other", "tool.sh")
			cases := []struct {
				name   string
				policy Policy
				argv   []string
				check  func(t *testing.T)
			}{
				{"read another extension's settings under read=home", home, sh("cat " + otherEnv), nil},
				{"read the consent records under read=full", full, sh("cat " + consent), nil},
				{"read the CLI's credentials under read=full", full, sh("cat " + filepath.Join(gem, "oauth_creds.json")), nil},
				{"rewrite the consent records under write=home", home, sh("echo '{}' > " + consent), func(t *testing.T) {
					if b, _ := os.ReadFile(consent); !strings.Contains(string(b), w.secret) {
						t.Fatal("consent file changed")
					}
				}},
				{"replace another extension's tool under write=full", full, sh("echo pwned > " + otherTool), func(t *testing.T) {
					assertUnchanged(t, otherTool, "echo other\n")
				}},
				{"plant a new extension under write=home", home, sh("mkdir " + filepath.Join(gem, "extensions", "evil")), func(t *testing.T) {
					assertMissing(t, filepath.Join(gem, "extensions", "evil"))
				}},
				{"move ~/.gemini away under write=full", full, sh("mv " + gem + " " + filepath.Join(w.root, "g")), func(t *testing.T) {
					assertMissing(t, filepath.Join(w.root, "g"))
				}},
				{"hard link the extension's script into the workspace", ws, sh("ln " + filepath.Join(w.ext, "tool.sh") + " hl && echo pwned >> hl"), func(t *testing.T) {
					assertUnchanged(t, filepath.Join(w.ext, "tool.sh"), "echo tool\n")
				}},
				{"hard link a home file into the temp dir", ws, sh("ln " + filepath.Join(w.home, "notes.txt") + " $TMPDIR/hl && cat $TMPDIR/hl"), nil},
				{"rename the extension folder's parent under write=home", home, sh("mv " + filepath.Join(gem, "extensions") + " " + filepath.Join(w.home, "x")), func(t *testing.T) {
					assertMissing(t, filepath.Join(w.home, "x"))
				}},
				{"write /dev/shm", ws, sh("echo pwned > /dev/shm/gemkit-attack-" + filepath.Base(w.root)), func(t *testing.T) {
					assertMissing(t, "/dev/shm/gemkit-attack-"+filepath.Base(w.root))
				}},
				{"read gemkit's environment under read=full", full, sh(fmt.Sprintf("cat /proc/%d/environ", ppid)), nil},
				{"read gemkit's memory under read=full", full, sh(fmt.Sprintf("head -c 1 /proc/%d/mem", ppid)), nil},
				{"gemkit's open descriptors under read=full", full, sh(fmt.Sprintf("ls /proc/%d/fd && cat /proc/%[1]d/fd/0 /proc/%[1]d/fd/1 /proc/%[1]d/fd/2 </dev/null", ppid)), nil},
				{"other processes' command lines under read=full", full, sh(fmt.Sprintf("cat /proc/%d/cmdline", ppid)), nil},
				{"ptrace gemkit", full, []string{python, "-c", fmt.Sprintf("import ctypes,sys; sys.exit(0 if ctypes.CDLL(None, use_errno=True).ptrace(16, %d, 0, 0) == 0 else 1)", ppid)}, nil},
				{"process_vm_readv on gemkit", full, []string{python, "-c", fmt.Sprintf(`import ctypes, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(8)
class iov(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = iov(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iov(0x400000, 8)
n = libc.syscall({"x86_64": 310, "aarch64": 270}[platform.machine()], %d, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
err = ctypes.get_errno()
print(n, err)
# EFAULT means the kernel let us in and only the address was wrong.
sys.exit(0 if n >= 0 or err == 14 else 1)`, ppid)}, nil},
				{"signal gemkit", full, []string{python, "-c", fmt.Sprintf("import os; os.kill(%d, 0)", ppid)}, nil},
				{"create a user namespace (unshare)", ws, []string{"/usr/bin/unshare", "-U", "true"}, nil},
				{"create a user namespace (clone)", ws, []string{python, "-c", `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
# clone(CLONE_NEWUSER|SIGCHLD) with no new stack behaves like fork.
pid = libc.syscall({"x86_64": 56, "aarch64": 220}[__import__("platform").machine()], 0x10000000 | 17, 0, 0, 0, 0)
if pid == 0:
    libc.syscall(60 if __import__("platform").machine() == "x86_64" else 93, 0)
sys.exit(0 if pid > 0 else 1)`}, nil},
				{"reach the X11 or D-Bus socket by path", full, []string{python, "-c", "import socket; s=socket.socket(socket.AF_UNIX); s.connect('/run/dbus/system_bus_socket')"}, nil},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					runRefused(t, m.l, c.policy, []string{w.secret, "home notes"}, c.argv...)
					if c.check != nil {
						c.check(t)
					}
				})
			}

			assertNoCapabilities(t, m.name, m.l, w, ws, python)
			assertOpenFilesBounded(t, m.l, ws, python)
			assertWidestScopesWork(t, m.l, w, home, gem)
		})
	}
}

// assertNoCapabilities: the tool holds no capability at all, also where
// the child needed CAP_NET_ADMIN and CAP_SYS_ADMIN to set up, and cannot
// gain one (TestAttacks, in the mode name of l).
func assertNoCapabilities(t *testing.T, name string, l *Launcher, w *world, ws Policy, python string) {
	t.Helper()
	for _, p := range []Policy{ws, w.policy(permission.AccessWorkspace, permission.AccessNone, "allowed.test")} {
		if name == "no-namespaces" && p.NeedsNetwork() {
			continue
		}
		r := run(t, l, p, 20*time.Second, python, "-c", "import re; print(*re.findall(r'(?m)^(?:Cap(?:Inh|Prm|Eff|Amb|Bnd)|NoNewPrivs):.*$', open('/proc/self/status').read()), sep='\\n')")
		if r.err != nil {
			t.Fatalf("%v %s", r.err, r.stderr)
		}
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			f := strings.Fields(line)
			// Without a user namespace an unprivileged user
			// holds no CAP_SETPCAP to empty the bounding set;
			// with no_new_privs and a non-zero uid nothing in
			// it can be gained.
			if len(f) == 2 && f[0] == "CapBnd:" && name == "no-namespaces" && os.Getuid() != 0 {
				continue
			}
			if len(f) != 2 || (f[0] == "NoNewPrivs:") != (f[1] == "1") || f[0] != "NoNewPrivs:" && f[1] != "0000000000000000" {
				t.Errorf("hosts %v: %q", p.AllowedHosts, line)
			}
		}
	}
}

// assertOpenFilesBounded: open files are bounded, and the bound cannot
// be raised (TestAttacks).
func assertOpenFilesBounded(t *testing.T, l *Launcher, ws Policy, python string) {
	t.Helper()
	r0 := run(t, l, ws, 20*time.Second, python, "-c", `import resource
s, h = resource.getrlimit(resource.RLIMIT_NOFILE)
print(s, h)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (h + 1, h + 1)); print("raised")
except (ValueError, OSError): print("kept")`)
	if r0.err != nil || strings.TrimSpace(r0.stdout) != "4096 4096\nkept" {
		t.Errorf("RLIMIT_NOFILE: %q %v %s", r0.stdout, r0.err, r0.stderr)
	}
}

// assertWidestScopesWork: the widest scopes still work everywhere else:
// home is listed and read, its files are written. Inside ~/.gemini the
// tool sees its own extension's folder; with a mount namespace nothing
// else exists there (without one, Landlock lets it list the names)
// (TestAttacks).
func assertWidestScopesWork(t *testing.T, l *Launcher, w *world, home Policy, gem string) {
	t.Helper()
	r := run(t, l, home, 20*time.Second, sh("ls -a "+w.home+" && cat "+filepath.Join(w.home, "notes.txt")+" && echo ok > "+filepath.Join(w.home, ".ssh", "new")+" && ls "+filepath.Join(gem, "extensions"))...)
	if r.err != nil || !strings.Contains(r.stdout, "home notes") || !strings.Contains(r.stdout, "ext") {
		t.Fatalf("home scope: %v %q %q", r.err, r.stdout, r.stderr)
	}
	if r.proc.Enforcement.MountNS == strings.Contains(r.stdout, "other") {
		t.Errorf("other extensions' names seen %v with mount namespace %v: %q", strings.Contains(r.stdout, "other"), r.proc.Enforcement.MountNS, r.stdout)
	}
}

// TestTimeoutEscapes: a tool that ignores SIGTERM, double-forks into a new
// session and process group, still dies with the timeout.
func TestTimeoutEscapes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			marker := filepath.Join(w.ws, "alive")
			script := fmt.Sprintf(`import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    for f in (os.setsid, lambda: os.setpgid(0, 0)):
        try: f()
        except OSError: pass
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(1.5)
        open(%q, "w").write("escaped")
    os._exit(0)
time.sleep(60)
`, marker)
			runKilled(t, m.l, w.policy(permission.AccessWorkspace, permission.AccessWorkspace), 500*time.Millisecond, 2*time.Second, marker, python, "-c", script)
		})
	}
}

// TestForkBombBounded: in its own PID namespace a tool cannot have more
// than DefaultMaxProcesses processes and threads, on kernels that keep
// pid_max per namespace.
func TestForkBombBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	if !pidnsPidMax() {
		t.Skip("this kernel (before 6.14) has no per-namespace pid_max, so there is no bound to test; a fork bomb is bounded only by the timeout (CI's kernel, 6.18, runs it)")
	}
	python := systemPython(t)
	w := newWorld(t)
	// Forks until refused, keeps every child asleep, reports the count.
	script := `import os, sys, time
n = 0
try:
    while n < 5000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print("refused after", n, e)
    sys.exit(0)
print("not refused", n)
sys.exit(1)
`
	r := run(t, &Launcher{}, w.policy(permission.AccessWorkspace, permission.AccessNone), 30*time.Second, python, "-c", script)
	if r.err != nil {
		t.Fatalf("%v: %s %s", r.err, r.stdout, r.stderr)
	}
	if r.proc.Enforcement.MaxProcesses != DefaultMaxProcesses {
		t.Fatalf("enforcement %+v", r.proc.Enforcement)
	}
	var n int
	fmt.Sscanf(r.stdout, "refused after %d", &n)
	if n == 0 || n >= DefaultMaxProcesses {
		t.Fatalf("forked %d: %q", n, r.stdout)
	}
}
