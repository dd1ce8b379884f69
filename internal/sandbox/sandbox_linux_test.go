package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(ChildMain())
	}
	os.Exit(m.Run())
}

// world is a fake user's world on disk: a home with secrets, a workspace
// inside it, an installed extension and a private temp dir. Everything is
// world-readable so the same tests can run as an unprivileged user.
type world struct {
	root, home, ws, ext, tmp string
	secret                   string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	root, err := os.MkdirTemp("", "gemkit-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &world{
		root:   root,
		home:   filepath.Join(root, "home"),
		ws:     filepath.Join(root, "home", "proj"),
		ext:    filepath.Join(root, "home", ".gemini", "extensions", "ext"),
		tmp:    filepath.Join(root, "tmp"),
		secret: "SECRET-" + filepath.Base(root),
	}
	for _, d := range []string{w.ws, w.ext, w.tmp, filepath.Join(w.home, ".ssh"), filepath.Join(w.ws, "sub"),
		filepath.Join(w.home, ".gemini", "gemkit"), filepath.Join(w.home, ".gemini", "extensions", "other")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(w.home, ".ssh", "id_rsa"): w.secret,
		filepath.Join(w.home, "notes.txt"):      "home notes",
		filepath.Join(w.ws, "input.txt"):        "workspace input",
		filepath.Join(w.ext, "tool.sh"):         "echo tool\n",
		// What a tool must never see or change, whatever its scope: the
		// consent records, another extension's settings and code, and
		// the CLI's own credentials.
		filepath.Join(w.home, ".gemini", "gemkit", "consent.json"):         `{"secret":"` + w.secret + `"}`,
		filepath.Join(w.home, ".gemini", "extensions", "other", ".env"):    "TOKEN=" + w.secret + "\n",
		filepath.Join(w.home, ".gemini", "extensions", "other", "tool.sh"): "echo other\n",
		filepath.Join(w.home, ".gemini", "oauth_creds.json"):               w.secret,
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(w.home, ".ssh", "id_rsa"), filepath.Join(w.ws, "link-to-key")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w.home, filepath.Join(w.ws, "link-to-home")); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) policy(read, write permission.Access, hosts ...string) Policy {
	return Policy{Read: read, Write: write, AllowedHosts: hosts, Workspace: w.ws, Home: w.home, ExtensionDir: w.ext, TempDir: w.tmp,
		Protected: []string{filepath.Join(w.home, ".gemini")}}
}

type runResult struct {
	stdout, stderr string
	err            error
	proc           *Process
}

// run runs argv in the sandbox from the workspace and waits for it.
// runRefused runs argv, an attempt the sandbox must stop: the sandbox
// must start, the tool must fail, and its output must hold none of
// secrets.
func runRefused(t *testing.T, l *Launcher, p Policy, secrets []string, argv ...string) runResult {
	t.Helper()
	r := run(t, l, p, 20*time.Second, argv...)
	t.Logf("refused: %v: %s", r.err, lastLine(r.stderr))
	if r.err == nil {
		t.Fatalf("the attempt succeeded: stdout %q stderr %q", r.stdout, r.stderr)
	}
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) {
		t.Fatalf("sandbox did not start: %v", r.err)
	}
	for _, s := range secrets {
		if strings.Contains(r.stdout, s) {
			t.Fatalf("leaked %q: %q", s, r.stdout)
		}
	}
	return r
}

// runKilled runs argv, a tool that outlives timeout and leaves children
// meant to write marker later; the tool must be killed at the timeout,
// long before it would end by itself (it runs 30 s or more; 20 s is a
// loaded machine's bound on the kill), and after settle (past when the
// children would write) marker must still be missing: nothing it started
// survived the kill.
func runKilled(t *testing.T, l *Launcher, p Policy, timeout, settle time.Duration, marker string, argv ...string) {
	t.Helper()
	start := time.Now()
	r := run(t, l, p, timeout, argv...)
	if r.err == nil {
		t.Fatal("the tool was not killed")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("kill took %v", d)
	}
	// A sleep: what is checked is that no killed child writes later, which no
	// event can say.
	time.Sleep(settle)
	assertMissing(t, marker)
}

