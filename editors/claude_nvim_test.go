package editors_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestNeovimClaudeCode runs the real Claude Code in Neovim's :terminal,
// with gemkit.nvim as the only set-up: the plugin's server/ready puts
// CLAUDE_CODE_SSE_PORT in the terminal's environment, so the CLI connects
// by itself; its Write shows as the plugin's diff, accepted with a line
// the person added; a diagnostic set through vim.diagnostic reaches the
// model; :GemkitMention @-mentions the file in the prompt.
func TestNeovimClaudeCode(t *testing.T) {
	bin := requireEditor(t, "nvim", "neovim")
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	claude := claudetest.Binary(t)
	h := newHarness(t)
	target := h.path("b.txt")
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

	plugin, err := filepath.Abs("nvim")
	if err != nil {
		t.Fatal(err)
	}
	init := filepath.Join(h.home, "init.lua")
	initLua := fmt.Sprintf(`vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = %q })
`, plugin, gemkittest.Gemkit(t))
	if err := os.WriteFile(init, []byte(initLua), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(h.tmp, "nvim.sock")
	tsock := filepath.Join(h.tmp, "tmux.sock")
	args := []string{"-S", tsock, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-c", h.ws,
		"env", "-i"}
	args = append(args, h.env()...)
	args = append(args, claudeEnv...)
	args = append(args, bin, "--listen", sock, "-n", "-i", "NONE", "-u", init)
	if out, err := exec.Command(tmuxBin, args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	screen := func() string {
		out, _ := exec.Command(tmuxBin, "-S", tsock, "capture-pane", "-p", "-J").Output()
		return string(out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen:\n%s", screen())
		}
		_ = exec.Command(tmuxBin, "-S", tsock, "kill-server").Run()
		time.Sleep(time.Second) // the CLI writes its session files as it goes
	})
	var rpc *nvimRPC
	waitFor(t, "nvim's RPC socket", func() bool {
		rpc, err = dialNvim(sock)
		return err == nil
	})
	t.Cleanup(func() { rpc.Close() })
	d := &nvimDriver{rpc: rpc}
	waitFor(t, "the plugin's server/ready", func() bool { return d.Getenv(t, "CLAUDE_CODE_SSE_PORT") != "" })

	d.Open(t, target, 1, 1)
	// A linter stand-in: once the file on disk has the accepted text, a
	// warning appears in vim.diagnostic (the CLI reports diagnostics that
	// are new after its edit). Claude Code takes its baseline just before
	// it writes and asks again right after, once: the linter reacts to the
	// write itself (inotify on the folder, as the file may be replaced by
	// a rename), so the warning is set before Neovim handles that request;
	// polling the file every 20 ms lost that race on a loaded machine.
	d.lua(t, `
local path = ...
local buf = vim.fn.bufnr(path)
local ev = vim.loop.new_fs_event()
ev:start(vim.fn.fnamemodify(path, ':h'), {}, vim.schedule_wrap(function()
  local f = io.open(path)
  local text = f and f:read('*a') or ''
  if f then f:close() end
  if text:find('added in nvim', 1, true) and not ev:is_closing() then
    ev:stop()
    ev:close()
    vim.diagnostic.set(vim.api.nvim_create_namespace('test'), buf, {
      { lnum = 4, col = 0, message = 'NVIM_DIAG_MARKER spelling', severity = vim.diagnostic.severity.WARN, source = 'testlint' } })
  end
end))`, target)

	// Claude Code in a terminal tab, with nothing but what the plugin set.
	d.command(t, "tabnew | terminal "+claude)
	d.command(t, "startinsert")
	wait := func(what string, cond func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond(screen()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	keys := func(k string) { d.input(t, k) }
	wait("the CLI's prompt", func(s string) bool {
		return strings.Contains(s, "keep manual mode") || strings.Contains(s, "? for shortcuts")
	})
	if strings.Contains(screen(), "keep manual mode") {
		keys("<Down>")
		time.Sleep(300 * time.Millisecond)
		keys("<CR>")
	}
	wait("the CLI's input", func(s string) bool { return strings.Contains(s, "? for shortcuts") })

	// :GemkitMention from the file's window puts @b.txt in the prompt.
	d.command(t, "stopinsert")
	d.command(t, "tabprevious")
	d.command(t, "1,2GemkitMention")
	d.command(t, "tabnext")
	d.command(t, "startinsert")
	wait("the mention", func(s string) bool { return strings.Contains(s, "@b.txt#L1-2") })
	keys("<C-u>")
	time.Sleep(300 * time.Millisecond)

	keys("STEP_WRITE please")
	time.Sleep(300 * time.Millisecond)
	keys("<CR>")
	waitFor(t, "the plugin's diff of b.txt", func() bool {
		_, ok := d.Diff(t, target)
		return ok
	})
	d.AppendRight(t, target, "added in nvim")
	d.Accept(t, target)
	want := "one\ntwo\nthree\nfour\nadded in nvim\n"
	deadline := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(target)
		if string(b) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b.txt holds %q, want %q", b, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		reqs := model.Requests()
		if len(reqs) > 0 && strings.Contains(reqs[len(reqs)-1].Raw, "NVIM_DIAG_MARKER") {
			break
		}
		if time.Now().After(deadline) {
			raw, _ := json.Marshal(len(reqs))
			t.Fatalf("the model was not told of vim.diagnostic's warning (%s requests)", raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
