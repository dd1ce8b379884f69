package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/permission"
)

// lockDir is a folder for the placeholder locks of one test, made by the
// launcher.
func lockDir(t *testing.T) string { return filepath.Join(t.TempDir(), "locks") }

// startWaiting starts argv under l and returns the running tool, the
// writer that feeds its stdin and its stdout.
func startWaiting(t *testing.T, l *Launcher, p Policy, argv ...string) (*Process, io.WriteCloser, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	in, feed := io.Pipe()
	var out, errb bytes.Buffer
	proc, err := l.Start(ctx, &Command{
		Policy: p, Path: argv[0], Args: argv[1:], Dir: p.Workspace,
		Env:   []string{"PATH=/usr/bin:/bin", "HOME=" + p.Home, "TMPDIR=" + p.TempDir, "LANG=C.UTF-8"},
		Stdin: in, Stdout: &out, Stderr: &errb,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.Close(); proc.Kill() })
	return proc, feed, &out
}

// guardedSet is the protected names these tests use: a folder, a folder
// with what runs later below it, and a file.
func guardedSet(ws string) []permission.Guarded {
	return []permission.Guarded{
		{Path: filepath.Join(ws, ".vscode"), Dir: true},
		{Path: filepath.Join(ws, ".git"), Dir: true},
		{Path: filepath.Join(ws, ".envrc")},
	}
}

