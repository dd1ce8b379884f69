package editors_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestNeovimClaudeCode runs the real Claude Code in Neovim's :terminal,
// with gemkit.nvim as the only set-up: the plugin's server/ready puts
// CLAUDE_CODE_SSE_PORT in the terminal's environment, so the CLI connects
// by itself; :GemkitMention @-mentions the file in the prompt; two lines
// selected with V j stay selected when the person goes to Claude's window
// with <C-w>l, and reach the model with the prompt; its Write shows as the
// plugin's diff, accepted with a line the person added; a diagnostic set
// through vim.diagnostic reaches the model; a proposal closed with :q is
// rejected, Esc in Claude's prompt closes a waiting diff, and quitting
// Neovim removes the lock file.
func TestNeovimClaudeCode(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testNeovimClaudeCode(t, v.require(t))
		})
	}
}

func testNeovimClaudeCode(t *testing.T, bin string) {
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	claude := claudetest.Binary(t)
	h := newHarness(t)
	target := h.path("b.txt")
	model := claudeScriptedModel(t, target)
	claudeEnv := claudetest.Home(t, h.home, model, gemkittest.ClosedPort(t), h.ws)

	d, _, screen := startNvimPane(t, h, bin, tmuxBin, claudeEnv)
	waitFor(t, "the plugin's server/ready", func() bool { return d.Getenv(t, "CLAUDE_CODE_SSE_PORT") != "" })

	d.Open(t, target, 1, 1)
	// The linter stand-in whose warning the write step waits for.
	d.lua(t, nvimTestLinter, target)

	// Claude Code in a terminal window beside the file, with nothing but
	// what the plugin set.
	claudeDebug := filepath.Join(h.tmp, "claude-debug.txt")
	d.command(t, "rightbelow vsplit | terminal "+claude+" --debug-file "+claudeDebug)
	d.command(t, "startinsert")
	keys := func(k string) { d.input(t, k) }
	cc := nvimTerminal{t, d, screen}
	claudetest.Input(t, cc)

	claudeMentionAndSelection(t, d, cc, model, screen)

	// Back in Claude's window (the diffs open in tabs of their own).
	toClaude := func() {
		d.command(t, "stopinsert")
		d.command(t, "tabfirst")
		d.command(t, "wincmd l")
		d.command(t, "startinsert")
	}
	want := claudeWriteStep(t, d, cc, model, target, claudeDebug, toClaude)

	// unchanged waits for the diff to close and for Claude Code to tell
	// of the refusal (shown, then past what it does with the answer),
	// and checks that b.txt is as it was.
	unchanged := func(what, told string) {
		t.Helper()
		waitFor(t, "the diff view of b.txt closed ("+what+")", func() bool {
			_, ok := d.Diff(t, target)
			return !ok
		})
		waitFor(t, "Claude Code telling "+strconv.Quote(told)+" ("+what+")", func() bool {
			s := d.terminalText(t)
			return strings.Contains(s[max(strings.LastIndex(s, "STEP_"), 0):], told)
		})
		if b, _ := os.ReadFile(target); string(b) != want {
			t.Fatalf("after %s b.txt holds %q, want it unchanged", what, b)
		}
	}

	// propose sends a step's prompt from Claude's window and waits for
	// the diff of the Write it answers with.
	propose := func(step, content string) {
		t.Helper()
		toClaude()
		claudetest.Ask(t, cc, model, step+" please")
		waitFor(t, "the diff of the "+step+" proposal", func() bool {
			v, ok := d.Diff(t, target)
			return ok && v.Right == content
		})
	}

	// A proposal closed with :q is rejected: the file stays as it was.
	propose("STEP_REJECT", "rejected\n")
	d.toRight(t, target)
	d.command(t, "q")
	unchanged(":q", "Rejected write to b.txt")

	// Esc in Claude's prompt cancels a proposal: the CLI closes its diff.
	propose("STEP_CANCEL", "cancelled\n")
	toClaude()
	keys("<Esc>")
	unchanged("Esc in Claude", "Rejected write to b.txt")

	// Quitting Neovim stops gemkit, which removes its lock file.
	locks, _ := filepath.Glob(filepath.Join(h.home, ".claude", "ide", "*.lock"))
	if len(locks) != 1 {
		t.Fatalf("lock files before quitting: %v", locks)
	}
	noDeprecations(t, h)
	programs := gemkittest.ProcessTree(d.PID())
	d.Quit(t)
	waitFor(t, "the lock file removed", func() bool {
		_, err := os.Stat(locks[0])
		return os.IsNotExist(err)
	})
	// Claude Code, its terminal closed with Neovim, writes its session
	// files as it exits, into the home the test is about to remove.
	gemkittest.EndPrograms(t, programs)
}

// claudeProposal is the text the write step proposes at its try: the
// text of the last try plus a line, to which the person adds one in
// Neovim (the linter's cue).
func claudeProposal(try int) string {
	text := "one\ntwo\nthree\nfour\n"
	for range try - 1 {
		text += "added in nvim\nmore\n"
	}
	return text
}

