package editors_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestLSPNeovimGeminiCLI runs the real Gemini CLI's TUI in the :terminal
// of the real Neovim whose built-in client runs `gemkit ide serve
// --editor lsp` (no gemkit plugin, nothing set in the terminal's
// environment): the CLI finds the companion through its discovery file
// alone, its write_file shows as a proposal in the file's buffer, the
// person adds a line there and saves, and the file on disk is the saved
// text, byte for byte.
func TestLSPNeovimGeminiCLI(t *testing.T) {
	d, screen, target, proposal := startGeminiLSP(t, nvimLSPConfig)
	wait := func(what string, cond func(string) bool) { t.Helper(); waitScreen(t, screen, what, cond) }
	// Waiting for Neovim's prompt on the screen first gives a loaded
	// machine the time the CLI takes to reach the tool (longer than one
	// waitFor).
	wait("Neovim's prompt about the proposal", func(s string) bool {
		return strings.Contains(s, "is proposed in its buffer") && strings.Contains(s, "3. Edit first")
	})
	// The proposal lands in b.txt's buffer and Neovim asks; the person
	// chooses to edit first, adds a line in the buffer and saves.
	d.answerPrompt(t, "3<CR>")
	waitFor(t, "the proposal in b.txt's buffer", func() bool { return d.BufferText(t, target) == proposal })
	d.command(t, "stopinsert")
	d.command(t, "tabprevious")
	d.command(t, "normal! Goadded in nvim")
	d.command(t, "write")
	want := proposal + "added in nvim\n"
	gemkittest.WaitFile(t, target, want)
	d.command(t, "tabnext")
	wait("the model's answer after the write", func(s string) bool { return strings.Contains(s, "Done writing.") })
	if b, _ := os.ReadFile(target); string(b) != want {
		t.Fatalf("b.txt holds %q, want %q", b, want)
	}
}

// TestLSPGeminiCLINoDiffs: with a language client that cannot show a
// proposal (no workspace/applyEdit, as Vim's ALE), the real Gemini CLI is
// connected to the IDE but told no diff tools, so it asks in its own
// terminal (offering its external editor, which it leaves out when the
// IDE shows diffs) and, once the person allows the change there, writes
// the file itself; the buffer never holds the proposal.
func TestLSPGeminiCLINoDiffs(t *testing.T) {
	d, screen, target, proposal := startGeminiLSP(t, nvimLSPNoApplyEdit)
	waitScreen(t, screen, "the CLI's own question, with its external editor", func(s string) bool {
		return strings.Contains(s, "Apply this change?") && strings.Contains(s, "Modify with external editor")
	})
	d.input(t, "<CR>") // 1. Allow once
	gemkittest.WaitFile(t, target, proposal)
	waitScreen(t, screen, "the model's answer after the write", func(s string) bool { return strings.Contains(s, "Done writing.") })
	if got := d.BufferText(t, target); got != "one\ntwo\nthree\n" {
		t.Fatalf("the buffer of b.txt holds %q: a proposal reached it", got)
	}
}

// startGeminiLSP runs Neovim with initLua (a format with the gemkit
// binary's place) in tmux, b.txt open, and the real Gemini CLI's TUI in a
// :terminal tab against a scripted model, with nothing set in the
// terminal's environment; it checks with /ide status that the CLI found
// the companion, then asks for a change whose answer is a write_file of
// b.txt (proposal), and returns with it under way.
func startGeminiLSP(t *testing.T, initLua string) (d *nvimDriver, screen func() string, target, proposal string) {
	t.Helper()
	return startGeminiLSPIn(t, initLua, false)
}

// startGeminiLSPIn is startGeminiLSP with the CLI run as in a container
// (gemkittest.InContainer, and no SSH_CONNECTION) when container is set.
func startGeminiLSPIn(t *testing.T, initLua string, container bool) (d *nvimDriver, screen func() string, target, proposal string) {
	t.Helper()
	bin := requireEditor(t, "nvim", "neovim")
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	h := newHarness(t)
	target = h.path("b.txt")
	proposal = "one\ntwo\nthree\nfour\n"
	model, err := fakemodel.Start(
		fakemodel.Call("write_file", map[string]any{"file_path": target, "content": proposal}),
		fakemodel.Text("Done writing."),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	writeGeminiSettings(t, h.home)
	env := []string{"TERM=xterm-256color", "GOOGLE_GEMINI_BASE_URL=" + model.URL, "GEMINI_API_KEY=test-key"}
	if !container {
		env = append(env, "SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22") // not "in a container" even where /.dockerenv exists
	}
	d, screen = startNvimTmux(t, h, bin, tmuxBin, fmt.Sprintf(initLua, gemkittest.Gemkit(t)), env)
	d.Open(t, target, 1, 1)
	waitFor(t, "the discovery file", func() bool {
		m, _ := filepath.Glob(filepath.Join(h.discoveryDir, "gemini-ide-server-*.json"))
		return len(m) == 1
	})

	argv := []string{node, filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")}
	if container {
		argv = gemkittest.InContainer(t, argv...)
	}
	d.command(t, "tabnew | terminal "+shellJoin(argv))
	d.command(t, "startinsert")
	wait := func(what string, cond func(string) bool) { t.Helper(); waitScreen(t, screen, what, cond) }
	keys := func(k string) { d.input(t, k) }
	wait("the CLI's input", func(s string) bool { return strings.Contains(s, "Type your message") })
	keys("/ide status")
	wait("/ide status typed", func(s string) bool { return strings.Contains(s, "/ide status") })
	// An Enter that comes while the CLI redraws (its IDE connecting) can
	// be lost: it is typed again until the status shows.
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(screen(), "Connected to Neovim"); {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for /ide status connected")
		}
		time.Sleep(300 * time.Millisecond)
		keys("<CR>")
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !strings.Contains(screen(), "Connected to Neovim"); {
			time.Sleep(200 * time.Millisecond)
		}
	}

	keys("add a line four to b.txt")
	time.Sleep(300 * time.Millisecond)
	keys("<CR>")
	return d, screen, target, proposal
}
