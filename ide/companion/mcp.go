package companion

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// mcpEndpoint serves /mcp. mcp-go handles the MCP messages (initialize,
// tools/list, tools/call, ping); this wrapper owns what mcp-go leaves weak
// for this use: strict session checks (400 with JSON-RPC -32000 for an
// unknown or missing session, as the official companion answers in gemini-cli
// 0.61.0 packages/vscode-ide-companion/src/ide-server.ts), session expiry
// (the real client never sends DELETE), and delivery of our notifications on
// each session's GET stream, with the current context on the first one.
type mcpEndpoint struct {
	srv  *Server
	mcp  *server.MCPServer
	http *server.StreamableHTTPServer
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
	m.mcp = server.NewMCPServer(ide.ServerName, s.cfg.Version, server.WithToolCapabilities(false),
		server.WithToolFilter(func(_ context.Context, tools []mcp.Tool) []mcp.Tool {
			if showsDiffs(s.editor) {
				return tools
			}
			return slices.DeleteFunc(tools, func(t mcp.Tool) bool {
				return t.Name == ide.ToolOpenDiff || t.Name == ide.ToolCloseDiff
			})
		}))
	m.mcp.AddTool(mcp.NewToolWithRawSchema(ide.ToolOpenDiff,
		"(IDE tool) Open a diff view in the editor to create or modify a file. Returns once the diff is shown; the outcome arrives as an ide/diffAccepted or ide/diffRejected notification.",
		json.RawMessage(openDiffSchema)), m.openDiff)
	m.mcp.AddTool(mcp.NewToolWithRawSchema(ide.ToolCloseDiff,
		"(IDE tool) Close the open diff view of a file and return the proposed side's current content as JSON {\"content\": ...}.",
		json.RawMessage(closeDiffSchema)), m.closeDiff)
	m.http = server.NewStreamableHTTPServer(m.mcp,
		server.WithSessionIdManager(sessionIDs{s.sess}),
		// Our guard checks Host exactly; mcp-go's own check is looser.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(s.log),
	)
	return m
}

// sessionIDs lets mcp-go mint session ids and check them against our
// registry.
type sessionIDs struct{ reg *sessionRegistry }

func (sessionIDs) Generate() string { return newSessionID() }

func (i sessionIDs) Validate(id string) (bool, error) {
	if i.reg.get(id) == nil {
		return false, fmt.Errorf("unknown session %q", id)
	}
	return false, nil
}

func (sessionIDs) Terminate(string) (bool, error) { return false, nil }

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
		m.http.ServeHTTP(w, r)
		m.srv.sess.remove(sess.id)
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
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	var peek struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params json.RawMessage `json:"params"`
	}
	var call struct {
		Name string `json:"name"`
	}
	peekErr := json.Unmarshal(body, &peek)
	_ = json.Unmarshal(peek.Params, &call)
	// Checked before mcp-go decodes the body: encoding/json would turn
	// each bad byte into U+FFFD, and a diff would be shown (and, once
	// accepted, written) changed.
	if textErr := jsonrpc.CheckJSONText(body); textErr != nil {
		m.srv.log.Warn("MCP request refused", "method", peek.Method, "tool", call.Name, "err", textErr)
		m.refuseText(w, peek.Method, call.Name, peek.ID, textErr)
		return
	}
	if peekErr == nil && peek.Method == string(mcp.MethodInitialize) {
		// A new session: note its id when mcp-go writes the response
		// headers, before the client can use it.
		m.http.ServeHTTP(&initWriter{ResponseWriter: w, reg: m.srv.sess, info: initializeInfo(peek.Params), conn: peerConnOf(r)}, r)
		return
	}
	sess := m.srv.sess.get(r.Header.Get(ide.HeaderSessionID))
	if sess == nil {
		writeBadSession(w)
		return
	}
	sess.begin()
	defer sess.end()
	m.http.ServeHTTP(w, r)
}

// serveGet runs mcp-go's GET handler on a writer our pump shares, so that
// notifications go out on the session's event stream in the order we
// choose, with nothing dropped.
func (m *mcpEndpoint) serveGet(w http.ResponseWriter, r *http.Request) {
	sess := m.srv.sess.get(r.Header.Get(ide.HeaderSessionID))
	if sess == nil {
		writeBadSession(w)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	st := newEventStream(w, cancel)

	sess.mu.Lock()
	sess.streams[st] = struct{}{}
	if !sess.gotGET {
		sess.gotGET = true
		sess.ctxPending = true
	}
	sess.mu.Unlock()
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
	m.http.ServeHTTP(st, r.WithContext(ctx))
	st.finish()
	cancel()
	<-pumped
}

// forget drops mcp-go's state of an expired session, as a DELETE would.
func (m *mcpEndpoint) forget(id string) {
	req, err := http.NewRequest(http.MethodDelete, ide.MCPPath, nil)
	if err != nil {
		return
	}
	req.Header.Set(ide.HeaderSessionID, id)
	req.Header.Set(ide.HeaderProtocolVersion, ide.ProtocolVersion)
	m.http.ServeHTTP(discardWriter{h: http.Header{}}, req)
}

func (m *mcpEndpoint) shutdown(ctx context.Context) {
	_ = m.http.Shutdown(ctx)
}

// initWriter registers the session id mcp-go puts on an initialize
// response.
type initWriter struct {
	http.ResponseWriter
	reg  *sessionRegistry
	info initInfo // what the client says of itself
	conn peerConn // its connection (Server.findPeer)
	seen bool
}

func (w *initWriter) WriteHeader(status int) {
	w.register()
	w.ResponseWriter.WriteHeader(status)
}

func (w *initWriter) Write(p []byte) (int, error) {
	w.register()
	return w.ResponseWriter.Write(p)
}

func (w *initWriter) Flush() {
	w.register()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *initWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *initWriter) register() {
	if w.seen {
		return
	}
	w.seen = true
	if id := w.Header().Get(ide.HeaderSessionID); id != "" {
		w.reg.add(id, w.info, w.conn)
	}
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header       { return d.h }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

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
	if method == string(mcp.MethodToolsCall) {
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

func (m *mcpEndpoint) openDiff(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
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
	session := ""
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		session = cs.SessionID()
	}
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
	return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
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

func (m *mcpEndpoint) closeDiff(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	filePath, ok := req.GetArguments()["filePath"].(string)
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
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}}, nil
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(msg)}, IsError: true}
}
