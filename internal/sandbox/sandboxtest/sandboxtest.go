// Package sandboxtest helps tests prove the sandbox holds for an
// unprivileged user too: CI runs as root, so a test re-runs its own test
// binary as uid 65534 through setpriv. It also holds the loopback fakes
// that the sandbox's tests and its proxy's (internal/sandbox/netproxy)
// both use: a resolver of mapped names and an HTTP server.
package sandboxtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RerunUnprivileged copies the running test binary into a world-readable
// folder and runs the tests matching pattern in it as uid/gid 65534 with
// no supplementary groups, failing t if they fail. It is a no-op for a
// test that already runs unprivileged. Under -short it skips: the rerun
// repeats the package's sandboxed runs, seconds each; CI runs it. It
// marks t parallel (the caller must not have): the rerun is a process of
// its own, whose waits (sandboxes starting, servers answering) overlap
// the package's other tests.
func RerunUnprivileged(t *testing.T, pattern string) {
	t.Helper()
	t.Parallel()
	if testing.Short() {
		t.Skip("reruns sandboxed real processes as uid 65534, which takes seconds: runs without -short, as in CI")
	}
	if os.Getuid() != 0 {
		t.Skip("already unprivileged: the other tests of this package ran as this user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop to an unprivileged user: apt-get install util-linux")
	}
	dir, err := os.MkdirTemp("", "gemkit-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	CopyBinary(t, bin)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run="+pattern, "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=/tmp", "LANG=C.UTF-8"}
	// The race detector's options reach the rerun as they reached this
	// binary (scripts/setup-and-test sets GORACE).
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil {
		t.Fatalf("the tests failed for an unprivileged user: %v", err)
	}
}

// CopyBinary copies the running test binary to dst, executable. The copy
// is written by cp, a process of its own: a file this process wrote would
// be open, for the moment of the write, in every child another test's
// goroutine forked meanwhile, and executing it before such a child's exec
// fails with ETXTBSY ("text file busy"; golang.org/issue/22315), which the
// parallel tests of a package make likely.
func CopyBinary(t *testing.T, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", os.Args[0], dst).CombinedOutput(); err != nil {
		t.Fatalf("copying the test binary: %v\n%s", err, out)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
}
