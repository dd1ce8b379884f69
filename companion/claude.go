package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// Claude Code's IDE protocol, as the CLI (@anthropic-ai/claude-code) speaks
// it: MCP over a WebSocket at ws://127.0.0.1:<port>/ with subprotocol "mcp"
// and the token in ClaudeAuthHeader, found through a lock file
// <port>.lock. It has its own listener, token and lock file; it shares
// with the Gemini side the open files, the editor and the diff registry.
const (
	// ClaudeAuthHeader carries the lock file's token.
	ClaudeAuthHeader  = "X-Claude-Code-Ide-Authorization"
	claudeSubprotocol = "mcp"

	// Claude's tools.
	claudeToolOpenDiff       = "openDiff"
	claudeToolCloseTab       = "close_tab"
	claudeToolCloseAllDiffs  = "closeAllDiffTabs"
	claudeToolGetDiagnostics = "getDiagnostics"

	// Claude's notifications.
	claudeSelectionChanged = "selection_changed"
	claudeAtMentioned      = "at_mentioned"

	// The texts of openDiff's answers.
	claudeFileSaved    = "FILE_SAVED"
	claudeDiffRejected = "DIFF_REJECTED"
	claudeTabClosed    = "TAB_CLOSED"
)

// diffOutcome is what the person did with a diff Claude Code opened.
type diffOutcome struct {
	accepted bool
	content  string
	closed   bool // closed through close_tab or closeAllDiffTabs
	replaced bool // another openDiff of the same file replaced it
}

type claudeEndpoint struct {
	srv      *Server
	guard    *httpguard.Guard
	port     int
	token    string
	http     *http.Server
	mcp      *mcpServer
	lockDir  string
	lockPath string

	mu      sync.Mutex
	peers   map[*wsPeer]bool  // true once initialized
	tabs    map[string]string // tab name → path, of the diffs waiting
	lastSel string            // the last selection_changed sent, encoded
	stopped bool
	lockErr error
}

func newClaudeEndpoint(s *Server) (*claudeEndpoint, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	ln, err := httpguard.Listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("companion: for Claude Code: %w", err)
	}
	// The guard of the companion's port, with Claude Code's token in its
	// own header (no "Bearer").
	guard, err := httpguard.New(ln, httpguard.Config{
		Header:     ClaudeAuthHeader,
		Credential: token,
		Limits:     s.limits(),
		Wording: httpguard.Wording{
			FromSandbox: sandboxRefusal,
			Credential:  "unauthorized: missing or wrong " + ClaudeAuthHeader,
		},
		ErrorLog: s.http.ErrorLog,
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("companion: for Claude Code: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	c := &claudeEndpoint{
		srv: s, guard: guard, port: port, token: token,
		lockDir: s.cfg.ClaudeLockDir,
		peers:   map[*wsPeer]bool{},
		tabs:    map[string]string{},
	}
	c.lockPath = filepath.Join(c.lockDir, discovery.ClaudeLockName(port))
	tools := []mcpTool{
		{claudeToolCloseAllDiffs,
			"Close every diff tab Claude Code opened.",
			json.RawMessage(`{"type":"object","properties":{}}`),
			c.closeAllDiffTabs},
		{claudeToolCloseTab,
			"Close the diff tab of that name.",
			json.RawMessage(`{"type":"object","properties":{"tab_name":{"type":"string"}},"required":["tab_name"]}`),
			c.closeTab},
		{claudeToolGetDiagnostics,
			"Get the language diagnostics (errors, warnings) the editor shows, for one file (uri) or for all.",
			json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","description":"file:// URI of a file; all files when omitted"}}}`),
			c.getDiagnostics},
		{claudeToolOpenDiff,
			"Open a diff of a proposed change in the editor and wait until the person saves (FILE_SAVED and the final text), rejects (DIFF_REJECTED) or closes it (TAB_CLOSED).",
			json.RawMessage(`{"type":"object","properties":{"old_file_path":{"type":"string"},"new_file_path":{"type":"string"},"new_file_contents":{"type":"string"},"tab_name":{"type":"string"}},"required":["old_file_path","new_file_path","new_file_contents","tab_name"]}`),
			c.openDiff},
	}
	c.mcp = &mcpServer{version: s.cfg.Version, tools: func() []mcpTool { return tools }}
	c.http = guard.Server(http.HandlerFunc(c.serveHTTP))
	return c, nil
}

// serveHTTP serves a connection the guard let through as an MCP peer.
func (c *claudeEndpoint) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		writeJSONError(w, http.StatusNotFound, "not found: "+r.URL.Path)
		return
	}
	p, err := acceptWS(w, r, claudeSubprotocol, c.srv.log)
	if err != nil {
		c.srv.log.Debug("claude code: websocket upgrade refused", "err", err)
		return
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		p.close(1001, "server shutting down")
		return
	}
	c.peers[p] = false
	c.mu.Unlock()
	p.info.deferPeer(p.conn)
	c.srv.log.Info("claude code connected", "port", c.port)
	defer func() {
		c.mu.Lock()
		wasReady := c.peers[p]
		delete(c.peers, p)
		c.mu.Unlock()
		c.srv.log.Info("claude code disconnected", "port", c.port)
		if wasReady {
			c.srv.clientsChanged()
		}
	}()
	if hook := c.srv.testBeforeEventWrite.Load(); hook != nil {
		p.beforeWrite = *hook
	}
	p.lost = func(label string) {
		c.srv.log.Warn("Claude Code's connection closed before it received "+label+": what you decided there did not reach it; ask it to propose the change again", "port", c.port)
	}
	serveMCPPeer(r.Context(), c.srv, p, c.mcp, claudeAnswerLabel, func(method string, _ json.RawMessage) {
		if method == "notifications/initialized" {
			c.mu.Lock()
			c.peers[p] = true
			c.mu.Unlock()
			c.srv.clientsChanged()
			if msg := c.selectionMsg(); msg != nil {
				p.send(msg)
			}
		}
	})
}