// claudeScriptedModel answers Claude Code as the steps of
// testNeovimClaudeCode need: a Write of target for each STEP_ prompt,
// and after a tool use in the write step up to two Reads of target
// until the editor's warning reaches it.
func claudeScriptedModel(t *testing.T, target string) *claudetest.Model {
	return claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		var after string
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "user"; i-- {
			after += string(r.Messages[i].Content)
		}
		// A step's prompt may share its message with the result of the
		// tool use before it (a rejected one): the step comes first.
		switch last := r.LastUser(); {
		case strings.Contains(last, "STEP_WRITE"):
			var try int
			fmt.Sscanf(last[strings.Index(last, "STEP_WRITE"):], "STEP_WRITE %d", &try)
			return claudetest.Reply{Tool: "Write", Input: map[string]any{"file_path": target, "content": claudeProposal(try)}}
		case strings.Contains(last, "STEP_REJECT"):
			return claudetest.Reply{Tool: "Write", Input: map[string]any{"file_path": target, "content": "rejected\n"}}
		case strings.Contains(last, "STEP_CANCEL"):
			return claudetest.Reply{Tool: "Write", Input: map[string]any{"file_path": target, "content": "cancelled\n"}}
		case strings.Contains(after, `"tool_result"`):
			// Claude Code tells of new diagnostics with the request that
			// follows a tool use; one that gave up on the editor's answer
			// (its clock runs out on a starved machine, however soon the
			// answer comes) tells with the next. Two reads of the file
			// give it two more chances in the write step's turn.
			// The turn's step and its reads so far, from the messages
			// since the step's prompt.
			writing, reads := false, 0
			for i := len(r.Messages) - 1; i >= 0; i-- {
				content := string(r.Messages[i].Content)
				if r.Messages[i].Role == "user" && strings.Contains(content, "STEP_") {
					writing = strings.Contains(content, "STEP_WRITE")
					break
				}
				var blocks []struct{ Type, Name string }
				if r.Messages[i].Role == "assistant" && json.Unmarshal(r.Messages[i].Content, &blocks) == nil {
					for _, b := range blocks {
						if b.Type == "tool_use" && b.Name == "Read" {
							reads++
						}
					}
				}
			}
			if writing && !strings.Contains(after, "NVIM_DIAG_MARKER") && reads < 2 {
				return claudetest.Reply{Tool: "Read", Input: map[string]any{"file_path": target}}
			}
			return claudetest.Reply{Text: "Done."}
		}
		return claudetest.Reply{Text: "Hello from the scripted model."}
	})
}

// nvimTestLinter is a linter stand-in for Neovim: a warning on each
// line of the file on disk that reads "added in nvim", in
// vim.diagnostic (the CLI reports diagnostics that are new after its
// edit). Claude Code takes its baseline just before it writes and asks
// again after: the linter reacts to the write itself (inotify on the
// folder, as the file may be replaced by a rename), and has run by the
// time anyone reads vim.diagnostic, as the plugin does to answer Claude
// Code (on a loaded machine Neovim can take that request before the
// folder's event).
const nvimTestLinter = `
local path = ...
local buf = vim.fn.bufnr(path)
local ns = vim.api.nvim_create_namespace('test')
local function lint()
  local f = io.open(path)
  if not f then return end
  local found, lnum = {}, 0
  for line in f:lines() do
    if line:find('added in nvim', 1, true) then
      table.insert(found, { lnum = lnum, col = 0, message = 'NVIM_DIAG_MARKER spelling', severity = vim.diagnostic.severity.WARN, source = 'testlint' })
    end
    lnum = lnum + 1
  end
  f:close()
  vim.diagnostic.set(ns, buf, found)
end
vim.loop.new_fs_event():start(vim.fn.fnamemodify(path, ':h'), {}, vim.schedule_wrap(lint))
local get = vim.diagnostic.get
vim.diagnostic.get = function(...)
  lint()
  return get(...)
end`

// claudeMentionAndSelection checks that :GemkitMention puts the file's
// lines in Claude's prompt, and that two lines selected in the file
// reach the model with the prompt.
func claudeMentionAndSelection(t *testing.T, d *nvimDriver, cc nvimTerminal, model *claudetest.Model, screen func() string) {
	t.Helper()
	// :GemkitMention from the file's window puts @b.txt in the prompt.
	// The prompt is drawn before the CLI has dialled the IDE, and a
	// mention sent before it has is lost: it is sent again until it shows.
	mentioned := func(s string) bool { return strings.Contains(s, "@b.txt#L1-2") }
	for try := 0; !mentioned(screen()); try++ {
		if try == 20 {
			t.Fatal("timed out waiting for the mention")
		}
		d.command(t, "stopinsert")
		d.command(t, "wincmd h")
		d.command(t, "1,2GemkitMention")
		d.command(t, "wincmd l")
		d.command(t, "startinsert")
		// The tmux pane's screen changes with no event to wait on.
		gemkittest.Poll(3*time.Second, 200*time.Millisecond, func() bool { return mentioned(screen()) })
	}
	gemkittest.PressUntil(t, cc, "C-u", "the mention cleared", func() bool { return !mentioned(screen()) })

	// Two lines selected in the file, then straight to Claude's window:
	// the CLI shows the selection and sends its lines with the prompt.
	d.command(t, "stopinsert")
	d.command(t, "wincmd h")
	d.input(t, "ggVj<C-w>l")
	waitScreen(t, screen, "the selection in Claude's prompt", func(s string) bool { return strings.Contains(s, "2 lines selected") })
	d.command(t, "startinsert")
	claudetest.Ask(t, cc, model, "STEP_SELECTION what are these?")
	waitFor(t, "the selected lines at the model", func() bool {
		for _, r := range model.Requests() {
			if strings.Contains(r.LastUser(), "STEP_SELECTION") {
				return strings.Contains(r.Raw, "selected the lines 1 to 2 from") && strings.Contains(r.Raw, `one\ntwo`)
			}
		}
		return false
	})
	waitScreen(t, screen, "the model's answer", func(s string) bool { return strings.Contains(s, "Hello from the scripted model.") })
}

