package editors_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestLSPNeovimQwenCode runs the real Qwen Code 0.24.4's TUI in a tmux
// window beside the real Neovim whose built-in client runs `gemkit ide
// serve --editor lsp` as docs/lsp.md configures it (no plugin, no IDE
// variable anywhere): Qwen Code finds the companion through its lock file
// alone; its write_file (after its read_file) lands as a proposal in the
// file's buffer, Accept there leaves the write to Qwen Code, which tells
// its model it wrote the file, and the file on disk is the proposal, byte
// for byte (the buffer, of the same text, still counts as changed, so
// Neovim asks at the next :w whether to write over the newer file). Its edit, edited first in the buffer and accepted by saving,
// is what docs/lsp.md warns of: Qwen Code refuses to write a file whose
// inode, time or size changed since it read it (its FileReadCache.check:
// the editor's save replaced the file), so it tells its model the edit
// failed, as the proposal's diagnostic (which names Qwen Code) warns;
// nothing the person saved is lost: the file holds the saved text once
// gemkit's hold for the agent's write is over.
func TestLSPNeovimQwenCode(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testLSPNeovimQwenCode(t, v)
		})
	}
}

func testLSPNeovimQwenCode(t *testing.T, v neovim) {
	bin := v.require(t)
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	qwenNode, qwenCLI := gemkittest.QwenCode(t)
	h := newHarness(t)
	target := h.path("b.txt") // one, two, three
	proposal := "one\ntwo\nthree\nfour\n"
	edited := strings.Replace(proposal, "two", "TWO", 1)
	saved := edited + "added in nvim\n"
	model, err := fakemodel.StartOpenAI(
		fakemodel.Call("read_file", map[string]any{"file_path": target}),
		fakemodel.Call("write_file", map[string]any{"file_path": target, "content": proposal}),
		fakemodel.Text("Done writing."),
		fakemodel.Call("edit", map[string]any{"file_path": target, "old_string": "two", "new_string": "TWO"}),
		fakemodel.Text("Done editing."),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	gemkittest.WriteQwenSettings(t, filepath.Join(h.home, ".qwen"))

	d, screen := startNvimTmux(t, h, bin, tmuxBin, fmt.Sprintf(nvimLSPConfig(t), gemkittest.Gemkit(t)), []string{"TERM=xterm-256color"})
	d.Open(t, target, 1, 1)
	waitFor(t, "Qwen Code's lock file", func() bool {
		m, _ := filepath.Glob(filepath.Join(h.home, ".qwen", "ide", "*.lock"))
		return len(m) == 1
	})

	qwen := startQwenWindow(t, d, h, append(gemkittest.QwenModelEnv(model.URL), "TERM=xterm-256color"), qwenNode, qwenCLI)
	qwenConnected(t, qwen)
	// ask submits prompt at Qwen Code's input, until its model has a
	// new request.
	ask := func(prompt string) {
		t.Helper()
		n := len(model.Requests())
		gemkittest.Submit(t, qwen, prompt, func() bool { return len(model.Requests()) > n })
	}
	proposed := func() {
		t.Helper()
		waitScreen(t, screen, "Neovim's question about the proposal", func(s string) bool {
			return strings.Contains(s, "is proposed in its buffer") && strings.Contains(s, "Edit first")
		})

	}
	// lastResult is the last tool result the model was sent.
	lastResult := func() string {
		t.Helper()
		rs := model.Requests()
		c, err := rs[len(rs)-1].Chat()
		if err != nil {
			t.Fatal(err)
		}
		results := c.ToolResults()
		if len(results) == 0 {
			return ""
		}
		return results[len(results)-1]
	}

	// write_file, accepted with Accept: Qwen Code writes it.
	ask("add a line four to b.txt")
	proposed()
	d.answerPrompt(t, "1<CR>")
	gemkittest.WaitFile(t, target, proposal)
	waitScreen(t, qwen.Screen, "the model's answer after the write", func(s string) bool { return strings.Contains(s, "Done writing.") })
	if r := lastResult(); !strings.Contains(r, "Successfully") {
		t.Fatalf("write_file's result does not tell the model it wrote the file: %q", r)
	}

	// edit, edited first and accepted by saving.
	ask("make two upper case")
	proposed()
	d.answerPrompt(t, "3<CR>")
	waitFor(t, "the edit in b.txt's buffer", func() bool { return d.BufferText(t, target) == edited })
	// The proposal's diagnostic names Qwen Code and says to accept with
	// the Accept action, not by saving, which is what fails below.
	msg, _ := d.lua(t, `local ds = vim.diagnostic.get(vim.fn.bufnr(...))
return #ds > 0 and ds[1].message or ''`, target).(string)
	if !strings.HasPrefix(msg, "Proposed by Qwen Code: ") || !strings.Contains(msg, "do not save to accept") {
		t.Errorf("the proposal's diagnostic says %q", msg)
	}
	d.command(t, "stopinsert")
	d.command(t, "normal! Goadded in nvim")
	// Qwen Code wrote the file after the Accept; the buffer, which held
	// the same text, still counts as changed, so Neovim asks before it
	// writes over the newer file (docs/lsp.md); the person answers y.
	d.input(t, ":w<CR>")
	waitScreen(t, screen, "Neovim's question about the newer file", func(s string) bool {
		return strings.Contains(s, "Do you really want to write to it")
	})
	d.input(t, "y")
	waitScreen(t, qwen.Screen, "the model's answer after the edit", func(s string) bool { return strings.Contains(s, "Done editing.") })
	if r := lastResult(); strings.Contains(r, "Successfully") {
		t.Fatalf("Qwen Code told its model the edit was written; docs/lsp.md says it refuses: %q", r)
	}
	gemkittest.WaitFile(t, target, saved)
}
