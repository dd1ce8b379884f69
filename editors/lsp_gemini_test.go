package editors_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPNeovimGeminiCLI(t, v)
		})
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
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPGeminiCLINoDiffs(t, v)
		})
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
// :terminal tab against a scripted model, with nothing of the IDE's set
// in the terminal's environment (the CLI runs in one process:
// geminiOneProcess); it checks with /ide status that the CLI found
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
	env := []string{"TERM=xterm-256color", "GOOGLE_GEMINI_BASE_URL=" + model.URL, "GEMINI_API_KEY=test-key", geminiOneProcess,
		"GEMINI_DEBUG_LOG_FILE=" + geminiDebugLog(t, h)}
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
	cli := nvimTerminal{t, d, screen}
	gemkittest.Submit(t, cli, "/ide status", func() bool { return strings.Contains(screen(), "Connected to Neovim") })
	// Connected, it lists the open file it was told of. "Connected" with
	// none is what it says when its connect lost the connection after the
	// context came (the context cleared) and its tools/list failed: it
	// then never shows diffs in the IDE (a CI run, where the companion
	// closed the tools/list's late connection: TestRealClientLateToolsList).
	if s := screen(); !strings.Contains(s, "Open files:") {
		t.Fatalf("the CLI says it is connected to the IDE but lists no open file (its connect failed part way):\n%s", s)
	}
	turns := len(model.Turns())
	gemkittest.Submit(t, cli, "add a line four to b.txt", func() bool { return len(model.Turns()) > turns })
	return d, screen, target, proposal
}

// geminiDebugLog is the file the real Gemini CLI of a test writes its
// debug log to (GEMINI_DEBUG_LOG_FILE, in h's TMPDIR); when the test
// fails, its IDE client's lines are logged: how its connection to the
// companion went (the tools it discovered, a request that failed, a
// connection it took as lost), which its screen does not show.
func geminiDebugLog(t *testing.T, h *harness) string {
	t.Helper()
	path := filepath.Join(h.tmp, "gemini-debug.log")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Logf("Gemini CLI's debug log: %v", err)
			return
		}
		var ide []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "[IDEClient]") || strings.Contains(l, "[IDEConnectionUtils]") {
				ide = append(ide, l)
			}
		}
		t.Logf("Gemini CLI's IDE client, from its debug log %s:\n%s", path, strings.Join(ide, "\n"))
	})
	return path
}
