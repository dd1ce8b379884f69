package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestClaudeCodeAutoModeQuestion pins what README.md, docs/editors.md and
// docs/claude-code.md tell a person of the real Claude Code's first
// question, "Make auto mode your default permission mode?": its first,
// focused, answer is Yes, which writes permissions.defaultMode "auto" to
// the user settings (where Claude Code then writes its edits with no
// diff in the editor) and turns auto mode on ("auto mode on" under the
// prompt); setting it back to "default" there and starting claude again
// gives manual mode, and the question does not come back.
func TestClaudeCodeAutoModeQuestion(t *testing.T) {
	t.Parallel()
	claude := claudetest.Binary(t)
	gemkittest.Tool(t, "tmux", "tmux")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	home, _ := filepath.EvalSymlinks(t.TempDir())
	model := claudetest.StartModel(t, scriptFor(ws))
	env := claudetest.Home(t, home, model, gemkittest.ClosedPort(t), ws)
	settings := filepath.Join(home, ".claude", "settings.json")
	defaultMode := func() string {
		var s struct {
			Permissions struct{ DefaultMode string } `json:"permissions"`
		}
		b, _ := os.ReadFile(settings)
		_ = json.Unmarshal(b, &s)
		return s.Permissions.DefaultMode
	}

	argv := append(append([]string{"env", "-i", "PATH=" + os.Getenv("PATH")}, env...), claude)
	tm := gemkittest.StartTmux(t, t.TempDir(), ws, nil, 200, 50, argv...)
	cc := tm.Main()
	const question, yes = "Make auto mode your default permission mode?", "Yes, set auto mode as my default permission mode"
	gemkittest.WaitScreen(t, cc.Screen, "the first question, Yes focused", func(s string) bool {
		return strings.Contains(s, question) && claudetest.Chosen(s, yes) && strings.Contains(s, "No, keep manual mode")
	})
	gemkittest.PressUntil(t, cc, "Enter", "the question answered", func() bool { return !strings.Contains(cc.Screen(), question) })
	gemkittest.WaitScreen(t, cc.Screen, "auto mode on", func(s string) bool { return strings.Contains(s, "auto mode on") })
	// Claude Code writes its settings on its own time, maybe after it
	// drew the mode.
	if !gemkittest.Poll(10*time.Second, 50*time.Millisecond, func() bool { return defaultMode() == "auto" }) {
		t.Fatalf("after Yes, permissions.defaultMode in %s is %q; want auto", settings, defaultMode())
	}

	// The undo the docs give: "default" in the settings, claude again.
	gemkittest.WriteFile(t, settings, `{"permissions": {"defaultMode": "default"}, "autoUpdates": false}`)
	again := tm.NewWindow("again", ws, argv...)
	gemkittest.WaitScreen(t, again.Screen, "Claude Code's input", func(s string) bool { return strings.Contains(s, "manual mode on") || strings.Contains(s, question) })
	if s := again.Screen(); strings.Contains(s, question) || !strings.Contains(s, "manual mode on") {
		t.Errorf("started again after defaultMode \"default\":\n%s", s)
	}
}
