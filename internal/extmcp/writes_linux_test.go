package extmcp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestWritesReportedWhateverTheArgs is the sixth newcomer tour's case: a
// server whose code writes the workspace by a path of its own, named by
// no argument of the call (Node's mkdirSync(dir, {recursive: true}) of a
// new folder, which Node 20 fails with ENOENT, and a new file, EROFS),
// is told of by the sandbox, which sees the path its call named: the
// model reads what was refused and the command that allows it, and the
// person's refusals (what extensions doctor shows) hold it. Once the
// workspace is allowed, both are made. As root and as uid 65534.
func TestWritesReportedWhateverTheArgs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own under node in the sandbox: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	s.m.Sync([]extmcp.Spec{fx})
	ws := s.ws
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	allow := "gemkit extensions sandbox realmcp --allow-write workspace"
	for _, c := range []struct{ tool, path string }{
		{"mkdirp", filepath.Join(ws, "reports")},
		{"create", filepath.Join(ws, "report.txt")},
	} {
		text, isErr, err := call(t, s.m, fx, c.tool, map[string]any{})
		if err != nil || !isErr {
			t.Fatalf("%s: %q %v %v, want a refused write", c.tool, text, isErr, err)
		}
		t.Logf("%s: %s", c.tool, text)
		if !strings.Contains(text, "gemkit's sandbox refused this MCP server during the call: a write to "+c.path) ||
			!strings.Contains(text, "--allow-write workspace") {
			t.Errorf("the model is not told of the refused write of %s:\n%s", c.path, text)
		}
		if log := s.log.String(); !strings.Contains(log, "extension realmcp's MCP server fixture was refused a write to "+c.path+" (the workspace is read-only to its servers); to allow it: "+allow) {
			t.Errorf("the log does not tell the person of %s:\n%s", c.path, log)
		}
	}
	// What extensions doctor reads.
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": s.home})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := extmcp.ReadRefusals(path)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]string{}
	for _, r := range rs {
		kept[r.Path] = r.Allow
	}
	for _, p := range []string{filepath.Join(ws, "reports"), filepath.Join(ws, "report.txt")} {
		if kept[p] != allow {
			t.Errorf("the refusals kept for doctor lack %s with %q: %v", p, allow, kept)
		}
	}

	// Allowed: both are made.
	fx.Widening = extension.Widening{Write: permission.AccessWorkspace}
	s.m.Sync([]extmcp.Spec{fx})
	for _, tool := range []string{"mkdirp", "create"} {
		if text, isErr, err := call(t, s.m, fx, tool, map[string]any{}); err != nil || isErr {
			t.Errorf("%s with the workspace allowed: %q %v %v", tool, text, isErr, err)
		}
	}
	for _, p := range []string{"reports/2026", "report.txt"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err != nil {
			t.Errorf("%s was not made: %v", p, err)
		}
	}
	sandboxtest.RerunUnprivileged(t, "^Test(WritesReportedWhateverTheArgs|SealedWorkspaceServer)$")
}

// TestSealedWorkspaceServer: a Node server allowed to write a git
// workspace makes no placeholder there: `git status` is clean while it
// runs (it was 26 untracked entries with placeholders), and the
// protected names stay its to try and not to make (GEMINI.md through its
// own code, refused and told); what it makes, git sees.
func TestSealedWorkspaceServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own under node in the sandbox: runs without -short, as in CI")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is needed")
	}
	s := newSetup(t, 30*time.Second)
	gitRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = s.ws
		cmd.Env = append(os.Environ(), "HOME="+s.home, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	gitRun("init", "-q")
	os.WriteFile(filepath.Join(s.ws, "README.md"), []byte("a project\n"), 0o644)
	gitRun("add", "README.md")
	gitRun("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first")
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fx.Widening = extension.Widening{Write: permission.AccessWorkspace}
	s.m.Sync([]extmcp.Spec{fx})
	if text, isErr, err := call(t, s.m, fx, "ok", map[string]any{}); err != nil || isErr {
		t.Fatalf("ok: %q %v %v", text, isErr, err)
	}
	// The server runs: nothing of gemkit's in the workspace.
	if st := gitRun("status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("git status while the server runs:\n%s", st)
	}
	text, isErr, err := call(t, s.m, fx, "create", map[string]any{"rel": "GEMINI.md"})
	if err != nil || !isErr || !strings.Contains(text, "a write to "+filepath.Join(s.ws, "GEMINI.md")) || !strings.Contains(text, "a protected path of the workspace") {
		t.Errorf("creating GEMINI.md: %q %v %v, want refused and told", text, isErr, err)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, "GEMINI.md")); err == nil {
		t.Errorf("the server made GEMINI.md")
	}
	if text, isErr, err := call(t, s.m, fx, "create", map[string]any{"rel": "notes.txt"}); err != nil || isErr {
		t.Errorf("creating notes.txt: %q %v %v", text, isErr, err)
	}
	if st := gitRun("status", "--porcelain", "--ignored"); st != "?? notes.txt\n" {
		t.Errorf("git status after the server made notes.txt:\n%s", st)
	}
}
