package editors_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
// person adds a line there and saves, the CLI shows the change it
// accepted (+2, -0), and the file on disk is the saved text, byte for
// byte.
func TestLSPNeovimGeminiCLI(t *testing.T) {
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) { testLSPNeovimGeminiCLI(t, v) })
	}
}

func testLSPNeovimGeminiCLI(t *testing.T, v neovim) {
	d, screen, target, proposal := startGeminiLSP(t, v, nvimLSPConfig(t))
	wait := func(what string, cond func(string) bool) { t.Helper(); waitScreen(t, screen, what, cond) }
	// Waiting for Neovim's prompt on the screen first gives a loaded
	// machine the time the CLI takes to reach the tool (longer than one
	// waitFor).
	wait("Neovim's prompt about the proposal", func(s string) bool {
		return strings.Contains(s, "is proposed in its buffer") && strings.Contains(s, "Edit first") // "3. " in 0.7, "3: " in 0.10
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
	// The CLI read the file once the answer came, as it was before the
	// save (gemkit put it back), so it shows the real change: the line
	// proposed and the line added by hand (it said "Accepted (+0, -0)
	// No changes detected." when it found the saved text there).
	if s := screen(); !strings.Contains(s, "Accepted (+2, -0)") || strings.Contains(s, "No changes detected") {
		t.Fatalf("the CLI does not show the change as accepted with +2, -0:\n%s", s)
	}
	// Neovim reported no error of gemkit's requests (0.10 failed to
	// focus the file from the terminal window: "LSP[gemkit]: Error
	// SERVER_REQUEST_HANDLER_ERROR ... Can't re-enter normal mode from
	// terminal mode").
	if m := d.Messages(t); strings.Contains(m, "LSP[gemkit]") || strings.Contains(m, "E5108") {
		t.Fatalf("Neovim reported an error of gemkit's requests: %s", m)
	}
}

// TestLSPGeminiCLINoDiffs: with a language client that cannot show a
// proposal (no workspace/applyEdit, as Vim's ALE), the real Gemini CLI is
// connected to the IDE but told no diff tools, so it asks in its own
// terminal (offering its external editor, which it leaves out when the
// IDE shows diffs) and, once the person allows the change there, writes
// the file itself; the buffer never holds the proposal.
func TestLSPGeminiCLINoDiffs(t *testing.T) {
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) { testLSPGeminiCLINoDiffs(t, v) })
	}
}

func testLSPGeminiCLINoDiffs(t *testing.T, v neovim) {
	d, screen, target, proposal := startGeminiLSP(t, v, nvimLSPNoApplyEdit)
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

// startGeminiLSP runs Neovim release v with initLua (a format with the gemkit
// binary's place) in tmux, b.txt open, and the real Gemini CLI's TUI in a
// :terminal tab against a scripted model, with nothing set in the
// terminal's environment; it checks with /ide status that the CLI found
// the companion, then asks for a change whose answer is a write_file of
// b.txt (proposal), and returns with it under way.
func startGeminiLSP(t *testing.T, v neovim, initLua string) (d *nvimDriver, screen func() string, target, proposal string) {
	t.Helper()
	return startGeminiLSPIn(t, v, initLua, false)
}

// startGeminiLSPIn is startGeminiLSP with the CLI run as in a container
// (gemkittest.InContainer, and no SSH_CONNECTION) when container is set.
func startGeminiLSPIn(t *testing.T, v neovim, initLua string, container bool) (d *nvimDriver, screen func() string, target, proposal string) {
	t.Helper()
	bin := v.require(t)
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
	wait("the CLI's input", func(s string) bool { return strings.Contains(s, "Type your message") })
	// Connected, its footer counts the IDE's open files; asked before,
	// /ide status can say "Connecting...".
	wait("the CLI connected to the IDE", func(s string) bool { return strings.Contains(s, "1 open file") })
	geminiSubmit(t, d, screen, "/ide status", func() bool { return strings.Contains(screen(), "Connected to Neovim") })
	turns := len(model.Turns())
	geminiSubmit(t, d, screen, "add a line four to b.txt", func() bool { return len(model.Turns()) > turns })
	return d, screen, target, proposal
}

// geminiSubmit types text into the Gemini CLI's input in Neovim's
// terminal, then Enter on its own once the text shows (keys that come
// together read as a paste, whose Enter is a new line), again every few
// seconds until done: on a loaded machine an Enter can still arrive
// with the text.
func geminiSubmit(t *testing.T, d *nvimDriver, screen func() string, text string, done func() bool) {
	t.Helper()
	d.input(t, text)
	waitScreen(t, screen, strconv.Quote(text)+" typed", func(s string) bool { return strings.Contains(s, text) })
	for deadline := time.Now().Add(2 * time.Minute); !done(); {
		if time.Now().After(deadline) {
			t.Fatalf("the CLI never took %q", text)
		}
		time.Sleep(300 * time.Millisecond)
		d.input(t, "<CR>")
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !done(); {
			time.Sleep(100 * time.Millisecond)
		}
	}
}
