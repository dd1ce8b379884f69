package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestQwenCodeChoosesCompanion runs the real Qwen Code 0.24.4 (`qwen -p`,
// which connects to its IDE before the prompt and sends the editor's
// context with it) against two `gemkit ide serve` companions of one
// workspace, whose editors have different files active, and reads the
// file in its model request: with no variable set it finds a companion
// by itself, the newest (its rule: lock files newest first); with
// QWEN_CODE_IDE_SERVER_PORT it takes the one the variable names. Once
// both companions stop, their lock files are gone.
func TestQwenCodeChoosesCompanion(t *testing.T) {
	t.Parallel()
	node, cli := gemkittest.QwenCode(t)
	bin := gemkittest.Gemkit(t)
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	home := filepath.Join(tmp, "home")
	qwenHome := filepath.Join(tmp, "qwen") // where scripted puts the companions' lock files
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gemkittest.WriteQwenSettings(t, qwenHome)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	start := func(active string) *scripted.Editor {
		t.Helper()
		ed, err := scripted.Start(ctx, scripted.Options{Binary: bin, Workspace: []string{ws}, TMPDIR: tmp, Env: []string{"HOME=" + home}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ed.Stop)
		path := filepath.Join(ws, active)
		if err := os.WriteFile(path, []byte(active+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ed.Focus(path, 1, 1, "")
		return ed
	}
	first := start("first.txt")
	// Lock files are ordered by their modification times: the first's is
	// made an hour older, so that the second's is the newer whatever the
	// clock's grain.
	locks, _ := filepath.Glob(filepath.Join(qwenHome, "ide", "*.lock"))
	if len(locks) != 1 {
		t.Fatalf("lock files %v, want the first companion's", locks)
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(locks[0], hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	second := start("second.txt")
	locks, _ = filepath.Glob(filepath.Join(qwenHome, "ide", "*.lock"))
	if len(locks) != 2 {
		t.Fatalf("lock files %v, want one per companion", locks)
	}

	model, err := fakemodel.StartOpenAI(fakemodel.Text("one"), fakemodel.Text("two"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	ask := func(env ...string) string {
		t.Helper()
		n := len(model.Requests())
		cmd := exec.CommandContext(ctx, node, cli, "-p", "which file am I in?")
		cmd.Dir = ws
		cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "QWEN_HOME=" + qwenHome, "NO_COLOR=1"},
			gemkittest.QwenModelEnv(model.URL)...), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("qwen -p: %v\n%s", err, out)
		}
		reqs := model.Requests()
		if len(reqs) <= n {
			t.Fatalf("qwen sent no model request:\n%s", out)
		}
		c, err := reqs[n].Chat()
		if err != nil {
			t.Fatal(err)
		}
		return c.Text()
	}
	path := func(name string) string { return "Path: " + filepath.Join(ws, name) }

	if text := ask(); !strings.Contains(text, path("second.txt")) || strings.Contains(text, path("first.txt")) {
		t.Fatalf("with no variable, the request does not carry the newest companion's active file:\n%s", text)
	}
	if text := ask("QWEN_CODE_IDE_SERVER_PORT=" + strconv.Itoa(first.Ready.Port)); !strings.Contains(text, path("first.txt")) {
		t.Fatalf("with the first companion's port, the request does not carry its active file:\n%s", text)
	}

	first.Stop()
	second.Stop()
	if locks, _ := filepath.Glob(filepath.Join(qwenHome, "ide", "*")); len(locks) != 0 {
		t.Fatalf("files left in Qwen Code's lock folder after the companions stopped: %v", locks)
	}
}

// TestServeTerminalGeminiAndQwen runs the terminal front-end in tmux with
// the real Gemini CLI client code (run as in a container, so that it
// connects through `gemkit ide bridge`) and the real Qwen Code (`qwen
// -p`) connected at once. The status line names each as itself: "Gemini
// CLI 0.61.0 (pid, folder, through the stdio bridge)" and "Qwen Code
// 0.24.4 (pid, folder)", not "Gemini CLI 1.0.0" for Qwen Code. Both get
// the file saved in the workspace as the active file, and Gemini CLI's
// diffs, answered with a and r, come back to it through the bridge.
func TestServeTerminalGeminiAndQwen(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "tmux", "tmux")
	qwenNode, qwenCLI := gemkittest.QwenCode(t)
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	s, discoveryPath, _, _ := tmuxServe(t, ws, "true")
	tmp := filepath.Dir(filepath.Dir(filepath.Dir(discoveryPath))) // TMPDIR/gemini/ide/FILE
	qwenHome := filepath.Join(tmp, "qwen")
	gemkittest.WriteQwenSettings(t, qwenHome)
	active, target := filepath.Join(ws, "a.txt"), filepath.Join(ws, "b.txt")
	for _, f := range []string{target, active} { // a.txt saved last: the active file
		if err := os.WriteFile(f, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := gemkittest.InContainer(t, node, filepath.Join(interop, "ide-client-steps.mjs"), interop, active, target)
	gemini := exec.CommandContext(ctx, argv[0], argv[1:]...)
	gemini.Dir = ws
	gemini.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + tmp, "NO_COLOR=1"}
	// Its stderr's copy ends when the client is gone, even if a process
	// it started still holds the pipe: a failed test ends, not hangs.
	gemini.WaitDelay = 10 * time.Second
	out, err := gemini.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var geminiErr strings.Builder
	gemini.Stderr = &geminiErr
	if err := gemini.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = gemini.Wait()
		if t.Failed() {
			t.Logf("Gemini CLI client's stderr:\n%s", geminiErr.String())
		}
	}()
	steps := json.NewDecoder(out)
	next := func(want string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := steps.Decode(&m); err != nil || m["step"] != want {
			t.Fatalf("step %v (%v), want %s", m, err, want)
		}
		return m
	}
	if m := next("connect"); m["status"] != "connected" || m["transport"] != "stdio-client" {
		t.Fatalf("connect: %v", m)
	}
	next("context")

	model, err := fakemodel.StartOpenAI(fakemodel.Text("a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	qwen := exec.CommandContext(ctx, qwenNode, qwenCLI, "-p", "which file am I in?")
	qwen.Dir = ws
	qwen.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + tmp, "QWEN_HOME=" + qwenHome, "NO_COLOR=1"},
		gemkittest.QwenModelEnv(model.URL)...)
	if b, err := qwen.CombinedOutput(); err != nil {
		t.Fatalf("qwen -p: %v\n%s", err, b)
	}
	reqs := model.Requests()
	if len(reqs) == 0 {
		t.Fatal("Qwen Code sent no model request")
	}
	if c, _ := reqs[0].Chat(); !strings.Contains(c.Text(), "Path: "+active) {
		t.Errorf("Qwen Code's request does not carry the active file:\n%s", c.Text())
	}
	status := regexp.MustCompile(`Gemini CLI 0\.61\.0 \(pid \d+, in [^,]+, through the stdio bridge\)`)
	s.waitPane("both agents in one status line", func(p string) bool {
		for _, line := range strings.Split(p, "\n") {
			if status.MatchString(line) && regexp.MustCompile(`Qwen Code 0\.24\.4 \(pid \d+, in `).MatchString(line) {
				return true
			}
		}
		return false
	})
	if p := s.pane(false); strings.Contains(p, "Gemini CLI 1.0.0") {
		t.Errorf("Qwen Code shown as Gemini CLI 1.0.0:\n%s", p)
	}

	// Gemini CLI's diffs, answered in the terminal.
	s.waitPane("the first diff", func(p string) bool { return strings.Contains(p, "+proposal") && strings.Contains(p, "edit [e]") })
	s.keys("a")
	if m := next("diff"); m["status"] != "accepted" || m["content"] != "proposal\n" {
		t.Fatalf("accepted diff: %v", m)
	}
	s.waitPane("the second diff", func(p string) bool { return strings.Contains(p, "+second") })
	s.keys("r")
	if m := next("diff"); m["status"] != "rejected" {
		t.Fatalf("rejected diff: %v", m)
	}
}
