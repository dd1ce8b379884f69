//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestRealClaudeCode runs the real Claude Code CLI, interactive in tmux,
// against `gemkit ide serve --editor stdio` driven by a test editor and a
// scripted model: it connects, sees the selection, its Write and Edit go
// through diff/open (accepted with the editor's change, or rejected),
// which names Claude Code as their agent (and the real Gemini CLI
// client's diff, Gemini CLI), and the model is told of the diagnostics
// the editor reported.
func TestRealClaudeCode(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	gemkittest.Tool(t, "tmux", "tmux")
	bin := gemkittest.Gemkit(t)
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	home, _ := filepath.EvalSymlinks(t.TempDir())
	tmp := t.TempDir()
	for name, content := range map[string]string{"edit.txt": "line one\nline two\n", "keep.txt": "keep me\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	model := claudetest.StartModel(t, scriptFor(ws))
	env := claudetest.Home(t, home, model, gemkittest.ClosedPort(t), ws)

	var log gemkittest.Output
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ed := startDiagEditor(ctx, t, bin, ws, tmp, home, &log)
	defer ed.Stop()
	port := ed.Ready.Env["CLAUDE_CODE_SSE_PORT"]
	if port == "" {
		t.Fatalf("server/ready env lacks CLAUDE_CODE_SSE_PORT: %v", ed.Ready.Env)
	}

	argv := append(append([]string{"env", "-i", "PATH=" + os.Getenv("PATH")}, env...), claude)
	cc := gemkittest.StartTmux(t, tmp, ws, nil, 200, 50, argv...).Main()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gemkit log:\n%s", log.String())
		}
	})
	wait := func(what string, cond func(string) bool) { t.Helper(); gemkittest.WaitScreen(t, cc.Screen, what, cond) }
	// First run: the CLI offers auto mode; manual mode's permission
	// prompts show proposed changes in the IDE. /ide lists the companion
	// by the editor's name; choosing it connects.
	claudetest.Input(t, cc)
	claudetest.ConnectIDE(t, cc, "gemkit")

	// The real Gemini CLI client connects to the same companion, and
	// proposes a diff that stays open while Claude Code works.
	gem := startGeminiClient(t, ws, tmp, ed.Ready.Env)
	if m := gem.recv(t); m["type"] != "connected" || m["status"] != "connected" {
		t.Fatalf("gemini client: %v", m)
	}
	gemFile := filepath.Join(ws, "gem.txt")
	gem.send(t, map[string]any{"type": "openDiff", "path": gemFile, "content": "from gemini\n"})
	if d := waitDiff(t, ed, gemFile); d.Agent != "Gemini CLI" {
		t.Errorf("the Gemini CLI client's diff/open names %q as its agent", d.Agent)
	}

	// A selection in the editor reaches the CLI's prompt and the model.
	edit := filepath.Join(ws, "edit.txt")
	ed.Focus(edit, 2, 8, "line one\nline two")
	wait("the selection in the prompt", func(s string) bool { return strings.Contains(s, "2 lines selected") })

	// Write, accepted with a change made in the editor.
	claudetest.Ask(t, cc, model, "STEP_WRITE please")
	d := waitDiff(t, ed, filepath.Join(ws, "new.txt"))
	if d.NewContent != "from the model\n" {
		t.Errorf("diff/open content %q", d.NewContent)
	}
	if d.Agent != "Claude Code" {
		t.Errorf("Claude Code's diff/open names %q as its agent", d.Agent)
	}
	ed.Accept(d.FilePath, "from the model, edited in the editor\n")
	waitFile(t, d.FilePath, "from the model, edited in the editor\n")
	if !strings.Contains(model.Requests()[0].Raw, "line one") {
		t.Errorf("the model was not given the selected lines:\n%.2000s", model.Requests()[0].Raw)
	}
	wait("the turn to end", func(s string) bool { return strings.Contains(s, "· done") })

	// Edit (after a Read), accepted with a change; the diagnostics the
	// editor reports after it reach the model.
	claudetest.Ask(t, cc, model, "STEP_EDIT please")
	d = waitDiff(t, ed, edit)
	if d.NewContent != "line one\nline 2 from the model\n" {
		t.Errorf("diff/open content %q", d.NewContent)
	}
	ed.Accept(d.FilePath, "line one\nline 2, as the editor left it\n")
	waitFile(t, edit, "line one\nline 2, as the editor left it\n")
	// The real Claude Code asks the scripted model on its own time.
	last := func() string { reqs := model.Requests(); return reqs[len(reqs)-1].Raw }
	if !gemkittest.Poll(2*time.Minute, 200*time.Millisecond, func() bool { return strings.Contains(last(), "DIAG_MARKER") }) {
		t.Fatalf("the model was not told of the editor's diagnostics; last request:\n%.3000s", last())
	}

	// Gemini's diff, still open, is answered now: only Gemini hears of it,
	// with its own text.
	ed.Accept(gemFile, "gemini, as the editor left it\n")
	if m := gem.recv(t); m["type"] != "diffResult" || fmt.Sprint(m["result"]) != "map[content:gemini, as the editor left it\n status:accepted]" {
		t.Errorf("gemini diff result: %v", m)
	}

	claudeRejects(t, cc, model, ed, gem, ws)
}

