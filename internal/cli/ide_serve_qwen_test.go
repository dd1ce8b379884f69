package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide/conformance/scripted"
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
	// Lock files are ordered by their time: the second is newer.
	time.Sleep(50 * time.Millisecond)
	second := start("second.txt")
	locks, _ := filepath.Glob(filepath.Join(qwenHome, "ide", "*.lock"))
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
