package exthook

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(m.Run())
}

// environ is what Gemini CLI gives a hook: the person's environment
// (its sanitizer lets most of it through) and the hook variables.
func environ(home, ws string) []string {
	return []string{"PATH=.:/usr/local/bin:/usr/bin:/bin::bin", "HOME=" + home, "USER=me", "LANG=C.UTF-8", "LC_ALL=C.UTF-8",
		"GITHUB_TOKEN=ghp_secret", "GEMINI_API_KEY=gemini_secret", "AWS_SECRET_ACCESS_KEY=aws_secret", "LC_GITHUB_TOKEN=lc_secret",
		"SSH_AUTH_SOCK=/tmp/ssh-agent.sock", "NODE_OPTIONS=--require=/tmp/evil.js", "LD_PRELOAD=/tmp/evil.so",
		"GEMINI_PROJECT_DIR=" + ws, "GEMINI_CWD=" + ws, "GEMINI_SESSION_ID=s-1", "GEMINI_PLANS_DIR=/tmp/plans dir", "CLAUDE_PROJECT_DIR=" + ws, "GEMINI_CLI=1"}
}

// TestCommand: the command is what Gemini CLI would run: the variables
// its extension loader replaces, then those HookRunner.expandCommand
// replaces, shell-quoted as escapeShellArg quotes them.
func TestCommand(t *testing.T) {
	ws := "/home/me/my work"
	for _, tc := range []struct{ command, want string }{
		{"node ${extensionPath}${/}hooks${/}check.js", "node /ext/hooks/check.js"},
		{"${extensionPath}/run.sh $GEMINI_PROJECT_DIR", "/ext/run.sh '/home/me/my work'"},
		{"echo $GEMINI_SESSION_ID $GEMINI_PLANS_DIR ${workspacePath}", "echo s-1 '/tmp/plans dir' /home/me/my work"},
		{"echo ${TOKEN} ${UNKNOWN} $CLAUDE_PROJECT_DIR", "echo tok-1 ${UNKNOWN} '/home/me/my work'"},
	} {
		h := Hook{Dir: "/ext", Workspace: ws, Environ: environ("/home/me", ws), Settings: map[string]string{"TOKEN": "tok-1"},
			Hook: extension.CommandHook{Command: tc.command}}
		if got := h.Command(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.command, got, tc.want)
		}
	}
}

// TestEnv: of what Gemini CLI gives hooks, only what names no secret
// stays; the hook's env and the extension's settings are added; HOME and
// the temporary folders are the run's own.
func TestEnv(t *testing.T) {
	h := Hook{Dir: "/ext", Workspace: "/ws", Environ: environ("/home/me", "/ws"), Settings: map[string]string{"API_KEY": "declared"},
		Hook: extension.CommandHook{Env: map[string]string{"MODE": "${extensionPath}/strict"}}}
	env := h.Env("/tmp/run")
	for _, want := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp/run", "TMPDIR=/tmp/run", "USER=me", "LANG=C.UTF-8",
		"GEMINI_PROJECT_DIR=/ws", "GEMINI_SESSION_ID=s-1", "GEMINI_CLI=1", "API_KEY=declared", "MODE=/ext/strict"} {
		if !slices.Contains(env, want) {
			t.Errorf("the hook's environment lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "secret") || strings.HasPrefix(kv, "SSH_AUTH_SOCK=") || strings.HasPrefix(kv, "NODE_OPTIONS=") || strings.HasPrefix(kv, "LD_PRELOAD=") {
			t.Errorf("the hook's environment holds %s", kv)
		}
	}
}

