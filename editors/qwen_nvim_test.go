package editors_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestNeovimQwenCode runs the real Qwen Code 0.24.4's TUI in a tmux
// window beside the real Neovim with gemkit.nvim, against a scripted
// OpenAI-compatible model, with the real Gemini CLI client code connected
// to the same companion at the same time. Qwen Code is started outside
// Neovim with none of the IDE variables: it finds the companion through
// its lock file alone and says so in /ide status. `V j` in the file,
// left selected, reaches Qwen Code's model request as the active file,
// cursor and selected text, and Gemini CLI's context too. Qwen Code's
// write_file (after its read_file) shows as the plugin's diff, a line is
// added by hand and :w accepts it: the file on disk is that text, byte
// for byte; the diff's status line names Qwen Code. Its edit shows as a
// diff too, closed with :q: rejected, the
// file unchanged, and the model told with the next prompt. :qa ends
// Neovim, the companion, and removes its discovery and lock files.
func TestNeovimQwenCode(t *testing.T) {
	t.Parallel()
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			t.Parallel()
			testNeovimQwenCode(t, v.require(t))
		})
	}
}

func testNeovimQwenCode(t *testing.T, bin string) {
	tmuxBin := gemkittest.Tool(t, "tmux", "tmux")
	qwenNode, qwenCLI := gemkittest.QwenCode(t)
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	h := newHarness(t)
	target := h.path("b.txt") // one, two, three
	proposal := "one\ntwo\nthree\nfour\n"
	accepted := proposal + "added in nvim\n"
	model, err := fakemodel.StartOpenAI(
		fakemodel.Text("Those are the first two lines."),
		fakemodel.Call("read_file", map[string]any{"file_path": target}),
		fakemodel.Call("write_file", map[string]any{"file_path": target, "content": proposal}),
		fakemodel.Text("Done writing."),
		fakemodel.Call("edit", map[string]any{"file_path": target, "old_string": "two", "new_string": "TWO"}),
		fakemodel.Text("Nothing was changed."),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	gemkittest.WriteQwenSettings(t, filepath.Join(h.home, ".qwen"))

	d, pane, _ := startNvimPane(t, h, bin, tmuxBin, []string{"TERM=xterm-256color"})
	waitFor(t, "the plugin's server/ready", func() bool { return d.Getenv(t, "QWEN_CODE_IDE_SERVER_PORT") != "" })
	port := d.Getenv(t, "QWEN_CODE_IDE_SERVER_PORT")
	lock := filepath.Join(h.home, ".qwen", "ide", port+".lock")
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("Qwen Code's lock file: %v", err)
	}
	d.Open(t, target, 1, 1)
	nvimPID := int(d.lua(t, `return vim.json.encode(vim.fn.getpid())`).(float64))

	// Gemini CLI, connected to the same companion throughout.
	rc, conn := connectRealClient(t, h, node, interop, nvimPID)
	if conn.Status != "connected" || conn.IDE != "Neovim" || !conn.Diffing {
		t.Fatalf("the real Gemini CLI client: %+v", conn)
	}

	// Qwen Code in a window of its own, outside Neovim, with no IDE
	// variable (h.env has none).
	qwen := startQwenWindow(t, d, h, append(gemkittest.QwenModelEnv(model.URL), "TERM=xterm-256color"), qwenNode, qwenCLI)
	qwenConnected(t, qwen)

	turns := func() int { return scriptedTurns(model) }
	// ask types a prompt and returns the model request it started.
	ask := func(prompt string) fakemodel.ChatRequest {
		t.Helper()
		n := len(model.Requests())
		gemkittest.Submit(t, qwen, prompt, func() bool { return len(model.Requests()) > n })
		c, err := model.Requests()[n].Chat()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Two lines selected in Neovim, and left selected.
	pane.keys(t, "ggVj")
	if f := rc.waitFile(t, map[string]any{"op": "waitActive", "path": target, "line": 2, "character": 1}); !strings.Contains(f.SelectedText, "one\ntwo") {
		t.Fatalf("Gemini CLI's context: %+v", f)
	}
	text := ask("what are these lines").Text()
	for _, want := range []string{"Active file:\n  Path: " + target, "Cursor: line 2, character 1", "Selected text:\n```\none\ntwo"} {
		if !strings.Contains(text, want) {
			t.Fatalf("Qwen Code's model request does not carry %q:\n%s", want, text)
		}
	}
	waitScreen(t, qwen.Screen, "the model's answer", func(s string) bool { return strings.Contains(s, "Those are the first two lines.") })
	pane.keys(t, "", "Escape")

	// write_file: the plugin's diff, a line added by hand, :w accepts.
	ask("add a line four to b.txt")
	waitFor(t, "the plugin's diff proposing the write", func() bool {
		v, ok := d.Diff(t, target)
		return ok && v.Right == proposal
	})
	if hint := d.Hint(t, target); !strings.HasPrefix(hint, "Proposed by Qwen Code: ") {
		t.Errorf("Qwen Code's proposal is labelled %q", hint)
	}
	d.AppendRight(t, target, "added in nvim")
	pane.keys(t, ":w")
	pane.keys(t, "", "Enter")
	gemkittest.WaitFile(t, target, accepted)
	waitScreen(t, qwen.Screen, "the model's answer after the write", func(s string) bool { return strings.Contains(s, "Done writing.") })

	qwenRejectEdit(t, d, pane, qwen, target, accepted, turns, ask)

	// Gemini CLI saw it all from the same companion, still connected.
	pane.keys(t, "", "Escape")
	d.command(t, "tabfirst")
	d.Open(t, target, 3, 1)
	rc.waitFile(t, map[string]any{"op": "waitActive", "path": target, "line": 3, "character": 1})

	quitNeovimWithQwenLock(t, h, pane, nvimPID, lock)
}

// scriptedTurns counts the model requests that took a scripted reply.
func scriptedTurns(model *fakemodel.OpenAIServer) int {
	n := 0
	for _, r := range model.Requests() {
		if r.Scripted {
			n++
		}
	}
	return n
}

// qwenRejectEdit has Qwen Code propose an edit, closes its diff with :q,
// and checks the file is unchanged, that no model request follows until
// the next prompt, and that the refusal reaches the model with it.
func qwenRejectEdit(t *testing.T, d *nvimDriver, pane *tmuxPane, qwen gemkittest.Pane, target, accepted string, turns func() int, ask func(string) fakemodel.ChatRequest) {
	t.Helper()
	// edit: the plugin's diff, closed with :q: rejected.
	n := turns()
	ask("make two upper case")
	waitFor(t, "the plugin's diff proposing the edit", func() bool {
		v, ok := d.Diff(t, target)
		return ok && v.Right == strings.Replace(accepted, "two", "TWO", 1)
	})
	d.toRight(t, target)
	pane.keys(t, ":q")
	pane.keys(t, "", "Enter")
	waitFor(t, "the edit's diff closed", func() bool { _, ok := d.Diff(t, target); return !ok })
	// Qwen Code has dealt with the answer once it marks the edit
	// cancelled (-).
	waitScreen(t, qwen.Screen, "Qwen Code's word for the rejection", func(s string) bool { return strings.Contains(s, "- Edit b.txt") })
	if b, _ := os.ReadFile(target); string(b) != accepted {
		t.Fatalf("after the rejection b.txt holds %q, want %q", b, accepted)
	}
	if got := turns(); got != n+1 {
		t.Fatalf("Qwen Code sent %d model requests after the rejection, want none until the next prompt", got-n-1)
	}
	// The rejection reaches the model with the next prompt.
	next := ask("what happened")
	results := next.ToolResults()
	if len(results) == 0 || !strings.Contains(results[len(results)-1], "did not allow") {
		all, _ := json.Marshal(next.Messages)
		t.Fatalf("the request after the rejection does not tell the model the edit was refused:\n%s", all)
	}
	waitScreen(t, qwen.Screen, "the model's last answer", func(s string) bool { return strings.Contains(s, "Nothing was changed.") })
	if b, _ := os.ReadFile(target); string(b) != accepted {
		t.Fatalf("b.txt holds %q, want %q", b, accepted)
	}
}

// startQwenWindow runs Qwen Code (node cli) in a new window of the tmux
// server Neovim runs in (startNvimTmux's), in h's workspace, with h's
// environment plus env.
func startQwenWindow(t *testing.T, d *nvimDriver, h *harness, env []string, node, cli string) gemkittest.Pane {
	t.Helper()
	argv := append(append(append([]string{"env", "-i"}, h.env()...), env...), node, cli)
	return d.tmux.NewWindow("qwen", h.ws, argv...)
}

// qwenConnected waits for Qwen Code's input in qwen and has it tell its
// IDE connection (/ide status) until it is connected to Neovim. Qwen
// Code gives its connection at start-up 15 s, which a loaded machine can
// exceed; it then says to run /ide enable, as a person would, and that
// connects through the same lock file.
func qwenConnected(t *testing.T, qwen gemkittest.Pane) {
	t.Helper()
	waitScreen(t, qwen.Screen, "Qwen Code's input", func(s string) bool { return strings.Contains(s, "Type your message") })
	connected := func() bool { return strings.Contains(qwen.Screen(), "Connected to Neovim") }
	gemkittest.Submit(t, qwen, "/ide status", func() bool { return connected() || strings.Contains(qwen.Screen(), "Disconnected") })
	if !connected() {
		t.Log("Qwen Code's connection at start-up did not complete in its time: /ide enable")
		gemkittest.Submit(t, qwen, "/ide enable", connected)
	}
}

// quitNeovimWithQwenLock ends Neovim with :qa! and checks that it, the
// companion and everything they started are gone, with Qwen Code's lock
// file and the discovery files.
func quitNeovimWithQwenLock(t *testing.T, h *harness, pane *tmuxPane, nvimPID int, lock string) {
	t.Helper()
	// :qa ends Neovim and the companion; its files go.
	noDeprecations(t, h)
	tree := gemkittest.ProcessTree(nvimPID)
	pane.keys(t, ":qa!")
	pane.keys(t, "", "Enter")
	waitFor(t, "Neovim and every process it started gone", func() bool { return !gemkittest.AnyRunning(tree) })
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("Qwen Code's lock file is left after Neovim quit: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(h.discoveryDir, "*.json")); len(m) != 0 {
		t.Fatalf("discovery files left after Neovim quit: %v", m)
	}
}
