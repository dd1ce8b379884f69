package sandbox

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// TestProxyDialsLoopbackFromItsOwnAddress: what a tool reaches on this
// machine's loopback through the proxy comes from permission.ProxySource,
// never 127.0.0.1, so that gemkit's servers can refuse it whatever the
// tool knows; a local service it was allowed still answers. Before, the
// proxy's connections came from 127.0.0.1, like a local client's.
func TestProxyDialsLoopbackFromItsOwnAddress(t *testing.T) {
	python := systemPython(t)
	var mu sync.Mutex
	var peers []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers = append(peers, r.RemoteAddr)
		mu.Unlock()
		fmt.Fprint(w, "local service")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	w := newWorld(t)
	p := w.policy(permission.AccessNone, permission.AccessNone, "localhost")
	script := fmt.Sprintf(`import urllib.request, http.client
print(urllib.request.urlopen("http://localhost:%[1]d/", timeout=10).read().decode())
c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=10)
c.set_tunnel("localhost", %[1]d)
c.request("GET", "/"); print("tunnel", c.getresponse().read().decode())
`, port)
	r := run(t, &Launcher{}, p, 30*time.Second, python, "-c", script)
	if r.err != nil || strings.Count(r.stdout, "local service") != 2 {
		t.Fatalf("%v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(peers) != 2 {
		t.Fatalf("peers %v", peers)
	}
	for _, peer := range peers {
		if !permission.FromSandbox(peer) {
			t.Errorf("the proxy connected from %s, not from %s", peer, permission.ProxySource)
		}
	}
}

// TestPlaceholderLocksWhateverTheEnvironment: the placeholder locks are
// where every gemkit process of the user finds them, whatever its HOME or
// XDG_CONFIG_HOME: two gemkit processes whose environments differ must
// see each other's locks, or one removes a placeholder the other's tool
// has bound. Before, the folder followed XDG_CONFIG_HOME.
func TestPlaceholderLocksWhateverTheEnvironment(t *testing.T) {
	l := &Launcher{}
	want, err := l.lockDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	got, err := l.lockDir()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("with another XDG_CONFIG_HOME and HOME the locks are in %s, not %s", got, want)
	}
	if h := permission.AccountHome(); h != "" && got != filepath.Join(h, ".config", "gemkit", "placeholders") {
		t.Errorf("locks in %s, not under the account's home folder %s", got, h)
	}
}

// TestHomeWorkspaceRefused: a workspace that is the home folder (gemkit
// mcp started there by a client) or holds it (/) is refused for a
// workspace scope, read or write, with words saying why: the tool would
// reach ~/.ssh/authorized_keys, ~/.local/bin or ~/.config/autostart. A
// project folder still runs. Before, `write: workspace` from the home
// folder wrote ~/.ssh/authorized_keys.
func TestHomeWorkspaceRefused(t *testing.T) {
	w := newWorld(t)
	os.MkdirAll(filepath.Join(w.home, ".ssh"), 0o755)
	for _, tc := range []struct {
		ws          string
		read, write permission.Access
	}{
		{w.home, permission.AccessWorkspace, permission.AccessWorkspace},
		{w.home, permission.AccessWorkspace, permission.AccessNone},
		{"/", permission.AccessWorkspace, permission.AccessWorkspace},
		{filepath.Dir(w.home), permission.AccessWorkspace, permission.AccessNone},
	} {
		p := w.policy(tc.read, tc.write)
		p.Workspace = tc.ws
		r := run(t, &Launcher{LockDir: lockDir(t)}, p, 20*time.Second, sh(`echo key >> .ssh/authorized_keys && echo WROTE`)...)
		if r.err == nil || strings.Contains(r.stdout, "WROTE") || !strings.Contains(r.err.Error(), "home folder") || !strings.Contains(r.err.Error(), "--workspace") {
			t.Errorf("workspace %s (read %s, write %s): %v %q", tc.ws, tc.read, tc.write, r.err, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(w.home, ".ssh", "authorized_keys")); err == nil {
		t.Error("~/.ssh/authorized_keys was written")
	}
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	if r := run(t, &Launcher{LockDir: lockDir(t)}, p, 20*time.Second, sh(`echo ok > made.txt && echo LEGIT`)...); r.err != nil || !strings.Contains(r.stdout, "LEGIT") {
		t.Fatalf("a project folder: %v %q %q", r.err, r.stdout, r.stderr)
	}
}

// TestNoUserSitePackages: a python tool runs without the user's
// site-packages (~/.local/lib/pythonX.Y/site-packages), where another
// extension's write: home tool could plant a .pth file that would then
// run in this one with its permissions. Before PYTHONNOUSERSITE, a tool
// with read: home ran the planted line.
func TestNoUserSitePackages(t *testing.T) {
	python := systemPython(t)
	w := newWorld(t)
	ver := strings.TrimSpace(pythonVersion(t, python))
	site := filepath.Join(w.home, ".local", "lib", "python"+ver, "site-packages")
	os.MkdirAll(site, 0o755)
	os.WriteFile(filepath.Join(site, "planted.pth"), []byte("import sys; print('PLANTED', file=sys.stderr)\n"), 0o644)
	p := w.policy(permission.AccessHome, permission.AccessNone)
	r := run(t, &Launcher{}, p, 20*time.Second, python, "-c", "import site; print('user site', site.ENABLE_USER_SITE)")
	if r.err != nil || strings.Contains(r.stderr, "PLANTED") || !strings.Contains(r.stdout, "user site False") {
		t.Fatalf("%v\nstdout %q\nstderr %q", r.err, r.stdout, r.stderr)
	}
}

func pythonVersion(t *testing.T, python string) string {
	t.Helper()
	w := newWorld(t)
	r := run(t, &Launcher{}, w.policy(permission.AccessNone, permission.AccessNone), 20*time.Second, python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
	if r.err != nil {
		t.Fatalf("python's version: %v %s", r.err, r.stderr)
	}
	return r.stdout
}
