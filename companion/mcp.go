package companion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// mcpEndpoint serves /mcp: Streamable HTTP as the official companion serves
// it (gemini-cli 0.61.0 packages/vscode-ide-companion/src/ide-server.ts),
// with strict session checks (400 with JSON-RPC -32000 for an unknown or
// missing session, as the official companion answers), session expiry
// (the real client never sends DELETE), and delivery of our notifications
// on each session's GET stream, with the current context on the first
// one. Each request body is read and decoded once; the MCP methods are
// answered by mcpServer (mcprpc.go).
type mcpEndpoint struct {
	srv *Server
	rpc *mcpServer
}

const (
	openDiffSchema = `{
  "type": "object",
  "properties": {
    "filePath": {"type": "string", "description": "Absolute path of the file to change; it may not exist yet (a new file)."},
    "newContent": {"type": "string", "description": "The proposed full content of the file."}
  },
  "required": ["filePath", "newContent"]
}`
	closeDiffSchema = `{
  "type": "object",
  "properties": {
    "filePath": {"type": "string", "description": "Absolute path of the file whose diff to close."},
    "suppressNotification": {"type": "boolean", "description": "Deprecated and ignored: closing a diff never sends an accept or reject notification."}
  },
  "required": ["filePath"]
}`
)

func newMCPEndpoint(s *Server) *mcpEndpoint {
	m := &mcpEndpoint{srv: s}
	tools := []mcpTool{
		{ide.ToolOpenDiff,
			"(IDE tool) Open a diff view in the editor to create or modify a file. Returns once the diff is shown; the outcome arrives as an ide/diffAccepted or ide/diffRejected notification.",
			json.RawMessage(openDiffSchema), m.openDiff},
		{ide.ToolCloseDiff,
			"(IDE tool) Close the open diff view of a file and return the proposed side's current content as JSON {\"content\": ...}.",
			json.RawMessage(closeDiffSchema), m.closeDiff},
	}
	m.rpc = &mcpServer{version: s.cfg.Version, tools: func() []mcpTool {
		// An editor that shows no diffs lists no diff tools.
		if showsDiffs(s.editor) {
			return tools
		}
		return nil
	}}
	return m
}

func (m *mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		m.servePost(w, r)
	case http.MethodGet:
		m.serveGet(w, r)
	case http.MethodDelete:
		sess := m.srv.sess.get(r.Header.Get(ide.HeaderSessionID))
		if sess == nil {
			writeBadSession(w)
			return
		}
		m.srv.sess.remove(sess.id)
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeJSONRPCError(w, http.StatusMethodNotAllowed, -32000, "Method not allowed.")
	}
}

func (m *mcpEndpoint) servePost(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSONRPCError(w, http.StatusRequestEntityTooLarge, -32000, fmt.Sprintf("Request body larger than %d bytes.", ide.MaxRequestBody))
			return
		}
		writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: cannot read the request body.")
		return
	}
	// Checked before decoding: encoding/json would turn each bad byte
	// into U+FFFD, and a diff would be shown (and, once accepted,
	// written) changed.
	if textErr := jsonrpc.CheckJSONText(body); textErr != nil {
		method, tool, id := describe(body)
		m.srv.log.Warn("MCP request refused", "method", method, "tool", tool, "err", textErr)
		m.refuseText(w, method, tool, id, textErr)
		return
	}
	msg, err := readRPC(body)
	if err != nil || msg.JSONRPC != "2.0" || msg.Method == "" {
		writeJSONRPCError(w, http.StatusBadRequest, jsonrpc.CodeParseError, "Parse error: the body must be one JSON-RPC 2.0 request or notification.")
		return
	}
	if msg.Method == "initialize" {
		// A new session, registered before the client learns its id.
		resp := m.rpc.handle(r.Context(), msg)
		if resp != nil && resp.Error == nil {
			id := newSessionID()
			m.srv.sess.add(id, initializeInfo(msg.Params), peerConnOf(r))
			w.Header().Set(ide.HeaderSessionID, id)
		}
		m.reply(w, resp)
		return
	}
	sess := m.srv.sess.get(r.Header.Get(ide.HeaderSessionID))
	if sess == nil {
		writeBadSession(w)
		return
	}
	if v := r.Header.Get(ide.HeaderProtocolVersion); v != "" && !mcpwire.Supported(v) {
		writeJSONRPCError(w, http.StatusBadRequest, -32000, fmt.Sprintf("Bad Request: unsupported protocol version %q", v))
		return
	}
	sess.begin()
	defer sess.end()
	m.reply(w, m.rpc.handle(context.WithValue(r.Context(), sessionKey{}, sess.id), msg))
}

