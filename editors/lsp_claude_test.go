package editors_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestLSPNeovimClaudeCode runs the real Claude Code in the :terminal of
// the real Neovim whose built-in client runs `gemkit ide serve --editor
// lsp` (no gemkit plugin): /ide finds the companion through its lock file,
// by Neovim's name, and connects; its Write shows as a proposal in the file's
// buffer, which the person edits and saves; Claude Code gets the saved
// text and writes it, byte for byte.
func TestLSPNeovimClaudeCode(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPNeovimClaudeCode(t, v)
		})
	}
}

func testLSPNeovimClaudeCode(t *testing.T, v neovim) {
	d, screen, target := startClaudeLSP(t, v, nvimLSPConfig(t))

	// The proposal lands in b.txt's buffer and Neovim asks; the person
	// chooses to edit first, adds a line in the buffer and saves.
	d.answerPrompt(t, "3<CR>")
	waitFor(t, "the proposal in b.txt's buffer", func() bool { return d.BufferText(t, target) == "one\ntwo\nthree\nfour\n" })
	d.command(t, "stopinsert")
	d.command(t, "tabprevious")
	d.command(t, "normal! Goadded in nvim")
	d.command(t, "write")
	gemkittest.WaitFile(t, target, "one\ntwo\nthree\nfour\nadded in nvim\n")
	d.command(t, "tabnext")
	waitScreen(t, screen, "Claude Code's tool result", func(s string) bool { return strings.Contains(s, "Done.") })
}

// nvimLSPNoApplyEdit is nvimLSPConfig with a client that cannot apply
// workspace edits, as Vim's ALE is.
const nvimLSPNoApplyEdit = `
local caps = vim.lsp.protocol.make_client_capabilities()
caps.workspace.applyEdit = false
local gemkit = vim.lsp.start_client({
  name = 'gemkit',
  cmd = { %q, 'ide', 'serve', '--editor', 'lsp' },
  root_dir = vim.fn.getcwd(),
  capabilities = caps,
})
vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
  callback = function(args)
    if vim.bo[args.buf].buftype == '' then vim.lsp.buf_attach_client(args.buf, gemkit) end
  end,
})
`

// TestLSPClaudeCodeNoDiffs: with a language client that cannot show a
// proposal (no workspace/applyEdit), Claude Code, which calls openDiff
// whenever an IDE is connected, gets the editor's refusal, asks in its
// own terminal instead, and writes the file once the person says yes
// there.
func TestLSPClaudeCodeNoDiffs(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPClaudeCodeNoDiffs(t, v)
		})
	}
}

func testLSPClaudeCodeNoDiffs(t *testing.T, v neovim) {
	d, screen, target := startClaudeLSP(t, v, nvimLSPNoApplyEdit)
	waitScreen(t, screen, "Claude Code's own question", func(s string) bool { return strings.Contains(s, "Do you want to overwrite b.txt?") })
	// Yes, its first choice: Enter, again until the question goes (it is
	// drawn before it takes keys).
	gemkittest.PressUntil(t, nvimTerminal{t, d, screen}, "Enter", "Claude Code's question answered", func() bool {
		return !strings.Contains(screen(), "Do you want to overwrite b.txt?")
	})
	gemkittest.WaitFile(t, target, "one\ntwo\nthree\nfour\n")
	waitScreen(t, screen, "Claude Code's tool result", func(s string) bool { return strings.Contains(s, "Done.") })
	if got := d.BufferText(t, target); got != "one\ntwo\nthree\n" {
		t.Fatalf("the buffer of b.txt holds %q: a refused proposal reached it", got)
	}
}

// startClaudeLSP runs Neovim release v with initLua (a format with the gemkit
// binary's place) in tmux, b.txt open, and the real Claude Code in a
// :terminal tab against a scripted model; it connects Claude Code to the
// companion with /ide, as a person does, and sends a prompt whose answer
// is a Write of b.txt. It returns with the Write under way.
func startClaudeLSP(t *testing.T, v neovim, initLua string) (d *nvimDriver, screen func() string, target string) {
	t.Helper()
	bin := v.require(t)
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	claude := claudetest.Binary(t)
	h := newHarness(t)
	target = h.path("b.txt")
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		var after string
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "user"; i-- {
			after += string(r.Messages[i].Content)
		}
		switch {
		case strings.Contains(after, `"tool_result"`):
			return claudetest.Reply{Text: "Done."}
		case strings.Contains(r.LastUser(), "STEP_WRITE"):
			return claudetest.Reply{Tool: "Write", Input: map[string]any{"file_path": target, "content": "one\ntwo\nthree\nfour\n"}}
		}
		return claudetest.Reply{Text: "Hello from the scripted model."}
	})
	claudeEnv := claudetest.Home(t, h.home, model, gemkittest.ClosedPort(t), h.ws)

	d, screen = startNvimTmux(t, h, bin, tmuxBin, fmt.Sprintf(initLua, gemkittest.Gemkit(t)), claudeEnv)
	d.Open(t, target, 1, 1)
	waitFor(t, "the Claude Code lock file", func() bool {
		m, _ := filepath.Glob(filepath.Join(claudeConfigDir(claudeEnv), "ide", "*.lock"))
		return len(m) == 1
	})

	d.command(t, "tabnew | terminal "+claude)
	d.command(t, "startinsert")
	cc := nvimTerminal{t, d, screen}
	claudetest.Input(t, cc)
	// /ide lists the companion by the editor's name (Neovim's clientInfo);
	// choosing it connects.
	claudetest.ConnectIDE(t, cc, "Neovim")
	claudetest.Ask(t, cc, model, "STEP_WRITE please")
	return d, screen, target
}

// claudeConfigDir is CLAUDE_CONFIG_DIR in env, "" when unset.
func claudeConfigDir(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CONFIG_DIR="); ok {
			return v
		}
	}
	return ""
}
