// Package gemkittest holds what the tests of several packages need alike:
// the repository root, the real gemkit binary (built once per test
// binary), and Node with the interop packages (the real Gemini CLI client,
// @google/gemini-cli-core at the version interop/package.json pins,
// code and the TypeScript MCP SDK). Only tests import it.
package gemkittest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The binary built by Gemkit lives in binDir, made by Main before any test
// runs (so that a test's own TMPDIR cannot hold it) and removed after the
// last one.
var (
	binDir    string
	pkgDir    string // the test's package directory, where go build runs
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Main runs the tests of m and returns their exit code, removing the
// gemkit binary Gemkit built. A package whose tests call Gemkit calls it
// from its TestMain: os.Exit(gemkittest.Main(m)).
func Main(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gemkittest-bin-")
	if err != nil {
		os.Stderr.WriteString("gemkittest: " + err.Error() + "\n")
		return 2
	}
	binDir = dir
	defer os.RemoveAll(dir)
	// The tests' gemkit commands run as a person's would: the variables an
	// agent's shell sets for the commands its model runs make the commands
	// that record consent ask on the terminal, so a test run from such a
	// shell would not find them as CI does. A test that means them sets
	// them itself.
	for _, k := range []string{"GEMINI_CLI", "CLAUDECODE", "CODEX_THREAD_ID"} {
		os.Unsetenv(k)
	}
	// Tests may change directory (t.Chdir) before their first Gemkit call;
	// go build must still run inside the module.
	if pkgDir, err = os.Getwd(); err != nil {
		os.Stderr.WriteString("gemkittest: " + err.Error() + "\n")
		return 2
	}
	return m.Run()
}

// RepoRoot is the directory holding go.mod, found upwards from the test's
// working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// SkipShort skips t under -short with what it needs: a real peer (an
// editor, an agent from npm, tmux, a language server, the built gemkit
// binary) that takes seconds to start. `go test -short` is the inner loop
// of unit and transcript tests; CI runs without -short, so these run there.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s, which takes seconds to start: runs without -short, as in CI", what)
	}
}

// Gemkit returns the real gemkit binary, built on the first call of the
// test binary and shared by the later ones. The package's TestMain must
// call Main, which removes it. Under -short it skips the test (SkipShort).
//
// The link (about 12 s of CPU under load, the compiled packages coming
// from the build cache) is done once for all the test binaries of a
// checkout: go build writes the binary to a folder of this user's named
// by the checkout (sharedBin), where it relinks only when a source
// changed, under a lock the test binaries go test runs side by side
// share; each test binary runs a hard link of it, which a later relink
// (by rename) leaves as it is.
//
// It is built as it ships, without cgo (CGO_ENABLED=0, as README.md's
// install and bench/internal/benchenv build it): one build of gemkit's
// packages serves them all, where one with cgo compiled them all again
// (47.3 CPU-s on a fresh build cache after the other).
func Gemkit(t testing.TB) string {
	t.Helper()
	SkipShort(t, "the built gemkit binary")
	if binDir == "" {
		t.Fatal("gemkittest.Gemkit needs the package's TestMain to call gemkittest.Main")
	}
	buildOnce.Do(func() {
		bin := filepath.Join(binDir, "gemkit")
		shared, unlock, err := sharedBin(pkgDir)
		if err != nil {
			buildErr = err
			return
		}
		defer unlock()
		cmd := exec.Command("go", "build", "-o", shared, "github.com/gemkit/gemkit/cmd/gemkit")
		cmd.Dir = pkgDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(err.Error() + "\n" + string(out))
			return
		}
		if err := linkOrCopy(shared, bin); err != nil {
			buildErr = err
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return builtBin
}

// Interop returns the node binary and the repository's interop directory,
// after checking that each of pkgs (such as "@modelcontextprotocol/sdk")
// is installed in interop/node_modules. Either missing fails the test
// with what to install: CI runs `npm install --no-save` in interop/ (scripts/setup-and-test).
// Under -short it skips the test (SkipShort).
func Interop(t testing.TB, pkgs ...string) (node, dir string) {
	t.Helper()
	SkipShort(t, "node and the interop packages "+strings.Join(pkgs, ", "))
	dir = filepath.Join(RepoRoot(t), "interop")
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p))); err != nil {
			t.Fatalf("interop/node_modules is missing %s: run `npm install --no-save` in interop/ (%v)", p, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node (>= 20) is needed: install Node.js, then run `npm install --no-save` in interop/")
	}
	return node, dir
}

// Git runs the real git in dir with a fixed identity and no signing, so
// that commits work on any machine, and returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=gemkit test", "-c", "user.email=test@gemkit.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// ClosedPort returns a loopback port nothing listens on: one that was just
// listened on and closed.
func ClosedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// ServedPort returns a loopback port a listener holds until the test
// ends (it accepts nothing: a connect succeeds at the kernel's backlog),
// for a file that must name a live server, beside ClosedPort's dead one.
func ServedPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// Tool returns the path of a program the tests need, such as an editor,
// tmux, python3 or node. scripts/setup-and-test installs every one of
// them, so a missing one is a broken set-up, reported as a failure that
// names the Debian package, never a silent skip. Under -short it skips the
// test (SkipShort), saying so.
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	SkipShort(t, name)
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed: run scripts/setup-and-test, or apt-get install -y %s", name, pkg)
	}
	return p
}

// WaitFile waits for up to a minute until path holds exactly want (a
// file an agent writes on its own time).
func WaitFile(t testing.TB, path, want string) {
	t.Helper()
	var b []byte
	if !Poll(time.Minute, 100*time.Millisecond, func() bool { b, _ = os.ReadFile(path); return string(b) == want }) {
		t.Fatalf("%s holds %q, want %q", path, b, want)
	}
}

// WriteFile writes body to path (mode 0644), making its folders first.
func WriteFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
