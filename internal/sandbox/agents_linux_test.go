package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestAgentHomesMovedClosed: gemkit's own environment moves each agent's
// home (CLAUDE_CONFIG_DIR absolute, QWEN_HOME and GEMINI_CLI_HOME
// relative to gemkit's working folder), and a Qwen Code companion runs
// with a relative QWEN_HOME of its own, taken from its working folder: a
// read: full tool reads none of the lock files, logins and Gemini CLI
// files there, yet reads an ordinary file beside them. Before, a relative
// QWEN_HOME was dropped by the permission checks, so those lock files,
// which hold tokens, were readable.
func TestAgentHomesMovedClosed(t *testing.T) {
	root, err := os.MkdirTemp("", "gemkit-agents-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	e := &elsewhere{root: root, home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp")}
	e.ws = filepath.Join(e.home, "proj")
	e.ext = filepath.Join(e.home, ".gemini", "extensions", "attacker")
	gemkitDir, serverDir := filepath.Join(root, "gemkit-cwd"), filepath.Join(root, "server-cwd")
	for _, d := range []string{e.ws, e.ext, e.tmp, gemkitDir, serverDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": filepath.Join(root, "claude-own"), "QWEN_HOME": "qwen-own", "GEMINI_CLI_HOME": "gemini-own"}
	var secrets []string
	for _, f := range []string{
		filepath.Join(root, "claude-own", "ide", "4001.lock"), filepath.Join(root, "claude-own", ".credentials.json"),
		filepath.Join(gemkitDir, "qwen-own", "ide", "4002.lock"), filepath.Join(gemkitDir, "qwen-own", "oauth_creds.json"),
		filepath.Join(gemkitDir, "gemini-own", ".gemini", "oauth_creds.json"),
	} {
		os.MkdirAll(filepath.Dir(f), 0o700)
		if err := os.WriteFile(f, []byte(`{"authToken":"secret"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, f)
	}
	e.control = filepath.Join(gemkitDir, "control.txt")
	os.WriteFile(e.control, []byte("control"), 0o644)

	qwen := startServer(t, "qwen", serverDir, "HOME="+e.home, "TMPDIR="+e.tmp, "QWEN_HOME=qwen-rel")
	if !filepath.IsAbs(qwen.File) {
		qwen.File = filepath.Join(serverDir, qwen.File)
	}
	if _, err := os.Stat(qwen.File); err != nil {
		t.Fatalf("the Qwen Code companion wrote no lock file where its relative QWEN_HOME says: %v", err)
	}
	secrets = append(secrets, qwen.File)

	in := permission.ClosedInputs{TempDirs: []string{e.tmp}, Dir: gemkitDir, Getenv: func(k string) string { return env[k] }}
	r := permission.Resolve(permission.Policy{Read: permission.AccessFull}, permission.Where{Workspace: e.ws, Home: e.home,
		Closed: in, OwnFolder: e.ext, Locator: &permission.Locator{}})
	os.MkdirAll(filepath.Join(root, "run-tmp"), 0o755)
	p := sandbox.FromResolved(r, e.ext, filepath.Join(root, "run-tmp"), nil, nil)
	args := []string{"--read", e.control}
	for _, s := range secrets {
		args = append(args, "--read", s)
	}
	out := e.run(t, p, args...)
	for _, s := range secrets {
		if strings.Contains(out, "READ "+s+"\n") {
			t.Errorf("the tool read %s\n%s", s, out)
		}
	}
	if !strings.Contains(out, "READ "+e.control+"\n") {
		t.Errorf("the control (an ordinary file beside the moved homes) was not read:\n%s", out)
	}
}

// TestUnprivilegedAgentHomes runs TestAgentHomesMovedClosed as uid 65534.
func TestUnprivilegedAgentHomes(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestAgentHomesMovedClosed$")
}
