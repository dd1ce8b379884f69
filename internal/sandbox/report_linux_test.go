package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestRefusalsReported: with ReportRefusals and no host allowed, what a
// tool tries is refused and reported by host: a client that honours
// HTTP_PROXY (curl) by the deny-all proxy, one that looks the name up
// itself (getent, Python's socket) by the sandbox's resolver, which
// answers that no such name exists. An allowed host looked up by a
// client that ignores the proxy is reported as such. Nothing reaches the
// test's loopback server.
func TestRefusalsReported(t *testing.T) {
	python := systemPython(t)
	srv := sandboxtest.HTTPServer(t, "host-secret")
	port := srv.Addr().(*net.TCPAddr).Port
	w := newWorld(t)
	for _, c := range []struct {
		name  string
		hosts []string
		argv  []string
		want  netproxy.Denial
	}{
		{"curl", nil, sh(fmt.Sprintf("curl -fsS --max-time 5 http://127.0.0.1:%d/ http://api.example.test/x", port)),
			netproxy.Denial{Method: "GET", Host: "127.0.0.1", Port: port, Reason: "host not in network.allowedHosts"}},
		{"getent", nil, []string{"/usr/bin/getent", "hosts", "Exfil.Example.TEST"},
			netproxy.Denial{Method: netproxy.LookupMethod, Host: "exfil.example.test", Reason: netproxy.LookupNotAllowed}},
		{"python", nil, []string{python, "-c", "import socket; socket.create_connection(('upload.example.test', 443), timeout=3)"},
			netproxy.Denial{Method: netproxy.LookupMethod, Host: "upload.example.test", Reason: netproxy.LookupNotAllowed}},
		{"python-address", nil, []string{python, "-c", fmt.Sprintf("import socket; socket.create_connection(('127.0.0.1', %d), timeout=3)", port)},
			netproxy.Denial{Method: DirectMethod, Host: "127.0.0.1", Port: port, Reason: DirectNotAllowed}},
		{"curl-noproxy", nil, sh(fmt.Sprintf("curl -fsS --noproxy '*' --max-time 5 http://10.0.0.5:%d/", port)),
			netproxy.Denial{Method: DirectMethod, Host: "10.0.0.5", Port: port, Reason: DirectNotAllowed}},
		{"allowed-no-proxy", []string{"api.example.test"}, []string{python, "-c", "import socket; socket.getaddrinfo('api.example.test', 443)"},
			netproxy.Denial{Method: netproxy.LookupMethod, Host: "api.example.test", Reason: netproxy.LookupNoProxy}},
		// An OAuth callback's listen on loopback (dynatrace's server
		// listens on 127.0.0.1:5345), from a thread of its own.
		{"listen", nil, []string{python, "-c", `import socket, threading
def listen():
    s = socket.socket(); s.bind(('127.0.0.1', 5345)); s.listen()
t = threading.Thread(target=listen); t.start(); t.join()
socket.socket().bind(('127.0.0.1', 5345))`},
			netproxy.Denial{Method: ListenMethod, Host: "127.0.0.1", Port: 5345, Reason: ListenRefused}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []netproxy.Denial
			p := w.policy(permission.AccessWorkspace, permission.AccessNone, c.hosts...)
			p.ReportRefusals = true
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			proc, err := (&Launcher{}).Start(ctx, &Command{
				Policy: p, Path: c.argv[0], Args: c.argv[1:], Dir: p.Workspace,
				Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir, "LANG=C.UTF-8"},
				Stdout: &out, Stderr: &errb,
				OnDeny: func(d netproxy.Denial) { mu.Lock(); got = append(got, d); mu.Unlock() },
			})
			if err != nil {
				t.Fatal(err)
			}
			err = proc.Wait()
			t.Logf("%v: %s %s", err, out.String(), errb.String())
			if err == nil || strings.Contains(out.String(), "host-secret") {
				t.Fatalf("not refused: %v %q", err, out.String())
			}
			if !proc.Enforcement.Proxy {
				t.Errorf("no proxy: %+v", proc.Enforcement)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.ContainsFunc(got, func(d netproxy.Denial) bool {
				return d.Method == c.want.Method && d.Host == c.want.Host && d.Port == c.want.Port && d.Reason == c.want.Reason
			}) {
				t.Errorf("reported %+v, want %+v", got, c.want)
			}
			if len(proc.Denied()) != len(got) {
				t.Errorf("Denied %v, reported %v", proc.Denied(), got)
			}
		})
	}
}

// TestOtherBindsGoOn: a bind that is no TCP listen (a UDP socket's, a
// Unix socket's in the tool's temp folder) goes on unreported, as
// without the watch of the tool's calls.
func TestOtherBindsGoOn(t *testing.T) {
	python := systemPython(t)
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessNone)
	p.ReportRefusals, p.UnixSockets = true, true
	var mu sync.Mutex
	var got []netproxy.Denial
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	proc, err := (&Launcher{}).Start(ctx, &Command{
		Policy: p, Path: python, Dir: p.Workspace,
		Args: []string{"-c", `import socket, os
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('127.0.0.1', 5353))
x = socket.socket(socket.AF_UNIX); x.bind(os.path.join(os.environ['TMPDIR'], 's'))
print('bound')`},
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir, "LANG=C.UTF-8"},
		Stdout: &out, Stderr: &errb,
		OnDeny: func(d netproxy.Denial) { mu.Lock(); got = append(got, d); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Wait(); err != nil || strings.TrimSpace(out.String()) != "bound" {
		t.Fatalf("%v: %s %s", err, out.String(), errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 {
		t.Errorf("reported %+v", got)
	}
}

// TestRefusalsReportedUnprivileged runs TestRefusalsReported as uid
// 65534: the resolver's port 53 is bound in a user namespace.
func TestRefusalsReportedUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestRefusalsReported|TestOtherBindsGoOn)$")
}