// claudeAnswerLabel names, for a person, what the answer to a request of
// Claude Code carries when it carries their decision: the answer to an
// openDiff.
func claudeAnswerLabel(rm rpcMessage) string {
	if rm.Method != "tools/call" || toolName(rm.Params) != claudeToolOpenDiff {
		return ""
	}
	p, _ := mcpwire.ReadParams(rm.Params)
	var args map[string]any
	_ = json.Unmarshal(p.Arguments, &args)
	path, _ := args["new_file_path"].(string)
	if path == "" {
		path, _ = args["old_file_path"].(string)
	}
	return "the answer to its diff of " + path
}

// serveMCPPeer serves MCP over WebSocket: requests go to m in their own
// goroutine (an openDiff of Claude Code waits for the person), client
// notifications to onNote. answerLabel, when not nil, names what an
// answer carries for a person (the peer's lost hears of it if it goes
// without).
func serveMCPPeer(ctx context.Context, s *Server, p *wsPeer, m *mcpServer, answerLabel func(rpcMessage) string, onNote func(string, json.RawMessage)) {
	p.run(ctx, s.cfg.PingInterval, func(msg []byte) {
		rm, err := readRPC(msg)
		if err != nil || rm.JSONRPC != "2.0" {
			p.sendJSON(rpcError(nil, jsonrpc.CodeParseError, "Parse error: each message must be one JSON-RPC 2.0 object"), "")
			return
		}
		// Checked on the raw bytes, as on /mcp: decoding would turn each
		// bad byte into U+FFFD and a diff would be shown changed.
		if textErr := jsonrpc.CheckJSONText(msg); textErr != nil {
			tool := toolName(rm.Params)
			s.log.Warn("WebSocket message refused", "method", rm.Method, "tool", tool, "err", textErr)
			if rm.Method != "" && rm.HasID() {
				p.sendJSON(textRefusal(rm.Method, tool, rm.ID, textErr), "")
			}
			return
		}
		switch {
		case rm.Method == "":
			// A response to a request of ours (we send none but pings).
		case !rm.HasID():
			onNote(rm.Method, rm.Params)
		default:
			if rm.Method == "initialize" {
				p.info.set(initializeInfo(rm.Params))
			}
			label := ""
			if answerLabel != nil {
				label = answerLabel(rm)
			}
			if err := p.spawn(func(ctx context.Context) {
				if resp := m.handle(ctx, rm); resp != nil {
					p.sendJSON(resp, label)
				}
			}); err != nil {
				p.sendJSON(rpcError(rm.ID, -32000, err.Error()), "")
			}
		}
	})
}

// start writes the lock file once the listener serves.
func (c *claudeEndpoint) start(httpErr chan<- error) error {
	go func() { httpErr <- c.http.Serve(c.guard.Listener()) }()
	return c.writeLock()
}

func (c *claudeEndpoint) writeLock() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	name := c.srv.cfg.IDEInfo.DisplayName
	_, err := discovery.WriteClaudeLock(c.lockDir, c.port, discovery.ClaudeLock{
		PID:              c.srv.cfg.PID,
		WorkspaceFolders: c.srv.workspaceSnapshot(),
		IDEName:          name,
		Transport:        "ws",
		AuthToken:        c.token,
	})
	if err != nil {
		return fmt.Errorf("companion: %w", err)
	}
	return nil
}

// shutdown removes the lock file first, then ends every connection.
func (c *claudeEndpoint) shutdown(ctx context.Context) {
	c.mu.Lock()
	c.stopped = true
	if err := os.Remove(c.lockPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.srv.log.Warn("removing claude code lock file", "err", err)
	}
	peers := make([]*wsPeer, 0, len(c.peers))
	for p := range c.peers {
		peers = append(peers, p)
	}
	c.mu.Unlock()
	closeAllFlushed(ctx, peers)
	if err := c.http.Shutdown(ctx); err != nil {
		c.http.Close()
	}
	c.guard.Listener().Close() // when Serve never ran
}

