// Package testcompanion is a deliberately configurable IDE companion for
// tests: a minimal server written with net/http and hand-made JSON-RPC
// (no MCP SDK) whose protocol flaws can be switched on one by one, so that
// conformance checks and clients can be shown to notice each of them.
// It is a test double of a third-party companion; gemkit's own companion
// is companion.
package testcompanion

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// Flaws are the ways a Companion breaks the protocol; the zero value is a
// companion that does everything right.
type Flaws struct {
	FileMode      os.FileMode // discovery file mode; 0 means 0600
	NoAuth        bool        // accept requests without the token
	AcceptOrigin  bool        // serve requests that carry an Origin header
	AcceptHost    bool        // serve requests for any Host
	CloseDiffText bool        // closeDiff answers the bare text, not JSON
	NotifyOnClose bool        // closeDiff also sends ide/diffRejected
	NullInContext bool        // the initial context has selectedText: null
	NoIDEInfo     bool        // the discovery file has no ideInfo
	GET405        bool        // refuse the GET stream
	NoCloseDiff   bool        // do not offer closeDiff
	NoDiffTools   bool        // offer no diff tool (an editor that cannot show diffs)
	// Answer makes the companion answer every diff itself, on the GET
	// stream, right after openDiff: "accept" (ide/diffAccepted with the
	// proposal and " (edited)"), "reject" (ide/diffRejected) or "closed"
	// (the legacy ide/diffClosed). Empty: diffs wait for closeDiff.
	Answer string
}

// Companion is a minimal companion written with net/http and hand-made
// JSON-RPC, so that each flaw can be switched on. It is a deliberate test
// double of a third-party companion, not ours, and not built on an MCP SDK.
type Companion struct {
	srv   *http.Server
	path  string
	f     Flaws
	token string
	port  int
	mu    sync.Mutex
	sess  map[string]chan []byte
	diffs map[string]string
}

// Start serves on a loopback port and writes the discovery file in dir
// under this process's pid, for the workspace folder ws.
func Start(f Flaws, dir, ws string) (*Companion, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &Companion{f: f, token: "secret-" + randomHex(), port: ln.Addr().(*net.TCPAddr).Port,
		sess: map[string]chan []byte{}, diffs: map[string]string{}}
	b.srv = &http.Server{Handler: b}
	go b.srv.Serve(ln)
	file := map[string]any{"port": b.port, "workspacePath": ws, "authToken": b.token}
	if !f.NoIDEInfo {
		file["ideInfo"] = map[string]string{"name": "broken", "displayName": "Broken IDE"}
	}
	data, _ := json.Marshal(file)
	mode := f.FileMode
	if mode == 0 {
		mode = 0o600
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.srv.Close()
		return nil, err
	}
	b.path = filepath.Join(dir, discovery.FileName(os.Getpid(), b.port))
	if err := os.WriteFile(b.path, data, mode); err != nil {
		b.srv.Close()
		return nil, err
	}
	if err := os.Chmod(b.path, mode); err != nil {
		b.srv.Close()
		return nil, err
	}
	return b, nil
}

// Port is where the companion listens.
func (b *Companion) Port() int { return b.port }

// Close stops serving (ending every stream) and removes the discovery file.
func (b *Companion) Close() {
	b.srv.Close()
	os.Remove(b.path)
}

