package editors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// claudeSide is what each plugin does for Claude Code beyond the Gemini
// scenario: a mention command and diagnostics from the editor's own
// source of them.
type claudeSide interface {
	driver
	// Mention runs the plugin's mention command on lines from..to of the
	// current file.
	Mention(t *testing.T, from, to int)
	// SetWarning makes the editor show a warning msg on line of path
	// (vim.diagnostic, the quickfix list, Flymake).
	SetWarning(t *testing.T, path string, line int, msg string)
	// ProposalLabel is what the proposal's window says above or below it
	// (Vim's and Neovim's status line, Emacs's header line), as shown.
	ProposalLabel(t *testing.T, path string) string
	// Status is what the plugin's status command says (:GemkitStatus,
	// M-x gemkit-status).
	Status(t *testing.T) string
}

func (d *nvimDriver) ProposalLabel(t *testing.T, path string) string { return d.Hint(t, path) }

func (d *nvimDriver) Status(t *testing.T) string {
	s, _ := d.lua(t, `return require('gemkit').status()`).(string)
	return s
}

func (d *vimDriver) ProposalLabel(t *testing.T, path string) string { return d.Hint(t, path) }

func (d *vimDriver) Status(t *testing.T) string { return d.evalString(t, "gemkit#status()") }

func (d *emacsDriver) ProposalLabel(t *testing.T, path string) string {
	return d.evalString(t, "(with-current-buffer (gemkit--diff-right (gethash "+elispString(path)+" gemkit--diffs)) (format-mode-line header-line-format))")
}

func (d *emacsDriver) Status(t *testing.T) string { return d.evalString(t, "(gemkit-status)") }

func (d *nvimDriver) Mention(t *testing.T, from, to int) {
	d.command(t, fmt.Sprintf("%d,%dGemkitMention", from, to))
}

func (d *nvimDriver) SetWarning(t *testing.T, path string, line int, msg string) {
	d.lua(t, `local path, line, msg = ...
vim.diagnostic.set(vim.api.nvim_create_namespace('test'), vim.fn.bufnr(path), {
  { lnum = line - 1, col = 0, message = msg, severity = vim.diagnostic.severity.WARN, source = 'testlint' } })`, path, line, msg)
}

func (d *vimDriver) Mention(t *testing.T, from, to int) {
	d.ex(t, fmt.Sprintf("%d,%dGemkitMention", from, to))
}

func (d *vimDriver) SetWarning(t *testing.T, path string, line int, msg string) {
	d.ex(t, fmt.Sprintf("call setqflist([{'filename': '%s', 'lnum': %d, 'col': 1, 'text': '%s', 'type': 'W'}])", path, line, msg))
}

func (d *emacsDriver) Mention(t *testing.T, from, to int) {
	// The region over the lines, then the command, as M-x would run it.
	d.eval(t, fmt.Sprintf(`(with-current-buffer (window-buffer (selected-window))
  (let ((beg (save-excursion (goto-char (point-min)) (forward-line %d) (point)))
        (end (save-excursion (goto-char (point-min)) (forward-line %d) (point))))
    (gemkit-mention beg end))
  t)`, from-1, to))
}

func (d *emacsDriver) SetWarning(t *testing.T, path string, line int, msg string) {
	d.eval(t, fmt.Sprintf(`(with-current-buffer (get-file-buffer %q)
  (require 'flymake)
  (setq-local flymake-diagnostic-functions
    (list (lambda (report &rest _)
            (funcall report
              (list (flymake-make-diagnostic (current-buffer)
                      (save-excursion (goto-char (point-min)) (forward-line %d) (point))
                      (save-excursion (goto-char (point-min)) (forward-line %d) (line-end-position))
                      :warning %q))))))
  (flymake-mode 1)
  (flymake-start)
  t)`, path, line-1, line-1, msg))
}

