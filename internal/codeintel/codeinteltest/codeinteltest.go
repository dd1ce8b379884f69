// Package codeinteltest holds what the code-intelligence tests share: the
// fixture projects (a Go module, a TypeScript project, a Python package,
// each with the same small shop: greet, store, main) copied into a
// test's own folder, and the pinned language servers that
// scripts/setup-and-test installs. Only tests import it.
package codeinteltest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

// dir is this package's folder, where testdata lies.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Fixture copies the fixture project of lang ("go", "ts", "py") into a
// new folder of the test and returns it (symbolic links resolved, as
// language servers report paths).
func Fixture(t testing.TB, lang string) string {
	t.Helper()
	dst, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dst = filepath.Join(dst, lang)
	Copy(t, lang, dst)
	return dst
}

// Copy copies the fixture project of lang into the folder dst.
func Copy(t testing.TB, lang, dst string) {
	t.Helper()
	src := filepath.Join(dir(), "testdata", lang)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Versions the tests and scripts/setup-and-test pin.
const (
	GoplsVersion            = "v0.23.0"
	TypeScriptServerVersion = "4.4.1"
	TypeScriptVersion       = "5.9.3"
)

// Gopls returns the path of gopls, which scripts/setup-and-test installs
// on PATH; a missing one fails the test with how to install it. Under
// -short it skips the test: a real gopls takes seconds to load a
// workspace, and CI runs without -short.
func Gopls(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real gopls, which takes seconds to load a workspace: runs without -short, as in CI")
	}
	p, err := exec.LookPath("gopls")
	if err != nil {
		t.Fatalf("gopls is not installed: run scripts/setup-and-test, or GOBIN=/usr/local/bin go install golang.org/x/tools/gopls@%s", GoplsVersion)
	}
	return p
}

// NodeBin returns interop/node_modules/.bin, where the pinned npm
// language servers (typescript-language-server, pyright) and cclsp are,
// after checking that name is there; a missing one fails the test with
// how to install it. Under -short it skips the test: the npm servers take
// seconds to start, and CI runs without -short.
func NodeBin(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s from interop/node_modules, which takes seconds to start: runs without -short, as in CI", name)
	}
	root := filepath.Join(dir(), "..", "..", "..")
	bin := filepath.Join(root, "interop", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
		t.Fatalf("%s is not installed in interop/node_modules: run `npm ci` in interop/ (scripts/setup-and-test does)", name)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node (>= 20) is needed: install Node.js, then run `npm ci` in interop/")
	}
	return bin
}

// PathWith returns a PATH value with dirs first, then the process's own.
func PathWith(dirs ...string) string {
	return strings.Join(append(dirs, os.Getenv("PATH")), string(os.PathListSeparator))
}

// Procs returns the processes named name (their comm, as ps shows it)
// whose working directory is dir: a workspace's language servers.
func Procs(name, dir string) []int {
	pids, _ := proc.Pids()
	var out []int
	for _, pid := range pids {
		if !Server(pid, name) {
			continue
		}
		if cwd, err := proc.Cwd(pid); err == nil && cwd == dir {
			out = append(out, pid)
		}
	}
	return out
}

// Server reports whether pid is a running process named name (its comm)
// whose parent is not: a server forks to run a command (gopls runs go
// list), and the child bears the server's name until its exec, which a
// loaded machine leaves long enough to be seen (Neovim 0.7's gopls
// counted twice at load 17). A zombie is gone, not yet reaped.
func Server(pid int, name string) bool {
	st, err := proc.ReadStat(pid)
	if err != nil || st.Comm != name || !st.Running() {
		return false
	}
	parent, err := proc.ReadStat(st.PPid)
	return err != nil || parent.Comm != name
}

// Brokers returns the code intelligence brokers of the workspace ws
// (gemkit codeintel broker --workspace ws).
func Brokers(ws string) []int {
	pids, _ := proc.Pids()
	var out []int
	for _, pid := range pids {
		args, _ := proc.Cmdline(pid)
		if strings.Contains(strings.Join(args, "\x00")+"\x00", "codeintel\x00broker\x00--workspace\x00"+ws+"\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// WaitGone waits (at most a minute) until the workspace's brokers and
// the language servers named have ended: an agent that went takes them
// with it.
func WaitGone(t testing.TB, ws string, servers ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		left := Brokers(ws)
		for _, s := range servers {
			left = append(left, Procs(s, ws)...)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the workspace left running: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