// reply writes the answer to a POST: the response, or 202 with no body
// for a notification.
func (m *mcpEndpoint) reply(w http.ResponseWriter, resp *response) {
	if resp == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// describe names a refused body's method, tool and id, as far as they
// can be read, for the refusal and the log.
func describe(body []byte) (method, tool string, id json.RawMessage) {
	peek, _ := readRPC(body)
	return peek.Method, toolName(peek.Params), peek.ID
}

// serveGet opens the session's event stream: the pump writes the
// notifications on it in the order we choose, with nothing dropped, until
// the client goes or the stream is ended. A session has one stream: a
// client that opens another has left the one before (it reconnects), so
// that one is ended, and what its client did not receive is written on
// the new one, after the event named by Last-Event-ID when the client
// sends it (as the MCP SDKs do when they reconnect).
func (m *mcpEndpoint) serveGet(w http.ResponseWriter, r *http.Request) {
	sess := m.srv.sess.get(r.Header.Get(ide.HeaderSessionID))
	if sess == nil {
		writeBadSession(w)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st := newEventStream(w, cancel, httpguard.DeliveryOf(r), lastEventID(r))
	if hook := m.srv.testBeforeEventWrite.Load(); hook != nil {
		st.beforeWrite = *hook
	}
	defer close(st.ended)

	sess.mu.Lock()
	older := slices.Collect(maps.Keys(sess.streams))
	sess.streams[st] = struct{}{}
	sess.gotGET = true
	sess.mu.Unlock()
	for _, o := range older {
		o.abort()
	}
	sess.begin()
	if m.srv.sess.get(sess.id) != sess {
		// The session expired while this GET arrived.
		sess.mu.Lock()
		delete(sess.streams, st)
		sess.mu.Unlock()
		sess.end()
		writeBadSession(w)
		return
	}
	m.srv.clientsChanged()
	defer func() {
		sess.mu.Lock()
		delete(sess.streams, st)
		sess.mu.Unlock()
		sess.end()
		m.srv.clientsChanged()
	}()

	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		m.srv.pump(ctx, sess, st)
	}()
	h := st.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	st.WriteHeader(http.StatusOK)
	st.Flush()
	<-ctx.Done()
	st.finish()
	<-pumped
}

// lastEventID is the event id a reconnecting client says it read last
// (SSE's Last-Event-ID), 0 when it names none this companion gave.
func lastEventID(r *http.Request) uint64 {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		return 0
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return id
}

func writeBadSession(w http.ResponseWriter) {
	writeJSONRPCError(w, http.StatusBadRequest, -32000, "Bad Request: No valid session ID provided")
}

// refuseText answers a request whose body is not valid Unicode text.
func (m *mcpEndpoint) refuseText(w http.ResponseWriter, method, tool string, id json.RawMessage, err error) {
	writeJSON(w, http.StatusOK, textRefusal(method, tool, id, err))
}

// textRefusal is the answer to a request that is not valid Unicode text, on
// every transport: a tool call gets an isError result naming the tool, as
// any other failed call does; any other request gets JSON-RPC -32602
// (invalid params).
func textRefusal(method, tool string, id json.RawMessage, err error) map[string]any {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if method == "tools/call" {
		if tool == "" {
			tool = "tools/call"
		}
		return map[string]any{
			"jsonrpc": "2.0",
			"id":      id,
			"result":  toolError(fmt.Sprintf("%s refused: %v", tool, err)),
		}
	}
	return rpcError(id, jsonrpc.CodeInvalidParams, "Invalid params: "+err.Error())
}

func writeJSONRPCError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{
		"jsonrpc": "2.0",
		"error":   map[string]any{"code": code, "message": msg},
		"id":      nil,
	})
}

func (m *mcpEndpoint) openDiff(ctx context.Context, args map[string]any) (*callResult, error) {
	filePath, ok := args["filePath"].(string)
	if !ok || filePath == "" {
		return toolError("openDiff: filePath must be a non-empty string"), nil
	}
	newContent, ok := args["newContent"].(string)
	if !ok {
		return toolError("openDiff: newContent must be a string"), nil
	}
	if !filepath.IsAbs(filePath) {
		return toolError(fmt.Sprintf("openDiff: filePath must be an absolute path, not %q", filePath)), nil
	}
	session := sessionOf(ctx)
	e := m.srv.registerDiff(filePath, session, nil)
	ctx, cancel := context.WithTimeout(WithProposer(ctx, m.srv.agentOf(ctx, session)), m.srv.cfg.EditorTimeout)
	defer cancel()
	if err := m.srv.editor.OpenDiff(ctx, filePath, newContent); err != nil {
		m.srv.diffs.drop(filePath, e)
		if errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled {
			// The client that asked has gone while the editor was
			// showing the diff: close it there, or it stays open with
			// nobody to take its outcome.
			go m.closeOrphan(filePath)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the editor did not show the diff within %v", m.srv.cfg.EditorTimeout)
		}
		return toolError(fmt.Sprintf("Failed to open diff for %s: %v", filePath, err)), nil
	}
	return &callResult{Content: []textPart{}}, nil
}

// closeOrphan closes the diff of filePath in the editor after the client
// that asked for it has gone.
func (m *mcpEndpoint) closeOrphan(filePath string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.srv.cfg.EditorTimeout)
	defer cancel()
	if _, _, err := m.srv.editor.CloseDiff(ctx, filePath); err != nil {
		m.srv.log.Warn("closing the diff of a client that went away", "path", filePath, "err", err)
	}
}

func (m *mcpEndpoint) closeDiff(ctx context.Context, args map[string]any) (*callResult, error) {
	filePath, ok := args["filePath"].(string)
	if !ok || filePath == "" {
		return toolError("closeDiff: filePath must be a non-empty string"), nil
	}
	e := m.srv.diffs.startClosing(filePath)
	ctx, cancel := context.WithTimeout(ctx, m.srv.cfg.EditorTimeout)
	defer cancel()
	content, open, err := m.srv.editor.CloseDiff(ctx, filePath)
	if e != nil {
		m.srv.diffs.drop(filePath, e)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the editor did not close the diff within %v", m.srv.cfg.EditorTimeout)
		}
		return toolError(fmt.Sprintf("Failed to close diff for %s: %v", filePath, err)), nil
	}
	var res ide.CloseDiffResult
	if open {
		res.Content = &content
	}
	text, err := json.Marshal(res)
	if err != nil {
		return toolError(fmt.Sprintf("closeDiff: encode result: %v", err)), nil
	}
	return textResult(string(text)), nil
}