// startDiagEditor starts the scripted editor of TestRealClaudeCode (the
// caller stops it): its diagnostics of edit.txt carry a marker
// the model is to be told of.
func startDiagEditor(ctx context.Context, t *testing.T, bin, ws, tmp, home string, log *gemkittest.Output) *scripted.Editor {
	t.Helper()
	ed, err := scripted.Start(ctx, scripted.Options{
		Binary: bin, Workspace: []string{ws}, TMPDIR: tmp, Stderr: log,
		Env: []string{"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"), "QWEN_HOME=" + filepath.Join(home, ".qwen")},
		Diagnostics: func(path string) any {
			if path != "" {
				return []any{map[string]any{"path": path, "diagnostics": []any{}}}
			}
			return []any{map[string]any{"path": filepath.Join(ws, "edit.txt"), "diagnostics": []any{map[string]any{
				"message": "DIAG_MARKER unused value", "severity": "warning", "source": "testlint",
				"range": map[string]any{"start": map[string]int{"line": 2, "character": 1}, "end": map[string]int{"line": 2, "character": 5}}}}}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ed
}

// claudeRejects: a write Claude Code proposes, rejected in the editor,
// leaves the file as it was, and the Gemini CLI client gem hears of none
// of Claude Code's diffs.
func claudeRejects(t *testing.T, cc gemkittest.Pane, model *claudetest.Model, ed *scripted.Editor, gem *geminiClient, ws string) {
	t.Helper()
	// Write, rejected: the file stays as it was.
	gemkittest.WaitScreen(t, cc.Screen, "the turn to end", func(s string) bool { return strings.Count(s, "· done") >= 2 })
	claudetest.Ask(t, cc, model, "STEP_REJECT please")
	d := waitDiff(t, ed, filepath.Join(ws, "keep.txt"))
	ed.Reject(d.FilePath)
	gemkittest.WaitScreen(t, cc.Screen, "the rejection", func(s string) bool {
		i := strings.Index(s, "STEP_REJECT")
		return i >= 0 && strings.Contains(s[i:], "Rejected write to keep.txt")
	})
	if b, _ := os.ReadFile(d.FilePath); string(b) != "keep me\n" {
		t.Errorf("rejected change written: %q", b)
	}
	select {
	case m := <-gem.got:
		t.Errorf("the gemini client heard of Claude Code's diffs: %v", m)
	default:
	}
}

// waitDiff returns the next diff the companion shows, which must be of
// path.
func waitDiff(t *testing.T, ed *scripted.Editor, path string) scripted.Diff {
	t.Helper()
	select {
	case d := <-ed.Opened:
		if d.FilePath != path {
			t.Fatalf("diff/open of %s, want %s", d.FilePath, path)
		}
		return d
	case <-time.After(2 * time.Minute):
		t.Fatalf("no diff/open of %s", path)
		return scripted.Diff{}
	}
}

// waitFile waits until path holds exactly want.
func waitFile(t *testing.T, path, want string) {
	t.Helper()
	gemkittest.WaitFile(t, path, want)
}

// geminiClient is the real Gemini CLI client code (IdeClient, through
// interop/second-client.mjs), ordered over Node's IPC channel.
type geminiClient struct {
	ch  *os.File
	dec *json.Decoder
	got chan map[string]any
}

func startGeminiClient(t *testing.T, ws, tmp string, env map[string]string) *geminiClient {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	// Close-on-exec under ForkLock (SOCK_CLOEXEC is Linux's): a child
	// started meanwhile by a parallel test must not hold the channel.
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ipc"), os.NewFile(uintptr(fds[1]), "ipc-child")
	cmd := exec.Command(node, filepath.Join(interop, "second-client.mjs"))
	cmd.Dir = ws
	// SSH_CONNECTION: IdeClient does not connect inside a container
	// (this machine has /.dockerenv) unless the session is remote.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "NODE_CHANNEL_FD=3", "NODE_CHANNEL_SERIALIZATION_MODE=json",
		"SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.ExtraFiles = []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		ours.Close()
	})
	g := &geminiClient{ch: ours, dec: json.NewDecoder(ours), got: make(chan map[string]any, 16)}
	go func() {
		for {
			var m map[string]any
			if g.dec.Decode(&m) != nil {
				close(g.got)
				return
			}
			g.got <- m
		}
	}()
	return g
}

func (g *geminiClient) send(t *testing.T, m map[string]any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if _, err := g.ch.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

func (g *geminiClient) recv(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-g.got:
		if !ok {
			t.Fatal("the gemini client ended")
		}
		return m
	case <-time.After(2 * time.Minute): // its first loads gemini-cli-core, long on a loaded machine
		t.Fatal("no message from the gemini client")
		return nil
	}
}