func run(t *testing.T, l *Launcher, p Policy, timeout time.Duration, argv ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errb bytes.Buffer
	proc, err := l.Start(ctx, &Command{
		Policy: p, Path: argv[0], Args: argv[1:], Dir: p.Workspace,
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir, "LANG=C.UTF-8"},
		Stdout: &out, Stderr: &errb,
	})
	if err != nil {
		return runResult{err: err}
	}
	err = proc.Wait()
	return runResult{stdout: out.String(), stderr: errb.String(), err: err, proc: proc}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// modes are the two ways the sandbox confines: with namespaces, and the
// fallback for kernels that refuse them.
var modes = []struct {
	name string
	l    *Launcher
}{
	{"namespaces", &Launcher{}},
	{"no-namespaces", &Launcher{NoNamespaces: true}},
}

func TestEscapesFail(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			cases := []struct {
				name   string
				policy Policy
				argv   []string
				check  func(t *testing.T, r runResult)
			}{
				{"read ssh key outside scope", p, sh("cat " + filepath.Join(w.home, ".ssh", "id_rsa")), nil},
				{"list home outside scope", p, sh("ls " + w.home), nil},
				{"read /etc/shadow", w.policy(permission.AccessWorkspace, permission.AccessNone), sh("cat /etc/shadow"), nil},
				{"write outside workspace", p, sh("echo pwned > " + filepath.Join(w.home, "pwned")), func(t *testing.T, r runResult) {
					assertMissing(t, filepath.Join(w.home, "pwned"))
				}},
				{"write /tmp outside private temp", p, sh("echo pwned > " + filepath.Join(w.root, "pwned")), func(t *testing.T, r runResult) {
					assertMissing(t, filepath.Join(w.root, "pwned"))
				}},
				{"follow symlink out of workspace", p, sh("cat link-to-key"), nil},
				{"write through symlinked dir", p, sh("echo pwned > link-to-home/pwned"), func(t *testing.T, r runResult) {
					assertMissing(t, filepath.Join(w.home, "pwned"))
				}},
				{"write into extension folder", p, sh("echo pwned >> " + filepath.Join(w.ext, "tool.sh")), func(t *testing.T, r runResult) {
					assertUnchanged(t, filepath.Join(w.ext, "tool.sh"), "echo tool\n")
				}},
				{"create file in extension folder under write=home", w.policy(permission.AccessHome, permission.AccessHome), sh("echo pwned > " + filepath.Join(w.ext, "new")), func(t *testing.T, r runResult) {
					assertMissing(t, filepath.Join(w.ext, "new"))
				}},
				{"replace extension folder under write=home", w.policy(permission.AccessHome, permission.AccessHome), sh("mv " + filepath.Join(w.home, ".gemini") + " " + filepath.Join(w.home, "moved")), func(t *testing.T, r runResult) {
					assertMissing(t, filepath.Join(w.home, "moved"))
				}},
				{"write with write=none", w.policy(permission.AccessWorkspace, permission.AccessNone), sh("echo x > new.txt"), func(t *testing.T, r runResult) {
					assertMissing(t, filepath.Join(w.ws, "new.txt"))
				}},
				{"read workspace with read=none", w.policy(permission.AccessNone, permission.AccessNone), sh("cat input.txt"), nil},
				{"read gemkit's /proc entry", p, sh(fmt.Sprintf("cat /proc/%d/cmdline", os.Getpid())), nil},
				{"read gemkit's environment", p, sh(fmt.Sprintf("cat /proc/%d/environ", os.Getpid())), nil},
				// In its own PID namespace the tool is pid 1; a child it
				// started is another process.
				{"read another process's command line", p, sh("sleep 5 & cat /proc/$!/cmdline; r=$?; kill $!; exit $r"), nil},
				{"resolve a name directly", p, []string{python, "-c", "import socket; socket.getaddrinfo('example.com', 80)"}, nil},
				{"open a unix socket", p, []string{python, "-c", "import socket; socket.socket(socket.AF_UNIX)"}, nil},
				{"kernel keyring", p, []string{python, "-c", "import ctypes,sys; import platform; r=ctypes.CDLL(None).syscall({'x86_64': 250, 'aarch64': 219}[platform.machine()], 0, -3, 0); sys.exit(0 if r>=0 else 1)"}, nil},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					r := runRefused(t, m.l, c.policy, []string{w.secret}, c.argv...)
					if c.check != nil {
						c.check(t, r)
					}
				})
			}
		})
	}
}