// hookEnv is a workspace and an extension folder, world-readable so that
// the test runs unprivileged too.
func hookEnv(t testing.TB, script string) (h *Hook, ws string) {
	t.Helper()
	root, err := os.MkdirTemp("", "gemkit-exthook-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	home := filepath.Join(root, "home")
	ws = filepath.Join(home, "ws")
	dir := filepath.Join(root, "ext")
	for _, d := range []string{ws, filepath.Join(dir, "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hooks", "hook.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Hook{Extension: "hooked", Dir: dir, Workspace: ws, Environ: environ(home, ws),
		Hook: extension.CommandHook{Event: "BeforeTool", Label: "BeforeTool-1", Command: "sh ${extensionPath}/hooks/hook.sh"}}, ws
}

// TestRunSandboxed runs a hook in the sandbox: its stdin passes, its
// stdout, stderr and exit code reach Gemini CLI as gemkit's answer (its
// plain text on exit 3 a block, with the text its reason); it runs
// confined (NoNewPrivs, seccomp), writes nothing of the workspace,
// reaches no host (refused and reported) and sees no secret; a widening by name lets it write the
// workspace; its timeout stops it.
func TestRunSandboxed(t *testing.T) {
	h, ws := hookEnv(t, `input=$(cat)
grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t\n' '  '
echo "in=$input key=${GEMINI_API_KEY:-none} gh=${GITHUB_TOKEN:-none}"
echo ok > "$GEMINI_PROJECT_DIR/hook.txt" 2>/dev/null && echo wrote || echo "write: Read-only file system: $GEMINI_PROJECT_DIR/hook.txt" >&2
getent hosts collector.example.net >/dev/null 2>&1 || echo "lookup refused" >&2
exit 3
`)
	var out, errb bytes.Buffer
	res, err := h.Run(context.Background(), &sandbox.Launcher{}, strings.NewReader(`{"tool_name":"write_file"}`), &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 {
		t.Errorf("exit code %d, want 3\n%s", res.ExitCode, errb.String())
	}
	for _, want := range []string{"NoNewPrivs: 1", "Seccomp: 2", `in={"tool_name":"write_file"} key=none gh=none`} {
		if !strings.Contains(said(t, out.String()), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "wrote") {
		t.Error("the hook wrote into the workspace")
	}
	if !strings.Contains(errb.String(), "lookup refused") || res.Stderr != errb.String() {
		t.Errorf("stderr %q, kept %q", errb.String(), res.Stderr)
	}
	if !slices.ContainsFunc(res.Denied, func(d netproxy.Denial) bool { return strings.Contains(d.Host, "collector.example.net") }) {
		t.Errorf("the lookup was not reported: %+v", res.Denied)
	}

	// Widened by name: the workspace is writable.
	h.Widening = extension.Widening{Write: extension.AccessWorkspace}
	out.Reset()
	if _, err := h.Run(context.Background(), &sandbox.Launcher{}, strings.NewReader("{}"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hook.txt")); err != nil || string(b) != "ok\n" {
		t.Errorf("the widened hook did not write: %q, %v\n%s", b, err, out.String())
	}

	// Its timeout stops it.
	slow, _ := hookEnv(t, "cat >/dev/null; sleep 600\n")
	slow.Hook.Timeout = 300
	res, err = slow.Run(context.Background(), &sandbox.Launcher{}, strings.NewReader("{}"), &out, &errb)
	if err != nil || !res.TimedOut || res.ExitCode == 0 {
		t.Errorf("a hook past its timeout: %+v, %v", res, err)
	}
}

// said is what gemkit's answer for a hook, out, says: its reason and
// its message (a hook's plain text is one or the other, by its exit
// code).
func said(t *testing.T, out string) string {
	t.Helper()
	var a struct {
		Reason        string `json:"reason"`
		SystemMessage string `json:"systemMessage"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("gemkit's answer %q: %v", out, err)
	}
	return a.Reason + a.SystemMessage
}

// TestRunTimeoutDuringSetup: a hook whose timeout ends while its
// sandbox is set up timed out, as one killed at it did; it was an error
// ("sandbox: stopped while setting up the tool: context deadline
// exceeded"), which TestRunSandboxed's 300 ms hook met as uid 65534 on
// a loaded machine.
func TestRunTimeoutDuringSetup(t *testing.T) {
	h, _ := hookEnv(t, "cat >/dev/null\n")
	h.Hook.Timeout = 1 // ms: the set-up alone takes longer
	var out, errb bytes.Buffer
	res, err := h.Run(context.Background(), &sandbox.Launcher{}, strings.NewReader("{}"), &out, &errb)
	if err != nil || !res.TimedOut || res.ExitCode == 0 {
		t.Errorf("a hook whose timeout ended during its set-up: %+v, %v", res, err)
	}
}

// TestRunSandboxedUnprivileged runs TestRunSandboxed as uid 65534.
func TestRunSandboxedUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestRunSandboxed$")
}
