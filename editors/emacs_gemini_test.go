package editors_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestEmacsGeminiFirstQuestion runs the real Gemini CLI's TUI, IDE mode
// off as on a first run, in Emacs's M-x term beside gemkit.el, and
// answers its first question as docs/editors.md says: the CLI asks "Do
// you want to connect Emacs to Gemini CLI?"; Esc cannot answer it there
// (term's char mode takes Esc as Meta), and 3 ("No, don't ask again")
// does, without /ide install ("No installer is available"); /ide enable
// then connects to Emacs, and the settings say IDE mode is on, so that
// the question never comes again.
func TestEmacsGeminiFirstQuestion(t *testing.T) {
	t.Parallel()
	emacs := requireEditor(t, "emacs", "emacs-nox")
	client := requireEditor(t, "emacsclient", "emacs-nox")
	tmuxBin := requireEditor(t, "tmux", "tmux")
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	h := newHarness(t)
	// The settings of a first run: signed in, IDE mode never turned on.
	settings := filepath.Join(h.home, ".gemini", "settings.json")
	gemkittest.WriteFile(t, settings, `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}`)
	// What a person types at M-x term's "Run program:", with the
	// variables an offline run needs (no model is asked here).
	gemini := filepath.Join(h.home, "bin", "gemini") // not in TMPDIR, whose gemini/ holds the discovery files
	gemkittest.WriteFile(t, gemini, fmt.Sprintf("#!/bin/sh\nGEMINI_API_KEY=x GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:%d SSH_CONNECTION='127.0.0.1 1 127.0.0.1 22' exec %s %s \"$@\"\n",
		gemkittest.ClosedPort(t), node, filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")))
	if err := os.Chmod(gemini, 0o755); err != nil {
		t.Fatal(err)
	}

	d := startEmacs(t, h, emacs, client, tmuxBin, gemkittest.Gemkit(t))
	waitFor(t, "gemkit serving", func() bool { return d.Getenv(t, ide.EnvServerPort) != "" })
	// M-x term, run from the workspace as a person's Emacs is.
	d.eval(t, fmt.Sprintf(`(let ((default-directory %s))
  (set-process-query-on-exit-flag (get-buffer-process (term %s)) nil)
  t)`, elispString(h.ws+"/"), elispString(gemini)))
	cli := d.tmuxPane.tui(t)
	screen := cli.Screen
	waitScreen(t, screen, "the CLI's first question", func(s string) bool {
		return strings.Contains(s, "Do you want to connect Emacs to Gemini CLI?") && strings.Contains(s, "No, don't ask again")
	})

	// Esc is Meta in term's char mode: Emacs waits for the rest of a
	// key (a 3 then would be M-3), and the CLI sees nothing. C-g ends
	// that.
	d.keys(t, "", "Escape")
	waitFor(t, "Emacs holding ESC, the start of a key", func() bool { return d.lastKeys(t, "\x1b") })
	// The question is still asked: a screen read while the CLI redraws
	// (a loaded machine) may miss it for a moment, so it is waited for;
	// an Esc that reached the CLI would have closed it for good.
	waitScreen(t, screen, "the question still asked after Esc (Esc must not answer it in M-x term)", func(s string) bool {
		return strings.Contains(s, "Do you want to connect Emacs to Gemini CLI?")
	})
	d.keys(t, "", "C-g")
	// Read as the key after ESC, or, when Emacs was busy as it came (a
	// loaded machine), taken as a quit, which recent-keys does not show;
	// either way the echo area says Quit. When it came while this wait's
	// own emacsclient question ran, the quit ends that question and the
	// echo area says "Quit emacsclient request": the key sequence is
	// thrown away all the same.
	waitFor(t, "Emacs quitting ESC's key with C-g", func() bool {
		var msg string
		_ = json.Unmarshal(d.eval(t, `(or (current-message) "")`), &msg)
		return d.lastKeys(t, "\x1b\x07") || msg == "Quit" || msg == "Quit emacsclient request"
	})

	// 3 picks "No, don't ask again" at once. On a loaded machine Emacs
	// may still read the 3 as the key after ESC (M-3, which the CLI never
	// sees): it is pressed again until the question goes.
	// Answered is the prompt drawn in its place: a screen between two of
	// the CLI's draws, or caught while Emacs redisplays term's buffer,
	// can lack the question too (CI's run at 6e18a32 stopped pressing on
	// one, and the question stayed).
	gemkittest.PressUntil(t, cli, "3", "the question answered", func() bool {
		s := screen()
		return !strings.Contains(s, "Do you want to connect") && strings.Contains(s, "Type your message")
	})
	waitScreen(t, screen, "the prompt after the question", func(s string) bool {
		return strings.Contains(s, "Type your message")
	})
	if s := screen(); strings.Contains(s, "No installer is available") {
		t.Fatalf("3 ran /ide install:\n%s", s)
	}
	gemkittest.Submit(t, cli, "/ide enable", func() bool { return strings.Contains(screen(), "Connected to Emacs") })
	var got struct {
		IDE struct {
			Enabled      bool `json:"enabled"`
			HasSeenNudge bool `json:"hasSeenNudge"`
		} `json:"ide"`
	}
	b, err := os.ReadFile(settings)
	if err != nil || json.Unmarshal(b, &got) != nil || !got.IDE.Enabled || !got.IDE.HasSeenNudge {
		t.Fatalf("Gemini CLI's settings after the answers: %s (%v); want ide.enabled and ide.hasSeenNudge", b, err)
	}
}