// claudeWriteStep is the write step: Claude's Write shows as the
// plugin's diff, accepted with a line the person added, and the
// linter's warning on that line reaches the model. Claude Code gives up
// on getDiagnostics on its own clock (500 ms for the baseline it takes
// before the write); on a starved machine it may give up on an answer
// gemkit gave in milliseconds (its debug log and gemkit's tell which),
// and then tells nothing of that write. The step is tried again, at
// most three times, each adding a line and a warning of its own. It
// returns what b.txt then holds.
func claudeWriteStep(t *testing.T, d *nvimDriver, cc nvimTerminal, model *claudetest.Model, target, claudeDebug string, toClaude func()) string {
	t.Helper()
	turns := strings.Count(d.terminalText(t), "· done")
	for try := 1; ; try++ {
		if try > 1 {
			toClaude()
		}
		asked := len(model.Requests())
		claudetest.Ask(t, cc, model, fmt.Sprintf("STEP_WRITE %d please", try))
		waitFor(t, "the plugin's diff of b.txt", func() bool {
			_, ok := d.Diff(t, target)
			return ok
		})
		d.AppendRight(t, target, "added in nvim")
		d.Accept(t, target)
		want := claudeProposal(try) + "added in nvim\n"
		gemkittest.WaitFile(t, target, want)
		turns++
		waitFor(t, "the turn's end in Claude's terminal", func() bool { return strings.Count(d.terminalText(t), "· done") >= turns })
		told := false
		for _, r := range model.Requests()[asked:] {
			told = told || strings.Contains(r.Raw, "NVIM_DIAG_MARKER")
		}
		if told {
			return want
		}
		if try == 3 {
			t.Fatalf("the model was not told of vim.diagnostic's warning in %d tries\n%s", try, diagnosticsLog(t, d, claudeDebug))
		}
		t.Logf("try %d: the model was not told of vim.diagnostic's warning\n%s", try, diagnosticsLog(t, d, claudeDebug))
	}
}

// startNvimPane runs Neovim with gemkit.nvim in a 200x50 tmux pane (so
// that it draws, and its :terminal runs a TUI), in h's environment plus
// env, driven over its RPC socket and through the pane's keys; screen
// reads the pane. The tmux server ends with the test.
// diagnosticsLog is what gemkit and Claude Code logged of Claude Code's
// getDiagnostics calls: what each side took tells which gave up.
func diagnosticsLog(t *testing.T, d *nvimDriver, claudeDebug string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("gemkit's log:\n")
	for _, l := range strings.Split(d.pluginLog(t), "\n") {
		if strings.Contains(l, "getDiagnostics") {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("Claude Code's debug log:\n")
	text, err := os.ReadFile(claudeDebug)
	if err != nil {
		b.WriteString(err.Error())
	}
	for _, l := range strings.Split(string(text), "\n") {
		if strings.Contains(strings.ToLower(l), "diagnostic") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// pluginLog is what gemkit.nvim kept of gemkit's stderr (its debug log,
// with the -v startNvimPane gives it), shown when a test fails.
func (d *nvimDriver) pluginLog(t *testing.T) string {
	t.Helper()
	lines, _ := d.lua(t, `require('gemkit').show_log()
local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
vim.cmd('close')
return table.concat(lines, '\n')`).(string)
	return lines
}

func startNvimPane(t *testing.T, h *harness, bin, tmuxBin string, env []string) (d *nvimDriver, pane *tmuxPane, screen func() string) {
	t.Helper()
	plugin, err := filepath.Abs("nvim")
	if err != nil {
		t.Fatal(err)
	}
	initLua := fmt.Sprintf(nvimDeprecationsLua, deprecationsFile(h)) + fmt.Sprintf(`vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = %q, args = { '-v' } })
`, plugin, gemkittest.Gemkit(t))
	d, screen = startNvimTmux(t, h, bin, tmuxBin, initLua, env)
	return d, &tmuxPane{bin: tmuxBin, sock: filepath.Join(h.tmp, "tmux.sock")}, screen
}
