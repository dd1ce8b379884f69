//go:build unix

package lspbroker

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// bashrc is a file of the person's that a tool could not write itself:
// the target the tool links gemkit's files to.
func bashrc(t *testing.T) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, ".bashrc")
	if err := os.WriteFile(path, []byte("# the person's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func assertUnchanged(t *testing.T, path string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != "# the person's own\n" {
		t.Fatalf("%s changed: %q %v", path, b, err)
	}
}

// TestRuntimeFilesNeverFollowed: a tool of this user that made the
// broker's log or lock a symbolic link or a hard link to another file
// (~/.bashrc) gets the broker's start refused in words; the file is
// neither emptied nor written.
func TestRuntimeFilesNeverFollowed(t *testing.T) {
	home, rc := bashrc(t)
	dir := filepath.Join(home, "gemkit-runtime")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		make func(p string) error
		want string
	}{
		{"symbolic link", func(p string) error { return os.Symlink(rc, p) }, "is a symbolic link, not gemkit's file"},
		{"dangling symbolic link", func(p string) error { return os.Symlink(filepath.Join(home, "new-file"), p) }, "is a symbolic link"},
		{"hard link", func(p string) error { return os.Link(rc, p) }, "has 2 names (a hard link to another file)"},
		{"folder", func(p string) error { return os.Mkdir(p, 0o700) }, "is a folder, not gemkit's file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(dir, "codeintel-"+strings.ReplaceAll(c.name, " ", "-")+".log")
			if err := c.make(log); err != nil {
				t.Fatal(err)
			}
			err := Command{Path: "/bin/sh", Args: []string{"-c", "echo planted >&2; echo ready"}, Log: log}.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("start with the log a %s: %v", c.name, err)
			}
			if _, err := lockFile(log); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("lock through a %s: %v", c.name, err)
			}
			assertUnchanged(t, rc)
			if _, err := os.Lstat(filepath.Join(home, "new-file")); err == nil {
				t.Fatal("a dangling link's target was created")
			}
		})
	}
	// The control: gemkit's own log is written, emptied at each start.
	log := filepath.Join(dir, "codeintel-own.log")
	os.WriteFile(log, []byte("a previous start\n"), 0o600)
	if err := (Command{Path: "/bin/sh", Args: []string{"-c", "echo started >&2; echo ready; sleep 1"}, Log: log}).Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); string(b) != "started\n" {
		t.Errorf("own log: %q", b)
	}
	unlock, err := lockFile(filepath.Join(dir, "own.lock"))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

// TestLogEscapesWhatToolsChose: a workspace whose folder name a tool
// chose with a newline, $(…), `…`, ; and a redirection is logged on one
// line, and a shell that sources the log (as a .bashrc the log had been
// linked to would be) runs none of it. The control: an ordinary path is
// logged as it is.
func TestLogEscapesWhatToolsChose(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to source the log as a .bashrc would be")
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	names := []string{
		"ws\n$(touch " + marker + "1)",
		"ws$(touch${IFS}" + marker + "2)",
		"ws`touch${IFS}" + marker + "3`",
		"ws;touch${IFS}" + marker + "4;",
		"ws\ntouch " + marker + "5\n",
		"ws&&touch${IFS}" + marker + "6",
		"ws|touch${IFS}" + marker + "7",
		"ws\"$(touch " + marker + "8)\"",
		"ws'$(touch " + marker + "9)'",
		"ws\\\n$(touch " + marker + "10)",
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: EscapeAttr}))
	for _, n := range names {
		log.Info("code intelligence broker: serving", "workspace", filepath.Join(dir, n), "socket", "/tmp/gemkit-0/x.sock", "err", os.ErrNotExist)
	}
	log.Info("code intelligence broker: serving", "workspace", "/home/me/proj-1.2_x")
	out := buf.String()
	if n := strings.Count(out, "\n"); n != len(names)+1 {
		t.Fatalf("%d lines for %d entries:\n%s", n, len(names)+1, out)
	}
	if !strings.Contains(out, "workspace=/home/me/proj-1.2_x\n") {
		t.Errorf("an ordinary path is not logged as it is:\n%s", out)
	}
	rc := filepath.Join(dir, ".bashrc")
	os.WriteFile(rc, buf.Bytes(), 0o600)
	cmd := exec.Command(bash, "-c", "source "+rc+" 2>/dev/null; true")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v %s", err, b)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "ran") {
			t.Errorf("sourcing the log ran a tool's command (%s):\n%s", e.Name(), out)
		}
	}
}

// TestDirsCoverDir: every folder gemkitdir.MakeRuntime may take is
// among Dirs, whatever the environment (the folders closed to tools).
func TestDirsCoverDir(t *testing.T) {
	for _, env := range []struct{ rt, tmp string }{{"", ""}, {t.TempDir(), ""}, {"", t.TempDir()}, {"relative", "/" + strings.Repeat("x", 70)}} {
		t.Setenv("XDG_RUNTIME_DIR", env.rt)
		t.Setenv("TMPDIR", env.tmp)
		want, err := gemkitdir.MakeRuntime()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_RUNTIME_DIR", "")
		t.Setenv("TMPDIR", "")
		found := false
		for _, d := range Dirs([]string{env.rt}, []string{env.tmp}) {
			found = found || d == want
		}
		if !found {
			t.Errorf("XDG_RUNTIME_DIR=%q TMPDIR=%q: %s not in %v", env.rt, env.tmp, want, Dirs([]string{env.rt}, []string{env.tmp}))
		}
	}
}

func TestRuntimeFilesUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestRuntimeFilesNeverFollowed|TestLogEscapesWhatToolsChose|TestDirsCoverDir|TestSocketLinkRefused)$")
}

// TestSocketLinkRefused: a link planted at a broker's socket name (to a
// socket of another program's) is not connected to: it counts as no
// broker, and the next one's Listen replaces it.
func TestSocketLinkRefused(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.sock")
	ln, err := Listen(other)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sock := filepath.Join(dir, "codeintel-x.sock")
	if err := os.Symlink(other, sock); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(sock); err == nil || !strings.Contains(err.Error(), "not a socket (a link or a file), so not a broker of gemkit's") || !absent(err) {
		t.Fatalf("dial through a link: %v (taken for an absent broker: %v)", err, absent(err))
	}
	own, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("Listen did not replace the link: %v %v", fi, err)
	}
	nc, err := dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}
