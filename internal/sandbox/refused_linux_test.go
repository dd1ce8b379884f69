package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// refusedEnv tells a re-run test binary that it runs where the kernel
// refuses new user namespaces, as which user ("root" or "user").
const refusedEnv = "GEMKIT_TEST_USERNS_REFUSED"

// TestUserNamespacesRefusedByKernel runs the sandbox where the kernel
// refuses to create user namespaces: the test binary is re-run inside a
// user namespace whose max_user_namespaces is 0, once as its root (the
// launcher then makes the namespaces without a user namespace) and once
// as uid 65534 (no namespaces at all: seccomp must deny the network and
// allowedHosts must be refused). Nothing is simulated in gemkit: the
// clone really fails.
func TestUserNamespacesRefusedByKernel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	switch os.Getenv(refusedEnv) {
	case "root":
		checkRefusedAsRoot(t)
		return
	case "user":
		checkRefusedAsUser(t)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to map a user namespace with an unprivileged user in it; CI runs as root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed: apt-get install util-linux")
	}
	dir, err := os.MkdirTemp("", "gemkit-refused-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "sandbox.test")
	sandboxtest.CopyBinary(t, bin)
	for _, c := range []struct{ who, run string }{
		{"root", `exec "$0" -test.v -test.count=1 -test.run '^(TestUserNamespacesRefusedByKernel|TestEscapesFail|TestAllowedReadsAndWrites|TestProxy|TestAttacks|TestForkBombBounded|TestRefusalsReported)$'`},
		{"user", `exec ` + setpriv + ` --reuid=65534 --regid=65534 --clear-groups "$0" -test.v -test.count=1 -test.run '^TestUserNamespacesRefusedByKernel$'`},
	} {
		t.Run(c.who, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", "echo 0 > /proc/sys/user/max_user_namespaces && "+c.run, bin)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", "LANG=C.UTF-8", refusedEnv + "=" + c.who}
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:                 syscall.CLONE_NEWUSER,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}},
				GidMappingsEnableSetgroups: true,
			}
			out, err := cmd.CombinedOutput()
			t.Logf("inside a user namespace that refuses new ones, as %s:\n%s", c.who, out)
			if err != nil {
				t.Fatalf("failed: %v", err)
			}
			if !strings.Contains(string(out), "--- PASS: TestUserNamespacesRefusedByKernel") || strings.Contains(string(out), "--- SKIP") {
				t.Fatal("the checks did not run")
			}
		})
	}
}

// checkRefusedAsRoot: root makes the namespaces without a user namespace.
func checkRefusedAsRoot(t *testing.T) {
	w := newWorld(t)
	r := run(t, &Launcher{}, w.policy(permission.AccessWorkspace, permission.AccessWorkspace), 20*time.Second, "/bin/true")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if e := r.proc.Enforcement; e.UserNS || !e.NetNS || !e.PIDNS || e.LandlockABI == 0 || len(r.proc.Warnings) > 0 {
		t.Fatalf("enforcement %+v, warnings %v", e, r.proc.Warnings)
	}
}

// checkRefusedAsUser: no namespaces; what can be enforced is, the rest is
// refused with the kernel's reason.
func checkRefusedAsUser(t *testing.T) {
	python := systemPython(t)
	w := newWorld(t)
	l := &Launcher{}
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	r := run(t, l, p, 20*time.Second, "/bin/true")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if e := r.proc.Enforcement; e.NetNS || e.PIDNS || !e.SeccompNet || e.LandlockABI == 0 {
		t.Fatalf("enforcement %+v", e)
	}
	for _, argv := range [][]string{
		sh("cat " + filepath.Join(w.home, ".ssh", "id_rsa")),
		{python, "-c", "import socket; socket.getaddrinfo('example.com', 80)"},
		{python, "-c", "import os; os.setsid()"},
	} {
		if r := run(t, l, p, 20*time.Second, argv...); r.err == nil || strings.Contains(r.stdout, w.secret) {
			t.Errorf("%v: escaped: %q %v", argv, r.stdout, r.err)
		}
	}
	r = run(t, l, w.policy(permission.AccessWorkspace, permission.AccessNone, "example.com"), 20*time.Second, "/bin/true")
	var ue *UnenforceableError
	if !errors.As(r.err, &ue) || !strings.Contains(r.err.Error(), "the kernel refused to create namespaces") || strings.Contains(r.err.Error(), "--allow-unconfined") {
		t.Fatalf("allowedHosts without namespaces: %v", r.err)
	}
}