func (b *Companion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" && !b.f.AcceptOrigin {
		http.Error(w, "origin", http.StatusForbidden)
		return
	}
	if !b.f.AcceptHost && r.Host != "127.0.0.1:"+strconv.Itoa(b.port) && r.Host != "localhost:"+strconv.Itoa(b.port) {
		http.Error(w, "host", http.StatusForbidden)
		return
	}
	if !b.f.NoAuth && r.Header.Get("Authorization") != "Bearer "+b.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	sid := r.Header.Get(ide.HeaderSessionID)
	b.mu.Lock()
	ch, known := b.sess[sid]
	b.mu.Unlock()
	if r.Method == http.MethodGet {
		b.stream(w, r, ch, known)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if len(m.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method == "initialize" {
		sid = randomHex()
		b.mu.Lock()
		b.sess[sid] = make(chan []byte, 16)
		b.mu.Unlock()
		w.Header().Set(ide.HeaderSessionID, sid)
		b.result(w, m.ID, map[string]any{"protocolVersion": ide.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "broken-companion", "version": "0.0.1"}})
		return
	}
	if !known {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}`)
		return
	}
	switch m.Method {
	case "tools/list":
		b.result(w, m.ID, map[string]any{"tools": b.tools()})
	case "tools/call":
		b.call(w, m.ID, m.Params, ch)
	default:
		b.result(w, m.ID, map[string]any{})
	}
}

// tools is the companion's tools/list answer, with the diff tools its
// faults leave.
func (b *Companion) tools() []any {
	str := map[string]string{"type": "string"}
	tools := []any{map[string]any{"name": "openDiff", "inputSchema": map[string]any{"type": "object",
		"properties": map[string]any{"filePath": str, "newContent": str}, "required": []string{"filePath", "newContent"}}}}
	if b.f.NoDiffTools {
		return []any{}
	}
	if !b.f.NoCloseDiff {
		tools = append(tools, map[string]any{"name": "closeDiff", "inputSchema": map[string]any{"type": "object",
			"properties": map[string]any{"filePath": str, "suppressNotification": map[string]string{"type": "boolean"}}, "required": []string{"filePath"}}})
	}
	return tools
}

// call answers a tools/call of the request id: openDiff keeps the diff
// and answers it on the session's stream ch; closeDiff gives its content
// back, in the shape (and with the notice) the faults say.
func (b *Companion) call(w http.ResponseWriter, id, params json.RawMessage, ch chan []byte) {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			FilePath   string `json:"filePath"`
			NewContent string `json:"newContent"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	switch p.Name {
	case "openDiff":
		b.mu.Lock()
		b.diffs[p.Arguments.FilePath] = p.Arguments.NewContent
		b.mu.Unlock()
		b.result(w, id, map[string]any{"content": []any{}})
		b.answer(ch, p.Arguments.FilePath, p.Arguments.NewContent)
	case "closeDiff":
		b.mu.Lock()
		content, ok := b.diffs[p.Arguments.FilePath]
		delete(b.diffs, p.Arguments.FilePath)
		b.mu.Unlock()
		text := `{"content":null}`
		if ok {
			j, _ := json.Marshal(map[string]string{"content": content})
			text = string(j)
			if b.f.CloseDiffText {
				text = content
			}
			if b.f.NotifyOnClose {
				n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": ide.MethodDiffRejected, "params": map[string]string{"filePath": p.Arguments.FilePath}})
				ch <- n
			}
		}
		b.result(w, id, map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
	default:
		b.result(w, id, map[string]any{"isError": true, "content": []any{map[string]string{"type": "text", "text": "no such tool"}}})
	}
}

func (b *Companion) result(w http.ResponseWriter, id json.RawMessage, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
}

func (b *Companion) stream(w http.ResponseWriter, r *http.Request, ch chan []byte, known bool) {
	if b.f.GET405 {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if !known {
		http.Error(w, "no session", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	first := `{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{"workspaceState":{"openFiles":[],"isTrusted":true}}}`
	if b.f.NullInContext {
		first = `{"jsonrpc":"2.0","method":"ide/contextUpdate","params":{"workspaceState":{"openFiles":[{"path":"/x","timestamp":1,"isActive":true,"selectedText":null}]}}}`
	}
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", first)
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case n := <-ch:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", n)
			fl.Flush()
		}
	}
}

// answer sends the outcome of a diff on the session's GET stream when the
// companion answers diffs itself.
func (b *Companion) answer(ch chan []byte, path, content string) {
	var method string
	params := map[string]string{"filePath": path}
	switch b.f.Answer {
	case "accept":
		method, params["content"] = ide.MethodDiffAccepted, content+" (edited)"
	case "reject":
		method = ide.MethodDiffRejected
	case "closed":
		method = ide.MethodDiffClosed
	default:
		return
	}
	b.mu.Lock()
	delete(b.diffs, path)
	b.mu.Unlock()
	n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	ch <- n
}

func randomHex() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}