func TestLoopbackServerUnreachable(t *testing.T) {
	python := systemPython(t)
	srv := sandboxtest.HTTPServer(t, "host-secret")
	port := srv.Addr().(*net.TCPAddr).Port
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			script := fmt.Sprintf("import socket; s=socket.create_connection(('127.0.0.1', %d), timeout=3); print(s.recv(100))", port)
			r := run(t, m.l, w.policy(permission.AccessWorkspace, permission.AccessNone), 20*time.Second, python, "-c", script)
			if r.err == nil || strings.Contains(r.stdout, "host-secret") {
				t.Fatalf("reached the host's loopback server: %q %v", r.stdout, r.err)
			}
		})
	}
}

func TestAllowedReadsAndWrites(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			script := `set -e
cat input.txt
echo written > out.txt
mkdir -p sub/deeper && echo deep > sub/deeper/f && rm sub/deeper/f
echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"
cat ` + filepath.Join(w.ext, "tool.sh") + `
echo null > /dev/null
head -c 4 /dev/urandom | wc -c
`
			r := run(t, m.l, p, 20*time.Second, sh(script)...)
			if r.err != nil {
				t.Fatalf("allowed operations failed: %v\nstdout %s\nstderr %s", r.err, r.stdout, r.stderr)
			}
			e := r.proc.Enforcement
			if e.LandlockABI == 0 || !e.Seccomp || (m.name == "namespaces") != (e.NetNS && e.PIDNS) || (m.name == "no-namespaces") != e.SeccompNet {
				t.Errorf("enforcement %+v in mode %s", e, m.name)
			}
			for _, want := range []string{"workspace input", "tmp", "echo tool", "4"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout %q lacks %q", r.stdout, want)
				}
			}
			if b, err := os.ReadFile(filepath.Join(w.ws, "out.txt")); err != nil || string(b) != "written\n" {
				t.Errorf("out.txt = %q, %v", b, err)
			}

			// Nothing of gemkit's leaks into the tool: only stdin, stdout
			// and stderr are open (3 is listdir's own).
			r = run(t, m.l, p, 20*time.Second, systemPython(t), "-c", "import os; print(*sorted(os.listdir('/proc/self/fd')))")
			if r.err != nil || strings.Fields(r.stdout) == nil || strings.Join(strings.Fields(r.stdout), " ") != "0 1 2 3" {
				t.Errorf("open fds: %q %v %s", r.stdout, r.err, r.stderr)
			}

			// write=full: anything but the extension's folder.
			// The folders on the way to it get no write right, their other
			// entries do.
			os.MkdirAll(filepath.Join(w.root, "other"), 0o777)
			fp := w.policy(permission.AccessFull, permission.AccessFull)
			r = run(t, m.l, fp, 20*time.Second, sh("echo ok > "+filepath.Join(w.root, "other", "full.txt")+" && ! echo x > "+filepath.Join(w.ext, "tool.sh"))...)
			if r.err != nil {
				t.Errorf("write=full: %v %s", r.err, r.stderr)
			}
			assertUnchanged(t, filepath.Join(w.ext, "tool.sh"), "echo tool\n")

			// read=home, write=home: the home is open except the
			// extension's folder, which stays readable.
			hp := w.policy(permission.AccessHome, permission.AccessHome)
			r = run(t, m.l, hp, 20*time.Second, sh("cat "+filepath.Join(w.home, ".ssh", "id_rsa")+" && echo ok > "+filepath.Join(w.home, ".ssh", "new")+" && cat "+filepath.Join(w.ext, "tool.sh"))...)
			if r.err != nil || !strings.Contains(r.stdout, w.secret) {
				t.Fatalf("home scope: %v %q %q", r.err, r.stdout, r.stderr)
			}
		})
	}
}

func TestForkedChildDiesWithTimeout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			marker := filepath.Join(w.ws, "alive")
			// One child stays in the group, one tries to leave it with
			// setsid; neither may outlive the kill.
			script := fmt.Sprintf("(sleep 1; echo bg > %s) & setsid sh -c 'sleep 1; echo sid >> %s' & sleep 30", marker, marker)
			runKilled(t, m.l, p, 300*time.Millisecond, 1500*time.Millisecond, marker, sh(script)...)
		})
	}
}

func TestProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	python := systemPython(t)
	srv := sandboxtest.HTTPServer(t, "hello from allowed")
	port := srv.Addr().(*net.TCPAddr).Port
	w := newWorld(t)
	var denied []netproxy.Denial
	l := &Launcher{Resolver: sandboxtest.MapResolver{"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1"}, OnDeny: func(d netproxy.Denial) { denied = append(denied, d) },
		AllowPrivateAddresses: true}
	p := w.policy(permission.AccessWorkspace, permission.AccessNone, fmt.Sprintf("http://allowed.test:%d", port))

	t.Run("allowed host through the proxy", func(t *testing.T) {
		script := fmt.Sprintf(`import urllib.request, http.client, os
print(urllib.request.urlopen("http://allowed.test:%[1]d/").read().decode())
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
c.set_tunnel("allowed.test", %[1]d)
c.request("GET", "/tunnel")
print("tunnel:", c.getresponse().read().decode())
`, port)
		r := run(t, l, p, 20*time.Second, python, "-c", script)
		if r.err != nil {
			t.Fatalf("%v\n%s\n%s", r.err, r.stdout, r.stderr)
		}
		if strings.Count(r.stdout, "hello from allowed") != 2 || !strings.Contains(r.stdout, "tunnel:") {
			t.Fatalf("stdout %q", r.stdout)
		}
		if !r.proc.Enforcement.Proxy || !r.proc.Enforcement.NetNS {
			t.Fatalf("enforcement %+v", r.proc.Enforcement)
		}
	})
	t.Run("denied host is refused and reported", func(t *testing.T) {
		denied = nil
		script := fmt.Sprintf(`import urllib.request, http.client
for u in ["http://denied.test:%[1]d/", "http://allowed.test:%[2]d/"]:
    try:
        urllib.request.urlopen(u)
        print("REACHED", u)
    except Exception as e:
        print("refused", u, e)
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=5)
c.set_tunnel("denied.test", 443)
try:
    c.request("GET", "/")
    print("REACHED tunnel")
except Exception as e:
    print("refused tunnel", e)
`, port, port+1)
		r := run(t, l, p, 20*time.Second, python, "-c", script)
		if r.err != nil || strings.Contains(r.stdout, "REACHED") {
			t.Fatalf("%v\n%s\n%s", r.err, r.stdout, r.stderr)
		}
		if len(denied) != 3 || len(r.proc.Denied()) != 3 {
			t.Fatalf("denials %v / %v", denied, r.proc.Denied())
		}
	})
	t.Run("direct connections still fail", func(t *testing.T) {
		script := fmt.Sprintf("import socket; socket.create_connection(('127.0.0.1', %d), timeout=3)", port)
		if r := run(t, l, p, 20*time.Second, python, "-c", script); r.err == nil {
			t.Fatal("direct connection to the host's loopback succeeded")
		}
		if r := run(t, l, p, 20*time.Second, python, "-c", "import socket; socket.getaddrinfo('allowed.test', 80)"); r.err == nil {
			t.Fatal("the tool resolved a name itself")
		}
	})
	t.Run("no namespaces refuses allowedHosts", func(t *testing.T) {
		r := run(t, &Launcher{NoNamespaces: true}, p, 5*time.Second, "/bin/true")
		var ue *UnenforceableError
		if !errors.As(r.err, &ue) {
			t.Fatalf("want UnenforceableError, got %v", r.err)
		}
		r = run(t, &Launcher{NoNamespaces: true, AllowUnconfined: true}, p, 5*time.Second, "/bin/true")
		if r.err != nil || len(r.proc.Warnings) == 0 {
			t.Fatalf("allow-unconfined: %v, warnings %v", r.err, r.proc)
		}
	})
}

func TestUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestEscapesFail|TestLoopbackServerUnreachable|TestAllowedReadsAndWrites|TestForkedChildDiesWithTimeout|TestProxy|TestAttacks|TestTimeoutEscapes|TestForkBombBounded|TestSecondWall|TestMemoryBound|TestFileSizeBound|TestRuntimeReservations|TestLocalhostAllowed|TestOwnServersRefused|TestOwnServerPort|TestProxyConnectionCap|TestTempDirInodesBounded|TestCarveUnlistable|TestGuardedPlaceholders|TestGuardedWithoutNamespaces|TestPlaceholderSharedAcrossProcesses|TestPlaceholderNeverRemovesUsers|TestPlaceholderLockDirPrivate|TestGuardRemovedStopsTool|TestPlaceholderConcurrentRuns|TestReadOnlyBindsSurviveRebinds|TestProxyDialsLoopbackFromItsOwnAddress|TestPlaceholderLocksWhateverTheEnvironment|TestHomeWorkspaceRefused|TestNoUserSitePackages|TestPlaceholdersLinger|TestPlaceholderLocksBounded|TestPlaceholderLocksSwept|TestProxySourceForEveryLocalAddress|TestEditorSettingsProtected|TestCredentialsClosedByKind|TestUnixSocketsConfined|TestUnixSocketsInside|TestUnixSocketRefusalReported|TestGate|TestGatePanics|TestToolHasNoTerminal)$")
}

func systemPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("no system python3 in /usr/bin: run scripts/setup-and-test, or apt-get install -y python3")
	return ""
}

func assertMissing(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); err == nil {
		t.Fatalf("%s exists: the sandbox let the tool create it", p)
	}
}

func assertUnchanged(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Fatalf("%s changed: %q %v", p, b, err)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func TestStartErrors(t *testing.T) {
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessNone)
	r := run(t, &Launcher{Exe: "/bin/true"}, p, 5*time.Second, "/bin/true")
	if r.err == nil || !strings.Contains(r.err.Error(), "is not a gemkit binary") || !strings.Contains(r.err.Error(), "(exit status 0)") {
		t.Fatalf("binary without the hook: %v", r.err)
	}
	r = run(t, &Launcher{}, p, 5*time.Second, "/nonexistent/tool")
	if r.err == nil || !strings.Contains(r.err.Error(), "starting /nonexistent/tool") {
		t.Fatalf("missing program: %v", r.err)
	}
	bad := p
	bad.Write = permission.AccessHome
	if r := run(t, &Launcher{}, bad, 5*time.Second, "/bin/true"); r.err == nil || !strings.Contains(r.err.Error(), "wider than") {
		t.Fatalf("invalid policy: %v", r.err)
	}
}

func TestNoLandlockRefusedUnlessAllowed(t *testing.T) {
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessNone)
	r := run(t, &Launcher{noLandlock: true}, p, 5*time.Second, "/bin/true")
	var ue *UnenforceableError
	if !errors.As(r.err, &ue) || !strings.Contains(r.err.Error(), "Landlock is not available") || strings.Contains(r.err.Error(), "--allow-unconfined") {
		t.Fatalf("want a refusal naming Landlock and no CLI flag, got %v", r.err)
	}
	// Without Landlock the second wall still holds where there is a
	// mount namespace: the key is absent from the tool's view.
	r = run(t, &Launcher{noLandlock: true, AllowUnconfined: true}, p, 5*time.Second, sh("cat "+filepath.Join(w.home, ".ssh", "id_rsa"))...)
	if r.proc == nil || r.proc.Enforcement.MountNS == strings.Contains(r.stdout, w.secret) {
		t.Fatalf("allowed unconfined run: %v %q", r.err, r.stdout)
	}
	r = run(t, &Launcher{noLandlock: true, AllowUnconfined: true, NoNamespaces: true}, p, 5*time.Second, sh("cat "+filepath.Join(w.home, ".ssh", "id_rsa"))...)
	if r.err != nil || !strings.Contains(r.stdout, w.secret) {
		t.Fatalf("allowed unconfined run without namespaces: %v %q", r.err, r.stdout)
	}
	if len(r.proc.Warnings) != 1 || !strings.Contains(r.proc.Warnings[0], "UNCONFINED: Landlock") || r.proc.Enforcement.LandlockABI != 0 {
		t.Fatalf("warnings %q enforcement %+v", r.proc.Warnings, r.proc.Enforcement)
	}
	// What can still be enforced still is: no network.
	r = run(t, &Launcher{noLandlock: true, AllowUnconfined: true}, p, 5*time.Second, systemPython(t), "-c", "import socket; socket.getaddrinfo('example.com', 80)")
	if r.err == nil {
		t.Fatal("the network was open in a run allowed to be unconfined for files only")
	}
}
