package editors_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestNeovimGeminiCLI runs the real Gemini CLI's TUI in Neovim's :terminal
// beside the file, with gemkit.nvim as the only set-up (the terminal gets
// the variables of server/ready), against a scripted model, and types
// into Neovim's tmux pane as a person would: two lines selected with V j
// stay selected when the person goes to the CLI's window with <C-w>l and
// reach the model as the IDE context's selectedText; the model's
// write_file shows as the plugin's diff, where a line is added by hand and
// :wq accepts it; a proposal closed with :q is rejected (the file
// stays, the CLI says "Request cancelled." and keeps the rejected
// exchange out of the next turn, as for a "No" in its own box); Esc in the CLI while a
// diff waits closes the diff in Neovim; /quit ends the CLI and leaves the
// companion serving the editor; :qa ends Neovim, the companion and its
// discovery file, and leaves no process of theirs running.
func TestNeovimGeminiCLI(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testNeovimGeminiCLI(t, v.require(t))
		})
	}
}

func testNeovimGeminiCLI(t *testing.T, bin string) {
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	h := newHarness(t)
	target := h.path("b.txt")
	proposal := "one\ntwo\nthree\nfour\n"
	model, err := fakemodel.Start(
		fakemodel.Text("Those are the first two lines."),
		fakemodel.Call("write_file", map[string]any{"file_path": target, "content": proposal}),
		fakemodel.Text("Done writing."),
		fakemodel.Call("write_file", map[string]any{"file_path": target, "content": "rejected\n"}),
		fakemodel.Call("write_file", map[string]any{"file_path": target, "content": "cancelled\n"}),
		fakemodel.Text("Nothing was written."),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	writeGeminiSettings(t, h.home)
	d, pane, screen := startNvimPane(t, h, bin, tmuxBin, []string{
		"TERM=xterm-256color", "GOOGLE_GEMINI_BASE_URL=" + model.URL, "GEMINI_API_KEY=test-key", geminiOneProcess,
		"GEMINI_DEBUG_LOG_FILE=" + geminiDebugLog(t, h),
		"SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22", // not "in a container" even where /.dockerenv exists
	})
	waitFor(t, "the plugin's server/ready", func() bool { return d.Getenv(t, "GEMINI_CLI_IDE_SERVER_PORT") != "" })
	d.Open(t, target, 1, 1)

	cli := filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	d.command(t, "rightbelow vsplit | terminal "+node+" "+cli)
	d.command(t, "startinsert")
	wait := func(what string, cond func(string) bool) { t.Helper(); waitScreen(t, screen, what, cond) }
	wait("the CLI's input", func(s string) bool { return strings.Contains(s, "Type your message") })

	g := &geminiNvim{t: t, d: d, pane: pane, model: model, target: target}
	ask, toCLI, proposed, unchanged := g.ask, g.toCLI, g.proposed, g.unchanged

	// Two lines selected in the file, then straight to the CLI's window.
	pane.keys(t, "", "C-\\", "C-n")
	pane.keys(t, "", "C-w", "h")
	waitFor(t, "the file's window focused", func() bool { return d.buftype(t) == "" })
	pane.keys(t, "ggVj")
	pane.keys(t, "", "C-w", "l")
	waitFor(t, "the CLI's window focused", func() bool { return d.buftype(t) == "terminal" })
	// A sleep: nothing must reach the companion during its debounce, an
	// absence no event marks.
	time.Sleep(300 * time.Millisecond)
	pane.keys(t, "i")
	waitFor(t, "terminal mode in the CLI's window", func() bool { return d.mode() == "t" })
	if text := ask("what are these lines").Text(); !strings.Contains(text, "selectedText") || !strings.Contains(text, `one\ntwo`) {
		t.Fatalf("the first turn does not carry the selection as selectedText:\n%s", text)
	}
	wait("the model's answer", func(s string) bool { return strings.Contains(s, "Those are the first two lines.") })

	// The write_file proposal as the plugin's diff, edited and written.
	ask("add a line four to b.txt")
	proposed(proposal)
	d.AppendRight(t, target, "added in nvim")
	pane.keys(t, ":wq")
	pane.keys(t, "", "Enter")
	want := proposal + "added in nvim\n"
	gemkittest.WaitFile(t, target, want)
	wait("the model's answer after the write", func(s string) bool { return strings.Contains(s, "Done writing.") })

	// A proposal closed with :q is rejected: the file stays as it was.
	toCLI()
	ask("rewrite b.txt")
	proposed("rejected\n")
	pane.keys(t, ":q")
	pane.keys(t, "", "Enter")
	unchanged(":q", want, 1)

	// Esc in the CLI while a diff waits cancels the tool: the CLI closes
	// the diff in Neovim.
	// A rejection in the IDE is the CLI's own "No" (its onConfirm gets
	// Cancel): it prints "Request cancelled." and, as for every turn whose
	// tools were all cancelled, takes the exchange back out of its history
	// (useGeminiStream's handleCompletedTools in Gemini CLI 0.61 slices the
	// history to its length after the prompt), so the next turn carries
	// the accepted write and no trace of the rejected one.
	waitFor(t, "the CLI's word for the rejection", func() bool {
		return strings.Contains(d.terminalText(t), "Request cancelled.")
	})
	toCLI()
	next := ask("try once more")
	onlyAcceptedWrite(t, next)
	proposed("cancelled\n")
	toCLI()
	pane.keys(t, "", "Escape")
	unchanged("Esc in the CLI", want, 2)
	ask("what happened")
	wait("the model's last answer", func(s string) bool { return strings.Contains(s, "Nothing was written.") })

	quitGeminiThenNeovim(t, h, d, pane)
}

// geminiNvim is Gemini CLI in a terminal window of Neovim, in a tmux
// pane, with the scripted model it talks to and the file it writes.
type geminiNvim struct {
	t      *testing.T
	d      *nvimDriver
	pane   *tmuxPane
	model  *fakemodel.Server
	target string
}

// ask submits a prompt at the CLI's input, typed into Neovim's pane,
// and returns the model turn it started.
func (g *geminiNvim) ask(prompt string) fakemodel.GenerateRequest {
	t, d, model := g.t, g.d, g.model
	t.Helper()
	n := len(model.Turns())
	gemkittest.Submit(t, d.tmux.Main(), prompt, func() bool { return len(model.Turns()) > n })
	gen, err := model.Turns()[n].Generate()
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

// toCLI goes from wherever the person is to the CLI's input: normal
// mode, the first tab, the window on the right, terminal mode.
func (g *geminiNvim) toCLI() {
	t, d, pane := g.t, g.d, g.pane
	t.Helper()
	pane.keys(t, "", "C-\\", "C-n")
	pane.keys(t, ":tabfirst")
	pane.keys(t, "", "Enter")
	pane.keys(t, "", "C-w", "l")
	waitFor(t, "the CLI's window focused", func() bool { return d.buftype(t) == "terminal" })
	pane.keys(t, "i")
	waitFor(t, "terminal mode in the CLI's window", func() bool { return d.mode() == "t" })
}

// proposed waits for the plugin's diff of the target showing content,
// with the focus in the proposal's window.
func (g *geminiNvim) proposed(content string) {
	t, d, target := g.t, g.d, g.target
	t.Helper()
	waitFor(t, "the plugin's diff proposing "+strconv.Quote(content), func() bool {
		v, ok := d.Diff(t, target)
		return ok && v.Right == content
	})
	if got, _ := d.lua(t, `return vim.json.encode(vim.b.gemkit_diff or '')`).(string); got != target {
		t.Fatalf("the focus is not in the proposal's window (its b:gemkit_diff is %q)", got)
	}
}

// unchanged waits for the diff to close and for the CLI to say the
// request was cancelled, the cancels-th time (the CLI has dealt with
// the answer by then), and checks that the target holds want.
func (g *geminiNvim) unchanged(what, want string, cancels int) {
	t, d, target := g.t, g.d, g.target
	t.Helper()
	waitFor(t, "the diff of b.txt closed ("+what+")", func() bool {
		_, ok := d.Diff(t, target)
		return !ok
	})
	waitFor(t, "the CLI's word for the cancel ("+what+")", func() bool {
		return strings.Count(d.terminalText(t), "Request cancelled.") >= cancels
	})
	if b, _ := os.ReadFile(target); string(b) != want {
		t.Fatalf("after %s b.txt holds %q, want it unchanged", what, b)
	}
}

// quitGeminiThenNeovim ends the CLI with /quit, after which the
// companion keeps serving the editor, then ends Neovim with :qa, which
// ends the companion and removes its discovery file.
func quitGeminiThenNeovim(t *testing.T, h *harness, d *nvimDriver, pane *tmuxPane) {
	t.Helper()
	// /quit ends the CLI; the companion keeps serving the editor.
	st, _ := d.lua(t, `return vim.json.encode(require('gemkit').state())`).(map[string]any)
	ready, _ := st["ready"].(map[string]any)
	disc, _ := ready["discoveryFile"].(string)
	companion := int(st["pid"].(float64))
	nvimPID := int(d.lua(t, `return vim.json.encode(vim.fn.getpid())`).(float64))
	cliPID := int(d.lua(t, `
for _, b in ipairs(vim.api.nvim_list_bufs()) do
  if vim.bo[b].buftype == 'terminal' then return vim.json.encode(vim.api.nvim_buf_get_var(b, 'terminal_job_pid')) end
end
return '0'`).(float64))
	if _, err := os.Stat(disc); err != nil {
		t.Fatalf("the discovery file named by server/ready: %v", err)
	}
	cliTree := gemkittest.ProcessTree(cliPID)
	tree := gemkittest.ProcessTree(nvimPID)
	connections := sockets(companion)
	gemkittest.Submit(t, d.tmux.Main(), "/quit", func() bool { return !gemkittest.AnyRunning(cliTree) })
	// The companion closes its side of the CLI's connections once it has
	// seen them end: it has dealt with the CLI's going by then.
	waitFor(t, "the companion closing the CLI's connections", func() bool { return sockets(companion) < connections })
	if _, err := os.Stat(disc); err != nil || !gemkittest.Running(companion) {
		t.Fatalf("after the CLI quit: discovery file %v, companion running %v; want both kept for the editor", err, gemkittest.Running(companion))
	}

	// :qa ends Neovim, the companion and its discovery file.
	noDeprecations(t, h)
	pane.keys(t, "", "C-\\", "C-n")
	pane.keys(t, ":qa")
	pane.keys(t, "", "Enter")
	waitFor(t, "Neovim and every process it started gone", func() bool { return !gemkittest.AnyRunning(tree) })
	if _, err := os.Stat(disc); !os.IsNotExist(err) {
		t.Fatalf("the discovery file is left after Neovim quit: %v", err)
	}
}

// sockets counts the sockets process pid holds open.
func sockets(pid int) int {
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// geminiOneProcess, in the environment of the real Gemini CLI, has it run
// in one process: without it, its launcher (bundle/gemini.js, run())
// starts node again with a heap bound of half the machine's memory and
// waits on it. An idle Gemini CLI 0.61 in tmux to its input, in a cpuacct
// cgroup, at load 20 to 23: 4.1 and 4.2 CPU-s with the launcher, 2.1 and
// 3.0 without, and at its input in half the time. Nothing of gemkit's
// goes through the launcher: the second process gets the same
// environment (and GEMINI_CLI_NO_RELAUNCH itself), and Gemini CLI's walk
// up its process tree for the IDE (getIdeProcessInfoForUnix) passes both
// node processes on its way to the shell or the editor above them.
// TestEmacsGeminiFirstQuestion keeps the launcher, as a person's `gemini`
// has it, and so does internal/mcpserver's TestGeminiCLISetUp.
const geminiOneProcess = "GEMINI_CLI_NO_RELAUNCH=true"

// writeGeminiSettings gives the real Gemini CLI under home what it needs
// to start offline in IDE mode with no first-run question: API-key auth,
// no folder trust, no telemetry or update check, IDE mode on and its nudge
// seen.
func writeGeminiSettings(t *testing.T, home string) {
	t.Helper()
	settings, _ := json.Marshal(map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general":  map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"ide":      map[string]any{"enabled": true, "hasSeenNudge": true},
	})
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), settings, 0o600); err != nil {
		t.Fatal(err)
	}
}

// onlyAcceptedWrite checks that a turn carries the accepted write_file
// answer and no trace of the rejected one: Gemini CLI takes a turn
// whose tools were all cancelled back out of its history.
func onlyAcceptedWrite(t *testing.T, next fakemodel.GenerateRequest) {
	t.Helper()
	var writes []string
	for _, r := range next.FunctionResponses() {
		if r.Name == "write_file" {
			b, _ := json.Marshal(r.Response)
			writes = append(writes, string(b))
		}
	}
	if all, _ := json.Marshal(next.Contents); len(writes) != 1 || !strings.Contains(writes[0], "Successfully overwrote") || strings.Contains(string(all), `rejected\n`) {
		t.Fatalf("the turn after the rejection carries these write_file answers, want the accepted one only:\n%s", all)
	}
}
