package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// tmuxSession runs a command in a detached tmux session on a private
// socket, so that the real binary gets a real terminal.
type tmuxSession struct {
	t    *testing.T
	sock string
}

func (s *tmuxSession) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pane returns the visible text of the pane, wrapped lines joined; with
// escapes it keeps the colours.
func (s *tmuxSession) pane(escapes bool) string {
	args := []string{"capture-pane", "-p", "-J", "-S", "-200", "-t", "gk"}
	if escapes {
		args = append(args, "-e")
	}
	return s.tmux(args...)
}

func (s *tmuxSession) waitPane(what string, ok func(string) bool) string {
	s.t.Helper()
	// The tmux pane's screen changes with no event to wait on.
	var p string
	if !gemkittest.Poll(20*time.Second, 50*time.Millisecond, func() bool { p = s.pane(false); return ok(p) }) {
		s.t.Fatalf("timed out waiting for %s; pane:\n%s", what, p)
	}
	return p
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", "gk"}, keys...)...)
}

// tmuxServe starts the real `gemkit ide serve` in a tmux pane with
// editor as $EDITOR, waits for it to say where it serves, and connects a
// Go MCP client to it as the CLI.
func tmuxServe(t *testing.T, ws, editor string) (*tmuxSession, string, *mcpclient.Client, <-chan testOutcome) {
	t.Helper()
	bin := gemkittest.Gemkit(t)
	tmp := t.TempDir()
	s := &tmuxSession{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	// The shell outlives a Ctrl-C (its trap), as an interactive one would.
	script := fmt.Sprintf("trap : INT; cd %q && env -u NO_COLOR -u VISUAL TMPDIR=%q CLAUDE_CONFIG_DIR=%[2]q/claude QWEN_HOME=%[2]q/qwen EDITOR=%q %q ide serve --workspace %q; echo \"EXITED $?\"; stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\{0,1\\}icanon' | sed 's/^/MODE /'; sleep 600",
		ws, tmp, editor, bin, ws)
	s.tmux("new-session", "-d", "-s", "gk", "-x", "250", "-y", "60", "sh", "-c", script)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.sock, "kill-server").Run() })

	p := s.waitPane("the env line", func(p string) bool { return strings.Contains(p, "Proposed changes will show here.") })
	m := regexp.MustCompile(`(/\S+/gemini-ide-server-\d+-\d+\.json)`).FindStringSubmatch(p)
	if m == nil {
		t.Fatalf("no discovery file named in the pane:\n%s", p)
	}
	discoveryPath := m[1]
	if !strings.HasPrefix(discoveryPath, tmp) {
		t.Fatalf("discovery file %s is outside TMPDIR %s", discoveryPath, tmp)
	}
	b, err := os.ReadFile(discoveryPath)
	if err != nil {
		t.Fatal(err)
	}
	var df ide.DiscoveryFile
	if err := json.Unmarshal(b, &df); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, ide.EnvAuthToken+"="+df.AuthToken) || !strings.Contains(p, fmt.Sprintf("%s=%d", ide.EnvServerPort, df.Port)) {
		t.Errorf("the env line lacks the port or token:\n%s", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c, outcomes := connectTestClient(ctx, t, df)
	t.Cleanup(func() { c.Close() })
	return s, discoveryPath, c, outcomes
}

// TestServeInTmux runs `gemkit ide serve` in a real terminal (tmux), the
// way a person would, drives it with a Go MCP client as the CLI, and
// answers the diffs with single keystrokes, no Enter (the terminal is in
// single-key mode): edit in $EDITOR then accept, reject a new file, then
// Ctrl-D; the terminal's mode is restored on exit.
func TestServeInTmux(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "tmux", "tmux")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	existing := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(existing, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\necho 'edited in tmux' >> \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	s, discoveryPath, c, outcomes := tmuxServe(t, ws, editor)
	ctx := context.Background()

	// 1. An existing file: edit in $EDITOR, then accept the edit.
	openDiffTool(ctx, t, c, existing, "one\n2\n")
	s.waitPane("the diff", func(p string) bool { return strings.Contains(p, "+2") && strings.Contains(p, "edit [e]") })
	if colored := s.pane(true); !strings.Contains(colored, "\x1b[") {
		t.Errorf("the diff is not coloured on a terminal:\n%q", colored)
	}
	s.keys("e", "Enter")
	s.waitPane("the edited diff", func(p string) bool { return strings.Contains(p, "+edited in tmux") })
	s.keys("a")
	got := waitOutcome(t, outcomes)
	if got.method != ide.MethodDiffAccepted || got.filePath != existing || got.content != "one\n2\nedited in tmux\n" {
		t.Fatalf("outcome = %+v, want the edited content accepted", got)
	}

	// 2. A new file diffs against empty; reject it.
	newFile := filepath.Join(ws, "new.txt")
	openDiffTool(ctx, t, c, newFile, "fresh\n")
	s.waitPane("the new file's diff", func(p string) bool { return strings.Contains(p, "(new file)") && strings.Contains(p, "+fresh") })
	s.keys("r")
	got = waitOutcome(t, outcomes)
	if got.method != ide.MethodDiffRejected || got.filePath != newFile {
		t.Fatalf("outcome = %+v, want the new file rejected", got)
	}

	// 3. Ctrl-D ends the input: gemkit stops and removes its discovery file.
	s.keys("C-d")
	s.waitPane("exit", func(p string) bool { return strings.Contains(p, "EXITED ") })
	if p := s.pane(false); !strings.Contains(p, "EXITED 0") {
		t.Errorf("gemkit did not exit 0:\n%s", p)
	}
	if p := s.waitPane("the terminal mode", func(p string) bool { return strings.Contains(p, "MODE ") }); !strings.Contains(p, "MODE icanon") {
		t.Errorf("the terminal was not restored to line mode on exit:\n%s", p)
	}
	if _, err := os.Stat(discoveryPath); !os.IsNotExist(err) {
		t.Errorf("discovery file still there after exit: %v", err)
	}
}

// TestServeInTmuxWithVi edits a proposal in the real vi, typed into the
// terminal, and accepts the result.
func TestServeInTmuxWithVi(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "tmux", "tmux")
	gemkittest.Tool(t, "vi", "vim-tiny")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	path := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(path, []byte("first\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, _, c, outcomes := tmuxServe(t, ws, "vi -u NONE -i NONE -n")
	openDiffTool(context.Background(), t, c, path, "first\nsecond\n")
	s.waitPane("the diff", func(p string) bool { return strings.Contains(p, "+second") && strings.Contains(p, "edit [e]") })
	s.keys("e", "Enter")
	// vi shows the copy: its last line is the proposal's.
	s.waitPane("vi", func(p string) bool { return strings.Contains(p, "gemkit-edit-") })
	s.keys("G", "o", "typed in vi", "Escape", ":wq", "Enter")
	s.waitPane("the edited diff", func(p string) bool { return strings.Contains(p, "+typed in vi") && strings.Contains(p, "(edited)") })
	s.keys("a")
	got := waitOutcome(t, outcomes)
	if got.method != ide.MethodDiffAccepted || got.content != "first\nsecond\ntyped in vi\n" {
		t.Fatalf("outcome = %+v, want the vi edit accepted", got)
	}
	s.keys("C-d")
	s.waitPane("exit", func(p string) bool { return strings.Contains(p, "EXITED 0") })
}

type testOutcome struct {
	method, filePath, content string
}

func connectTestClient(ctx context.Context, t *testing.T, df ide.DiscoveryFile) (*mcpclient.Client, <-chan testOutcome) {
	t.Helper()
	outcomes := make(chan testOutcome, 16)
	gotContext := make(chan struct{}, 1)
	notify := func(method string, params json.RawMessage) {
		switch method {
		case ide.MethodContextUpdate:
			select {
			case gotContext <- struct{}{}:
			default:
			}
		case ide.MethodDiffAccepted, ide.MethodDiffRejected:
			var d ide.DiffAccepted
			json.Unmarshal(params, &d)
			outcomes <- testOutcome{method, d.FilePath, d.Content}
		}
	}
	c, err := mcpclient.HTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d%s", df.Port, ide.MCPPath), nil,
		http.Header{"Authorization": {"Bearer " + df.AuthToken}},
		mcpclient.Options{Name: "tmux-test", Version: "1", ProtocolVersion: ide.ProtocolVersion, Notify: notify})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gotContext:
	case <-time.After(30 * time.Second):
		t.Fatal("no context on the event stream")
	}
	return c, outcomes
}