// TestPlaceholderSharedAcrossProcesses: two gemkit processes in one
// workspace (Gemini CLI's and Claude Code's `gemkit mcp`) are two
// launchers that share no memory. B's tool starts while A's holds the
// placeholders, so B finds them made; when A's run ends first, the
// placeholders must stay (B's tool has them bound: removing one would
// detach B's bind and let its tool create the name for real), and B's
// tool still cannot create .vscode/tasks.json, .git/hooks/pre-commit or
// .envrc. The last run, B's, removes them.
func TestPlaceholderSharedAcrossProcesses(t *testing.T) {
	w := newWorld(t)
	locks := lockDir(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.Guarded = guardedSet(w.ws)
	pb := p
	pb.TempDir = filepath.Join(w.root, "tmp-b")
	if err := os.Mkdir(pb.TempDir, 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := &Launcher{LockDir: locks}, &Launcher{LockDir: locks}

	procA, feedA, _ := startWaiting(t, a, p, "/bin/cat")
	for _, g := range p.Guarded {
		if _, err := os.Lstat(g.Path); err != nil {
			t.Fatalf("no placeholder at %s while A's tool runs: %v", g.Path, err)
		}
	}
	procB, feedB, outB := startWaiting(t, b, pb, sh(`read go
mkdir -p .vscode 2>/dev/null; echo '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json 2>/dev/null || echo tasks-refused
mkdir -p .git/hooks 2>/dev/null; echo 'echo pwned' > .git/hooks/pre-commit 2>/dev/null || echo hook-refused
echo 'echo pwned' > .envrc 2>/dev/null || echo envrc-refused
echo ok > plain.txt && echo LEGIT`)...)

	feedA.Close()
	if err := procA.Wait(); err != nil {
		t.Fatalf("A's tool: %v", err)
	}
	for _, g := range p.Guarded {
		if _, err := os.Lstat(g.Path); err != nil {
			t.Errorf("A's run removed the placeholder %s that B's running tool has bound: %v", g.Path, err)
		}
	}
	if _, err := io.WriteString(feedB, "go\n"); err != nil {
		t.Fatal(err)
	}
	feedB.Close()
	if err := procB.Wait(); err != nil {
		t.Fatalf("B's tool: %v", err)
	}
	for _, want := range []string{"tasks-refused", "hook-refused", "envrc-refused", "LEGIT"} {
		if !strings.Contains(outB.String(), want+"\n") {
			t.Errorf("%q missing from B's tool: %q", want, outB.String())
		}
	}
	for _, made := range []string{".vscode/tasks.json", ".git/hooks/pre-commit", ".git/hooks"} {
		if _, err := os.Lstat(filepath.Join(w.ws, made)); err == nil {
			t.Errorf("B's tool created %s in the real workspace", made)
		}
	}
	for _, g := range p.Guarded {
		if _, err := os.Lstat(g.Path); err == nil {
			t.Errorf("the placeholder %s stayed after the last run", g.Path)
		}
	}
	if b, err := os.ReadFile(filepath.Join(w.ws, ".envrc")); err == nil && len(b) > 0 {
		t.Errorf(".envrc was written: %q", b)
	}
}

// TestPlaceholderNeverRemovesUsers: a folder or file the user makes at a
// protected name while a run holds its placeholder (having removed the
// placeholder) is the user's, even empty, and stays after the run; so
// does one that was there before any run.
func TestPlaceholderNeverRemovesUsers(t *testing.T) {
	w := newWorld(t)
	locks := lockDir(t)
	l := &Launcher{LockDir: locks}
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.Guarded = guardedSet(w.ws)
	proc, feed, _ := startWaiting(t, l, p, "/bin/cat")

	vscode, envrc := filepath.Join(w.ws, ".vscode"), filepath.Join(w.ws, ".envrc")
	// The user replaces the placeholders by their own, as empty as they.
	if err := os.Remove(vscode); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(envrc); err != nil {
		t.Fatal(err)
	}
	// A sleep: the two changes must be a clock tick apart, on coarse clocks.
	time.Sleep(20 * time.Millisecond)
	if err := os.Mkdir(vscode, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(envrc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	feed.Close()
	var gr *GuardRemovedError
	if err := proc.Wait(); !errors.As(err, &gr) {
		t.Fatalf("the run's placeholders were removed while it ran, yet Wait says %v", err)
	}
	for _, kept := range []string{vscode, envrc} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("the user's own %s was removed: %v", kept, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.ws, ".git")); err == nil {
		t.Error("the placeholder .git the user left alone stayed after the run")
	}

	// Made before any run, empty: a later run binds it and leaves it.
	r := run(t, l, p, 20*time.Second, "/bin/true")
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, kept := range []string{vscode, envrc} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("the user's own %s was removed by a later run: %v", kept, err)
		}
	}
}

// TestGuardRemovedStopsTool: when a protected path bound into a running
// tool's root is removed in the real workspace (the kernel then detaches
// the bind there) or replaced, the tool is stopped at once and Wait says
// why; the tool, still waiting for its go (a file the test never makes),
// never got to create the name.
func TestGuardRemovedStopsTool(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(ws string) error
	}{
		{"placeholder folder removed", func(ws string) error { return os.Remove(filepath.Join(ws, ".vscode")) }},
		{"existing .git renamed away", func(ws string) error { return os.Rename(filepath.Join(ws, ".git"), filepath.Join(ws, "git-old")) }},
		{".envrc replaced", func(ws string) error {
			tmp := filepath.Join(ws, "envrc.tmp")
			if err := os.WriteFile(tmp, nil, 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, filepath.Join(ws, ".envrc"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if err := os.Mkdir(filepath.Join(w.ws, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			p.Guarded = guardedSet(w.ws)
			proc, feed, out := startWaiting(t, &Launcher{LockDir: lockDir(t)}, p, sh(`while [ ! -e go.flag ]; do sleep 0.02; done; mkdir -p .vscode .git/hooks; echo pwned > .vscode/tasks.json; echo pwned > .git/hooks/pre-commit; echo pwned > .envrc; echo WROTE`)...)
			feed.Close()
			if err := tc.change(w.ws); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- proc.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the tool kept running after a protected path left its root")
			}
			var gr *GuardRemovedError
			if !errors.As(err, &gr) || !strings.Contains(err.Error(), "the tool was stopped") {
				t.Fatalf("Wait: %v (stdout %q)", err, out)
			}
			if strings.Contains(out.String(), "WROTE") {
				t.Fatal("the tool ran on")
			}
		})
	}
}

// TestPlaceholderConcurrentRuns: short runs of two launchers overlapping
// in every order (one removing a placeholder and its lock as another
// takes them) each find the protected names there and read-only, and
// leave no placeholder behind.
func TestPlaceholderConcurrentRuns(t *testing.T) {
	w := newWorld(t)
	locks := lockDir(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.Guarded = guardedSet(w.ws)
	launchers := []*Launcher{{LockDir: locks}, {LockDir: locks}}
	const runs = 12
	errs := make(chan string, runs)
	for i := range runs {
		go func() {
			q := p
			q.TempDir = filepath.Join(w.root, fmt.Sprintf("tmp-%d", i))
			if err := os.Mkdir(q.TempDir, 0o755); err != nil {
				errs <- err.Error()
				return
			}
			r := run(t, launchers[i%2], q, 30*time.Second, sh(`[ -d .vscode ] && [ -d .git ] && [ -f .envrc ] || echo missing
echo x > .envrc 2>/dev/null && echo WROTE; touch .vscode/tasks.json 2>/dev/null && echo WROTE; exit 0`)...)
			switch {
			case r.err != nil:
				errs <- r.err.Error() + " " + r.stderr
			case r.stdout != "":
				errs <- r.stdout
			default:
				errs <- ""
			}
		}()
	}
	for range runs {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	for _, g := range p.Guarded {
		if _, err := os.Lstat(g.Path); err == nil {
			t.Errorf("the placeholder %s stayed after the last run", g.Path)
		}
	}
}

// TestPlaceholderLockDirPrivate: a lock folder others may enter is
// refused, since whoever writes a lock could hold or name a placeholder.
func TestPlaceholderLockDirPrivate(t *testing.T) {
	w := newWorld(t)
	locks := filepath.Join(t.TempDir(), "locks")
	if err := os.Mkdir(locks, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(locks, 0o777)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.Guarded = guardedSet(w.ws)
	r := run(t, &Launcher{LockDir: locks}, p, 20*time.Second, "/bin/true")
	if r.err == nil || !strings.Contains(r.err.Error(), "chmod 700") {
		t.Fatalf("err %v", r.err)
	}
	if _, err := os.Lstat(filepath.Join(w.ws, ".vscode")); err == nil {
		t.Error("a placeholder was left behind by the refused run")
	}
}

// TestPlaceholdersLinger: a launcher with Linger keeps a run's
// placeholders for the runs that follow, which bind the very same ones
// (nothing made or removed) and still cannot create or write them; a
// launcher of another process does not remove them meanwhile; they go
// when Linger passes without a run, or at Close, and one the person
// wrote into meanwhile is kept.
func TestPlaceholdersLinger(t *testing.T) {
	w := newWorld(t)
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	envrc, idea := filepath.Join(w.ws, ".envrc"), filepath.Join(w.ws, ".idea")
	p.Guarded = []permission.Guarded{{Path: envrc}, {Path: idea, Dir: true}}
	locks := lockDir(t)
	l := &Launcher{LockDir: locks, Linger: time.Hour}
	attack := sh(`echo x > .envrc || echo refused; touch .idea/x || echo idea-refused; echo LEGIT`)
	check := func(r runResult) {
		t.Helper()
		for _, want := range []string{"refused", "idea-refused", "LEGIT"} {
			if !strings.Contains(r.stdout, want+"\n") {
				t.Fatalf("%q missing: %v %q %q", want, r.err, r.stdout, r.stderr)
			}
		}
	}
	check(run(t, l, p, 20*time.Second, attack...))
	first := inode(t, envrc)
	// Another gemkit process's run of the same workspace ends: the
	// placeholders this launcher keeps are not removed.
	check(run(t, &Launcher{LockDir: locks}, p, 20*time.Second, attack...))
	check(run(t, l, p, 20*time.Second, attack...))
	if inode(t, envrc) != first {
		t.Error("the placeholder was made again, not kept")
	}
	l.Close()
	for _, gone := range []string{envrc, idea} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s stayed after Close", gone)
		}
	}

	// A short Linger gives them back by itself; one written meanwhile
	// is the person's and stays.
	l = &Launcher{LockDir: locks, Linger: 50 * time.Millisecond}
	check(run(t, l, p, 20*time.Second, attack...))
	// The placeholders are removed on the launcher's own time.
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		_, err1 := os.Lstat(envrc)
		_, err2 := os.Lstat(idea)
		return err1 != nil && err2 != nil
	}) {
		t.Fatal("the placeholders outlived Linger")
	}
	l = &Launcher{LockDir: locks, Linger: time.Hour}
	check(run(t, l, p, 20*time.Second, attack...))
	os.WriteFile(envrc, []byte("export MINE=1\n"), 0o644)
	l.Close()
	if b, _ := os.ReadFile(envrc); string(b) != "export MINE=1\n" {
		t.Errorf("the person's .envrc is %q after Close", b)
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// lockFiles counts the lock files in dir.
func lockFiles(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.lock"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// TestPlaceholderLocksBounded: runs over many workspaces, one after the
// other and two launchers at once, leave no lock file behind once they
// have ended: each lock goes with its placeholder. (Before, one stayed
// for every protected name of every workspace ever used: 2,341 after one
// test run.)
func TestPlaceholderLocksBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxed real processes for seconds: runs without -short, as in CI")
	}
	w := newWorld(t)
	locks := lockDir(t)
	launchers := []*Launcher{{LockDir: locks}, {LockDir: locks}}
	const workspaces = 8
	for i := range workspaces {
		p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
		p.Workspace = filepath.Join(w.root, fmt.Sprintf("ws-%d", i))
		if err := os.Mkdir(p.Workspace, 0o755); err != nil {
			t.Fatal(err)
		}
		p.Guarded = guardedSet(p.Workspace)
		for j := range 2 {
			r := run(t, launchers[(i+j)%2], p, 30*time.Second, sh(`[ -d .vscode ] && [ -d .git ] && [ -f .envrc ] || echo missing`)...)
			if r.err != nil || r.stdout != "" {
				t.Fatalf("workspace %d, run %d: %v %s %s", i, j, r.err, r.stdout, r.stderr)
			}
		}
		if n := lockFiles(t, locks); n != 0 {
			t.Fatalf("after the runs in %d workspaces %d lock files are left; want none", i+1, n)
		}
	}
}

// TestPlaceholderLocksSwept: the first run of a launcher removes the lock
// files no run holds that name no placeholder left in place: a killed
// process's (its placeholder removed with it when still the very one and
// empty) and those of earlier versions that recorded no path (at once
// when they record no placeholder, after staleLegacyLock when they do).
// A lock another process holds stays, and so does a placeholder that
// is no longer empty.
func TestPlaceholderLocksSwept(t *testing.T) {
	w := newWorld(t)
	locks := lockDir(t)
	if _, err := privateDir(locks); err != nil {
		t.Fatal(err)
	}
	ws := w.ws
	// A killed process's run: placeholder and lock, the lock given up.
	left := filepath.Join(ws, ".idea")
	f, err := lockShared(lockName(locks, left), left, true)
	if err != nil {
		t.Fatal(err)
	}
	if made, err := makePlaceholder(f, left, true); !made || err != nil {
		t.Fatalf("makePlaceholder = %v, %v", made, err)
	}
	f.Close()
	// The same, but the person has put a file in it since.
	full := filepath.Join(ws, ".codex")
	f, err = lockShared(lockName(locks, full), full, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := makePlaceholder(f, full, true); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(full, "config.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Another process's run, still going.
	held := filepath.Join(ws, ".qwen")
	h, err := lockShared(lockName(locks, held), held, true)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := makePlaceholder(h, held, true); err != nil {
		t.Fatal(err)
	}
	// Earlier versions' lock files: empty, a young record, an old record.
	legacy := func(name, rec string, age time.Duration) string {
		p := filepath.Join(locks, name+".lock")
		if err := os.WriteFile(p, []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec := placeholderID{1, 2, 3, 4}.String()
	emptyOld := legacy("aa", "", time.Hour)
	young := legacy("bb", rec, time.Hour)
	old := legacy("cc", rec, staleLegacyLock+time.Hour)

	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.Guarded = []permission.Guarded{{Path: filepath.Join(ws, ".vscode"), Dir: true}}
	if r := run(t, &Launcher{LockDir: locks}, p, 30*time.Second, "/bin/true"); r.err != nil {
		t.Fatal(r.err, r.stderr)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{left, false}, {lockName(locks, left), false},
		// Its change time is no longer the placeholder's: the person's
		// folder now, kept without a lock.
		{full, true}, {lockName(locks, full), false},
		{held, true}, {lockName(locks, held), true},
		{emptyOld, false}, {young, true}, {old, false},
		{lockName(locks, filepath.Join(ws, ".vscode")), false},
	} {
		if _, err := os.Lstat(c.path); (err == nil) != c.want {
			t.Errorf("%s: present %v after the sweep, want %v", c.path, err == nil, c.want)
		}
	}
}
