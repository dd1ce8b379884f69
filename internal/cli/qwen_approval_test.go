package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestQwenCodeStartsInAutoMode pins what README.md, docs/editors.md and
// docs/lsp.md tell a person of the real Qwen Code 0.24.4: with no
// tools.approvalMode in its settings it starts in "Auto mode" (its edits
// then never reach the editor as diffs), `gemkit ide doctor --as qwen`
// warns of it, /approval-mode default leaves it for the session, and
// tools.approvalMode "default" in its settings for every session.
func TestQwenCodeStartsInAutoMode(t *testing.T) {
	t.Parallel()
	node, cli := gemkittest.QwenCode(t)
	gemkittest.Tool(t, "tmux", "tmux")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	home, _ := filepath.EvalSymlinks(t.TempDir())
	qwenHome := filepath.Join(home, ".qwen")
	gemkittest.WriteQwenSettings(t, qwenHome)
	settings := filepath.Join(qwenHome, "settings.json")
	withDefault, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	// A person's settings: no approval mode chosen.
	unset := strings.Replace(string(withDefault), `"approvalMode":"default",`, "", 1)
	if strings.Contains(unset, "approvalMode") {
		t.Fatalf("the test's settings keep an approval mode: %s", unset)
	}
	gemkittest.WriteFile(t, settings, unset)
	env := append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color"},
		gemkittest.QwenModelEnv(fmt.Sprintf("http://127.0.0.1:%d", gemkittest.ClosedPort(t)))...)
	tm := gemkittest.StartTmux(t, t.TempDir(), ws, nil, 160, 40, append(append([]string{"env", "-i"}, env...), node, cli)...)
	qwen := tm.Main()
	gemkittest.WaitScreen(t, qwen.Screen, "Qwen Code's input in Auto mode", func(s string) bool {
		return strings.Contains(s, "Type your message") && strings.Contains(s, "Auto mode (shift + tab to cycle)")
	})

	doctor := exec.Command(gemkittest.Gemkit(t), "ide", "doctor", "--as", "qwen")
	doctor.Dir, doctor.Env = ws, env
	out, _ := doctor.CombinedOutput() // exit 1: no companion serves ws
	if !strings.Contains(string(out), `Qwen Code starts in approval mode "auto"`) || !strings.Contains(string(out), "/approval-mode default") {
		t.Errorf("gemkit ide doctor --as qwen does not warn of Auto mode:\n%s", out)
	}

	// For the session only: the settings keep no approval mode.
	gemkittest.Submit(t, qwen, "/approval-mode default", func() bool { return strings.Contains(qwen.Screen(), "Ask permissions (shift + tab to cycle)") })
	if b, _ := os.ReadFile(settings); strings.Contains(string(b), "approvalMode") {
		t.Errorf("/approval-mode default wrote the settings: %s", b)
	}

	// For every session: tools.approvalMode "default" in the settings.
	gemkittest.WriteFile(t, settings, string(withDefault))
	again := tm.NewWindow("again", ws, append(append([]string{"env", "-i"}, env...), node, cli)...)
	gemkittest.WaitScreen(t, again.Screen, "Qwen Code's input asking permissions", func(s string) bool {
		return strings.Contains(s, "Type your message") && strings.Contains(s, "Ask permissions (shift + tab to cycle)")
	})
}