// notify sends a notification to every initialized Claude Code.
func (c *claudeEndpoint) notify(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, ready := range c.peers {
		if ready {
			p.send(msg)
		}
	}
}

// contextChanged sends selection_changed when the active file's selection
// differs from what was last sent.
func (c *claudeEndpoint) contextChanged() {
	msg := c.selectionMsg()
	if msg == nil {
		return
	}
	c.mu.Lock()
	same := string(msg) == c.lastSel
	c.lastSel = string(msg)
	c.mu.Unlock()
	if !same {
		c.notify(msg)
	}
}

type claudePos struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type claudeRange struct {
	Start claudePos `json:"start"`
	End   claudePos `json:"end"`
}

// selectionMsg is selection_changed for the active file, nil when no file
// is active.
func (c *claudeEndpoint) selectionMsg() []byte {
	ctx := c.srv.Context()
	if ctx.WorkspaceState == nil {
		return nil
	}
	for _, f := range ctx.WorkspaceState.OpenFiles {
		if !f.IsActive || f.Cursor == nil {
			continue
		}
		msg, err := notification(claudeSelectionChanged, map[string]any{
			"selection": selectionRange(*f.Cursor, f.SelectedText),
			"text":      f.SelectedText,
			"filePath":  f.Path,
			"fileUrl":   "file://" + f.Path,
		})
		if err != nil {
			return nil
		}
		return msg
	}
	return nil
}

// selectionRange is the range of selection_changed (0-based, the end
// exclusive, as VS Code's selections are). The editor protocol reports a
// cursor (1-based) and the selected text: the cursor is taken as the
// selection's last line, the start is counted back over the text's lines,
// and the range ends after the text's last character. Claude Code counts
// end.line-start.line+1 lines, one less when end.character is 0, and shows
// that count ("⧉ 2 lines selected"): an end at the cursor's column would
// lose the last line of a linewise selection.
func selectionRange(cursor ide.Cursor, text string) claudeRange {
	end := claudePos{Line: cursor.Line - 1, Character: cursor.Character - 1}
	if text == "" {
		return claudeRange{Start: end, End: end}
	}
	if n := strings.Count(text, "\n"); n > 0 {
		last := text[strings.LastIndexByte(text, '\n')+1:]
		return claudeRange{
			Start: claudePos{Line: max(end.Line-n, 0)},
			End:   claudePos{Line: end.Line, Character: utf16Len(last)},
		}
	}
	// One line: the cursor is on the text's last character (Vim's Visual
	// mode) or just after it (Emacs's point), so the start's column may be
	// one off; the end is never 0, and Claude Code reads only the lines.
	w := utf16Len(text)
	start := max(end.Character-w+1, 0)
	return claudeRange{
		Start: claudePos{Line: end.Line, Character: start},
		End:   claudePos{Line: end.Line, Character: start + w},
	}
}

// utf16Len counts the UTF-16 code units of s, the unit of positions.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if w := utf16.RuneLen(r); w > 0 {
			n += w
		} else {
			n++
		}
	}
	return n
}

// Mention implements [Mentions]: Claude Code inserts an @-mention of path
// (lines 1-based, 0 when not given) into its prompt. Gemini CLI has no
// such notification.
func (s *Server) Mention(path string, lineStart, lineEnd int) {
	if s.claude == nil {
		return
	}
	params := map[string]any{"filePath": filepath.Clean(path)}
	if lineStart > 0 {
		params["lineStart"] = lineStart - 1
		if lineEnd < lineStart {
			lineEnd = lineStart
		}
		params["lineEnd"] = lineEnd - 1
	}
	msg, err := notification(claudeAtMentioned, params)
	if err != nil {
		return
	}
	s.claude.notify(msg)
}

// ClaudePort is the port Claude Code connects to; 0 when the Claude Code
// endpoint is off.
func (s *Server) ClaudePort() int {
	if s.claude == nil {
		return 0
	}
	return s.claude.port
}

// ClaudeToken is the token of the Claude Code lock file; empty when the
// endpoint is off.
func (s *Server) ClaudeToken() string {
	if s.claude == nil {
		return ""
	}
	return s.claude.token
}

// ClaudeLockPath is the path of the lock file [Server.Serve] writes for Claude
// Code; empty when the endpoint is off.
func (s *Server) ClaudeLockPath() string {
	if s.claude == nil {
		return ""
	}
	return s.claude.lockPath
}

// takeWaiting removes and returns the diff of path if an openDiff of
// Claude Code waits for it; nil otherwise (the diff, if any, stays).
func (d *diffRegistry) takeWaiting(path string) (string, *diffEntry) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, e := range d.open {
		if e.answer != nil && (k == path || filepath.Clean(k) == filepath.Clean(path)) {
			delete(d.open, k)
			return k, e
		}
	}
	return path, nil
}

// takeIf removes e if it is still the diff of path and reports whether it
// was.
func (d *diffRegistry) takeIf(path string, e *diffEntry) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open[path] != e {
		return false
	}
	delete(d.open, path)
	return true
}