// runClaudeSide connects to the plugin's gemkit as Claude Code does (the
// lock file in ~/.claude/ide, the token header, subprotocol mcp) and checks
// the mention and getDiagnostics with the editor's own sources.
func runClaudeSide(t *testing.T, h *harness, d claudeSide) {
	lock, token := readClaudeLock(t, h)
	port := strings.TrimSuffix(filepath.Base(lock), ".lock")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cc := dialClaudeIDE(ctx, t, port, token)
	defer cc.c.CloseNow()
	send, next := cc.send, cc.next
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.330"}}}`)
	next("initialize result", func(m map[string]json.RawMessage) bool { return string(m["id"]) == "1" })
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	path := h.path("b.txt")
	d.Open(t, path, 1, 1)
	d.SetWarning(t, path, 2, "TEST_WARNING two")
	var diags string
	waitFor(t, "the warning in getDiagnostics", func() bool {
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"getDiagnostics","arguments":{"uri":"file://` + path + `"}}}`)
		r := next("getDiagnostics result", func(m map[string]json.RawMessage) bool { return string(m["id"]) == "2" })
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		_ = json.Unmarshal(r["result"], &res)
		if len(res.Content) == 1 {
			diags = res.Content[0].Text
		}
		return strings.Contains(diags, "TEST_WARNING two")
	})
	var files []struct {
		URI         string `json:"uri"`
		Diagnostics []struct {
			Message  string `json:"message"`
			Severity string `json:"severity"`
			Range    struct {
				Start struct{ Line int } `json:"start"`
			} `json:"range"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(diags), &files); err != nil || len(files) != 1 || files[0].URI != "file://"+path ||
		len(files[0].Diagnostics) != 1 || files[0].Diagnostics[0].Severity != "Warning" || files[0].Diagnostics[0].Range.Start.Line != 1 {
		t.Errorf("getDiagnostics = %s (%v)", diags, err)
	}

	d.Mention(t, 1, 2)
	m := next("at_mentioned", func(m map[string]json.RawMessage) bool { return string(m["method"]) == `"at_mentioned"` })
	want := `{"filePath":` + strconv.Quote(path) + `,"lineEnd":1,"lineStart":0}`
	if got := string(m["params"]); got != want {
		t.Errorf("at_mentioned %s, want %s", got, want)
	}

	// The status command lists every endpoint the companion serves, with
	// its port and file, as :checkhealth does.
	disc, _ := filepath.Glob(filepath.Join(h.discoveryDir, "*.json"))
	qport := d.Getenv(t, "QWEN_CODE_IDE_SERVER_PORT")
	status := d.Status(t)
	for _, w := range []string{
		"gemkit serves Gemini CLI on 127.0.0.1:" + qport + " (discovery file " + strings.Join(disc, " ") + ")",
		"gemkit serves Claude Code on 127.0.0.1:" + port + " (lock file " + lock + ")",
		"gemkit serves Qwen Code on 127.0.0.1:" + qport + " (lock file " + filepath.Join(h.home, ".qwen", "ide", qport+".lock") + ")",
	} {
		if !strings.Contains(status, w) {
			t.Errorf("the status command says\n%s\nwithout %q", status, w)
		}
	}

	// Claude Code's proposal names it (the Emacs header read "Proposed by
	// Gemini CLI" for every agent's).
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"openDiff","arguments":{"old_file_path":` + strconv.Quote(path) +
		`,"new_file_path":` + strconv.Quote(path) + `,"new_file_contents":"one\nTWO\nthree\n","tab_name":"b.txt"}}}`)
	waitFor(t, "Claude Code's diff of b.txt", func() bool {
		v, ok := d.Diff(t, path)
		return ok && v.Visible
	})
	if label := d.ProposalLabel(t, path); !strings.Contains(label, "Proposed by Claude Code: ") {
		t.Errorf("Claude Code's proposal is labelled %q", label)
	}
	d.Reject(t, path)
	r := next("openDiff result", func(m map[string]json.RawMessage) bool { return string(m["id"]) == "3" })
	if !strings.Contains(string(r["result"]), "DIFF_REJECTED") {
		t.Errorf("openDiff rejected: %s", r["result"])
	}
}

// readClaudeLock waits for the companion's one Claude Code lock file and
// returns its path and token.
func readClaudeLock(t *testing.T, h *harness) (lock, token string) {
	t.Helper()
	lockDir := filepath.Join(h.home, ".claude", "ide")
	waitFor(t, "the Claude Code lock file", func() bool {
		m, _ := filepath.Glob(filepath.Join(lockDir, "*.lock"))
		if len(m) == 1 {
			lock = m[0]
		}
		return lock != ""
	})
	data, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		AuthToken string `json:"authToken"`
		IDEName   string `json:"ideName"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return lock, l.AuthToken
}

