package exthook

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// claudeEnviron is what Claude Code 2.1.330 gives a plugin's hook (the
// person's environment and its own variables), gemkit's hook among
// them.
func claudeEnviron(home, ws string) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=me", "LANG=C.UTF-8",
		"ANTHROPIC_API_KEY=sk-ant-secret", "GITHUB_TOKEN=ghp_secret", "CLAUDECODE=1", "CLAUDE_CODE_SESSION_ID=sess-1",
		"CLAUDE_PROJECT_DIR=" + ws, "CLAUDE_PLUGIN_ROOT=/home/me/.claude/plugins/twin", "CLAUDE_PLUGIN_DATA=" + home + "/.claude/plugins/data/twin",
		"CLAUDE_ENV_FILE=" + home + "/.claude/session-env/s.sh", "CLAUDE_PLUGIN_OPTION_TOKEN=opt_secret", "CLAUDE_PID=42"}
}

// TestClaudeCommandAndEnv: for Claude Code, the command keeps Gemini
// CLI's variables as they are (Claude Code replaces none), and the
// environment is the hook profile's with Claude Code's plugin
// variables: CLAUDE_PLUGIN_ROOT the twin extension's folder,
// CLAUDE_PLUGIN_DATA a folder of the run's, CLAUDE_PROJECT_DIR;
// CLAUDE_ENV_FILE, the plugin's options and every secret stay behind.
func TestClaudeCommandAndEnv(t *testing.T) {
	h := Hook{Agent: AgentClaude, Dir: "/ext", Workspace: "/ws", Environ: claudeEnviron("/home/me", "/ws"),
		Hook: extension.CommandHook{Command: `${extensionPath}/run.sh "$CLAUDE_PLUGIN_ROOT" $GEMINI_PROJECT_DIR`}}
	if got, want := h.Command(), `/ext/run.sh "$CLAUDE_PLUGIN_ROOT" $GEMINI_PROJECT_DIR`; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	env := h.Env("/tmp/run")
	for _, want := range []string{"CLAUDE_PLUGIN_ROOT=/ext", "CLAUDE_PLUGIN_DATA=/tmp/run", "CLAUDE_PROJECT_DIR=/ws",
		"CLAUDECODE=1", "CLAUDE_CODE_SESSION_ID=sess-1", "HOME=/tmp/run"} {
		if !slices.Contains(env, want) {
			t.Errorf("the hook's environment lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "secret") || strings.HasPrefix(kv, "CLAUDE_ENV_FILE=") || strings.HasPrefix(kv, "CLAUDE_PID=") {
			t.Errorf("the hook's environment holds %s", kv)
		}
	}
}

// TestClaudeRun runs a Claude Code plugin's PreToolUse hook in the
// sandbox, the cold way and the warm way: Claude Code's input reaches
// it, it sees its plugin's folder and a data folder it can write, and
// of its answer Claude Code gets neither the rewrite of the call
// (updatedInput) nor the "allow" that would skip the permission
// prompt; its context stays.
func TestClaudeRun(t *testing.T) {
	h, ws := hookEnv(t, `input=$(cat)
echo "$input" > "$CLAUDE_PLUGIN_DATA/seen" && test -f "$CLAUDE_PLUGIN_ROOT/hooks/hook.sh" && root=ok
printf '{"systemMessage":"%s %s","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"id"},"additionalContext":"%s"}}' "$root" "$(grep -c '"tool_name":"Bash"' "$CLAUDE_PLUGIN_DATA/seen")" "$CLAUDE_PROJECT_DIR"
`)
	h.Agent = AgentClaude // its event, BeforeTool, is PreToolUse
	h.Environ = claudeEnviron(filepath.Dir(ws), ws)
	var out, errb bytes.Buffer
	res, err := h.Run(context.Background(), &sandbox.Launcher{}, strings.NewReader(`{"tool_name":"Bash"}`), &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"systemMessage":"ok 1\ngemkit left out hookSpecificOutput.permissionDecision, hookSpecificOutput.updatedInput of this sandboxed hook's answer; gemkit extensions doctor says why",` +
		`"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"` + ws + `"}}` + "\n"
	if out.String() != want || res.ExitCode != 0 {
		t.Errorf("exit %d, stdout\n%s\nwant\n%s\nstderr %s", res.ExitCode, out.String(), want, errb.String())
	}
	if len(res.Dropped) != 2 {
		t.Errorf("dropped %+v", res.Dropped)
	}

	dir := warmDir(t)
	key, _ := warmServer(t, h, dir, time.Minute, func(time.Time, Result) {})
	code, refused, o, e, err := warmRun(t, dir, key, `{"tool_name":"Bash"}`)
	if err != nil || refused != "" || code != 0 || o != want {
		t.Errorf("warm: exit %d, refused %q, %v, stdout\n%s\nstderr %s", code, refused, err, o, e)
	}
}

// TestClaudeRunUnprivileged runs TestClaudeRun as uid 65534.
func TestClaudeRunUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestClaudeRun$")
}