func openDiffTool(ctx context.Context, t *testing.T, c *mcpclient.Client, path, content string) {
	t.Helper()
	res, err := c.CallTool(ctx, ide.ToolOpenDiff, map[string]any{"filePath": path, "newContent": content})
	if err != nil {
		t.Fatalf("openDiff: %v", err)
	}
	if res.IsError {
		t.Fatalf("openDiff failed: %+v", res.Texts)
	}
}

func waitOutcome(t *testing.T, ch <-chan testOutcome) testOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("no diff outcome within 20s")
	}
	return testOutcome{}
}

// TestServeInTmuxCtrlCRejectsWaiting presses Ctrl-C in the real terminal
// while a diff waits: the diff is rejected first, as on Ctrl-D, so that
// the CLI is not left waiting (Gemini CLI's "Apply this change?" box
// otherwise ignores every key: gemini-cli#11239), and the screen says so.
func TestServeInTmuxCtrlCRejectsWaiting(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "tmux", "tmux")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	path := filepath.Join(ws, "a.txt")
	if err := os.WriteFile(path, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, discoveryPath, c, outcomes := tmuxServe(t, ws, "true")
	if p := s.pane(false); !strings.Contains(p, "Ctrl-D or Ctrl-C rejects what waits") {
		t.Errorf("the banner does not say that Ctrl-C rejects what waits:\n%s", p)
	}
	openDiffTool(context.Background(), t, c, path, "one\ntwo\n")
	s.waitPane("the diff", func(p string) bool { return strings.Contains(p, "+two") && strings.Contains(p, "edit [e]") })
	s.keys("C-c")
	got := waitOutcome(t, outcomes)
	if got.method != ide.MethodDiffRejected || got.filePath != path {
		t.Fatalf("outcome = %+v, want the waiting diff rejected on Ctrl-C", got)
	}
	p := s.waitPane("the stop", func(p string) bool { return strings.Contains(p, "Stopped (Ctrl-C") })
	if !strings.Contains(p, "Rejected "+path+" (stopping), so that the CLI does not wait for it.") {
		t.Errorf("the screen does not say the diff was rejected:\n%s", p)
	}
	// The real gemkit process removes the file on its own time.
	if !gemkittest.Poll(10*time.Second, 50*time.Millisecond, func() bool {
		_, err := os.Stat(discoveryPath)
		return os.IsNotExist(err)
	}) {
		t.Fatal("discovery file still there after Ctrl-C")
	}
}