// claudeIDE is a WebSocket connection to the companion's Claude Code
// endpoint, as Claude Code makes it, with the messages it receives.
type claudeIDE struct {
	t    *testing.T
	ctx  context.Context
	c    *websocket.Conn
	msgs chan map[string]json.RawMessage
}

// dialClaudeIDE connects to the endpoint on port with token, and reads
// its messages into a channel until it closes.
func dialClaudeIDE(ctx context.Context, t *testing.T, port, token string) *claudeIDE {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+port+"/", &websocket.DialOptions{
		Subprotocols: []string{"mcp"}, HTTPHeader: http.Header{"X-Claude-Code-Ide-Authorization": {token}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make(chan map[string]json.RawMessage, 100)
	go func() {
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				close(msgs)
				return
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(b, &m) == nil {
				msgs <- m
			}
		}
	}()
	return &claudeIDE{t: t, ctx: ctx, c: c, msgs: msgs}
}

// send writes one JSON-RPC message.
func (cc *claudeIDE) send(s string) {
	if err := cc.c.Write(cc.ctx, websocket.MessageText, []byte(s)); err != nil {
		cc.t.Fatal(err)
	}
}

// next returns the first message ok accepts, dropping those before it.
func (cc *claudeIDE) next(what string, ok func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	cc.t.Helper()
	for {
		select {
		case m, open := <-cc.msgs:
			if !open {
				cc.t.Fatalf("connection closed waiting for %s", what)
			}
			if ok(m) {
				return m
			}
		case <-cc.ctx.Done():
			cc.t.Fatalf("no %s", what)
		}
	}
}

func TestNeovimClaudeSide(t *testing.T) {
	t.Parallel()
	bin := requireEditor(t, "nvim", "neovim")
	h := newHarness(t)
	runClaudeSide(t, h, startNvim(t, h, bin, gemkittest.Gemkit(t)))
}

func TestVimClaudeSide(t *testing.T) {
	t.Parallel()
	bin := requireEditor(t, "vim", "vim-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	h := newHarness(t)
	runClaudeSide(t, h, startVim(t, h, bin, tmux, gemkittest.Gemkit(t)))
}

func TestEmacsClaudeSide(t *testing.T) {
	t.Parallel()
	bin := requireEditor(t, "emacs", "emacs-nox")
	client := requireEditor(t, "emacsclient", "emacs-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	h := newHarness(t)
	d := startEmacs(t, h, bin, client, tmux, gemkittest.Gemkit(t))
	runClaudeSide(t, h, d)
	// Closing the terminal (with Flymake loaded, which started native
	// compilation) ends Emacs, and gemkit removes its files.
	d.HangUp(t)
	waitFor(t, "gemkit's discovery and lock files removed", func() bool {
		disc, _ := filepath.Glob(filepath.Join(h.discoveryDir, "*"))
		locks, _ := filepath.Glob(filepath.Join(h.home, ".claude", "ide", "*.lock"))
		return len(disc) == 0 && len(locks) == 0
	})
}
