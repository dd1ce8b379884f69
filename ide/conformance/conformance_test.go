package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/client"
	"github.com/gemkit/gemkit/ide/companion"
	"github.com/gemkit/gemkit/ide/discovery"
)

// flaws are the ways the deliberately broken companions below break the
// protocol; the zero value is a companion that does everything right.
type flaws struct {
	fileMode      os.FileMode // discovery file mode; 0 means 0600
	noAuth        bool        // accept requests without the token
	acceptOrigin  bool        // serve requests that carry an Origin header
	acceptHost    bool        // serve requests for any Host
	closeDiffText bool        // closeDiff answers the bare text, not JSON
	notifyOnClose bool        // closeDiff also sends ide/diffRejected
	nullInContext bool        // the initial context has selectedText: null
	noIDEInfo     bool        // the discovery file has no ideInfo
	get405        bool        // refuse the GET stream
	noCloseDiff   bool        // do not offer closeDiff
}

// brokenCompanion is a minimal companion written for these tests with
// net/http and hand-made JSON-RPC, so that each flaw can be switched on.
// It is a deliberate test double of a third-party companion, not ours.
type brokenCompanion struct {
	f     flaws
	token string
	port  int
	mu    sync.Mutex
	sess  map[string]chan []byte
	diffs map[string]string
}

func startBroken(t *testing.T, f flaws, dir, ws string) *brokenCompanion {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &brokenCompanion{f: f, token: "secret-" + randomHex(), port: ln.Addr().(*net.TCPAddr).Port,
		sess: map[string]chan []byte{}, diffs: map[string]string{}}
	srv := &http.Server{Handler: b}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	file := map[string]any{"port": b.port, "workspacePath": ws, "authToken": b.token}
	if !f.noIDEInfo {
		file["ideInfo"] = map[string]string{"name": "broken", "displayName": "Broken IDE"}
	}
	data, _ := json.Marshal(file)
	mode := f.fileMode
	if mode == 0 {
		mode = 0o600
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, discovery.FileName(os.Getpid(), b.port))
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *brokenCompanion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" && !b.f.acceptOrigin {
		http.Error(w, "origin", http.StatusForbidden)
		return
	}
	if !b.f.acceptHost && r.Host != "127.0.0.1:"+strconv.Itoa(b.port) && r.Host != "localhost:"+strconv.Itoa(b.port) {
		http.Error(w, "host", http.StatusForbidden)
		return
	}
	if !b.f.noAuth && r.Header.Get("Authorization") != "Bearer "+b.token {
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
		str := map[string]string{"type": "string"}
		tools := []any{map[string]any{"name": "openDiff", "inputSchema": map[string]any{"type": "object",
			"properties": map[string]any{"filePath": str, "newContent": str}, "required": []string{"filePath", "newContent"}}}}
		if !b.f.noCloseDiff {
			tools = append(tools, map[string]any{"name": "closeDiff", "inputSchema": map[string]any{"type": "object",
				"properties": map[string]any{"filePath": str, "suppressNotification": map[string]string{"type": "boolean"}}, "required": []string{"filePath"}}})
		}
		b.result(w, m.ID, map[string]any{"tools": tools})
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				FilePath   string `json:"filePath"`
				NewContent string `json:"newContent"`
			} `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		switch p.Name {
		case "openDiff":
			b.mu.Lock()
			b.diffs[p.Arguments.FilePath] = p.Arguments.NewContent
			b.mu.Unlock()
			b.result(w, m.ID, map[string]any{"content": []any{}})
		case "closeDiff":
			b.mu.Lock()
			content, ok := b.diffs[p.Arguments.FilePath]
			delete(b.diffs, p.Arguments.FilePath)
			b.mu.Unlock()
			text := `{"content":null}`
			if ok {
				j, _ := json.Marshal(map[string]string{"content": content})
				text = string(j)
				if b.f.closeDiffText {
					text = content
				}
				if b.f.notifyOnClose {
					n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": ide.MethodDiffRejected, "params": map[string]string{"filePath": p.Arguments.FilePath}})
					ch <- n
				}
			}
			b.result(w, m.ID, map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
		default:
			b.result(w, m.ID, map[string]any{"isError": true, "content": []any{map[string]string{"type": "text", "text": "no such tool"}}})
		}
	default:
		b.result(w, m.ID, map[string]any{})
	}
}

func (b *brokenCompanion) result(w http.ResponseWriter, id json.RawMessage, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
}

func (b *brokenCompanion) stream(w http.ResponseWriter, r *http.Request, ch chan []byte, known bool) {
	if b.f.get405 {
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
	if b.f.nullInContext {
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

func runCheck(t *testing.T, dir, ws string) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := Run(ctx, Options{Client: client.Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Getenv: func(k string) string {
		if k == "SSH_CONNECTION" {
			return "x"
		}
		return ""
	}}, Settle: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBrokenCompanions(t *testing.T) {
	tests := []struct {
		name   string
		flaws  flaws
		failed []string // the checks that must fail, and only they
	}{
		{"correct", flaws{}, nil},
		{"wrong mode", flaws{fileMode: 0o644}, []string{"discovery.mode"}},
		{"no auth", flaws{noAuth: true}, []string{"http.auth-missing", "http.auth-wrong"}},
		{"origin accepted", flaws{acceptOrigin: true}, []string{"http.origin"}},
		{"any host", flaws{acceptHost: true}, []string{"http.host"}},
		{"closeDiff text not JSON", flaws{closeDiffText: true}, []string{"diff.open-close"}},
		{"closeDiff also notifies", flaws{notifyOnClose: true}, []string{"diff.open-close"}},
		{"null in context", flaws{nullInContext: true}, []string{"mcp.initial-context"}},
		{"no ideInfo", flaws{noIDEInfo: true}, []string{"discovery.ideInfo", "discovery.fields"}},
		{"GET 405", flaws{get405: true}, []string{"mcp.initial-context", "client.context"}},
		{"no closeDiff", flaws{noCloseDiff: true}, []string{"mcp.tools", "client.diffing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			startBroken(t, tt.flaws, dir, ws)
			r := runCheck(t, dir, ws)
			want := map[string]bool{}
			for _, id := range tt.failed {
				want[id] = true
			}
			for _, res := range r.Results {
				if (res.Outcome == Fail) != want[res.ID] {
					t.Errorf("%s: %s %s", res.ID, res.Outcome, res.Detail)
				}
				delete(want, res.ID)
			}
			for id := range want {
				t.Errorf("check %s did not run", id)
			}
		})
	}
}

// testEditor answers the companion's diffs like an editor in which the
// person does nothing until asked.
type testEditor struct {
	mu    sync.Mutex
	diffs map[string]string
	shown chan string
}

func (e *testEditor) OpenDiff(_ context.Context, p, c string) error {
	e.mu.Lock()
	e.diffs[p] = c
	e.mu.Unlock()
	e.shown <- p
	return nil
}

func (e *testEditor) CloseDiff(_ context.Context, p string) (string, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.diffs[p]
	delete(e.diffs, p)
	return c, ok, nil
}

func (e *testEditor) FileWritten(context.Context, string) error { return nil }

// TestOurCompanionPasses runs every check, the interactive ones included,
// against our companion; the "person" accepts the first diff (with an
// edit) and rejects the second.
func TestOurCompanionPasses(t *testing.T) {
	root := t.TempDir()
	dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ed := &testEditor{diffs: map[string]string{}, shown: make(chan string, 8)}
	srv, err := companion.New(companion.Config{Workspace: []string{ws}, PID: os.Getpid(), Editor: ed, DiscoveryDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-srv.Ready()
	go func() {
		n := 0
		for p := range ed.shown {
			ed.mu.Lock()
			c := ed.diffs[p]
			ed.mu.Unlock()
			switch {
			case c == "gemkit ide check: accept me\n":
				srv.DiffAccepted(p, c+"edited\n")
			case c == "gemkit ide check: reject me\n":
				srv.DiffRejected(p)
			default:
				continue
			}
			if n++; n == 2 {
				return
			}
		}
	}()
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	r, err := Run(rctx, Options{Interactive: true, Client: client.Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Getenv: func(k string) string {
		if k == "SSH_CONNECTION" {
			return "x"
		}
		return ""
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		if res.Outcome != Pass {
			t.Errorf("%s: %s %s", res.ID, res.Outcome, res.Detail)
		}
	}
	if len(r.Results) < 20 {
		t.Errorf("only %d checks", len(r.Results))
	}
}

func TestContextProblems(t *testing.T) {
	tests := map[string]int{
		`{}`: 0,
		`{"workspaceState":{"openFiles":[{"path":"/a","timestamp":1,"isActive":true,"cursor":{"line":1,"character":1},"selectedText":"x"}],"isTrusted":false}}`: 0,
		`{"workspaceState":null}`:                                                                              1,
		`{"workspaceState":{"openFiles":null}}`:                                                                1,
		`{"workspaceState":{"openFiles":[{"path":"/a","timestamp":"1"}]}}`:                                     1,
		`{"workspaceState":{"openFiles":[{"timestamp":1,"cursor":null}]}}`:                                     2,
		`{"workspaceState":{"isTrusted":"yes","openFiles":[{"path":"/a","timestamp":1,"cursor":{"line":1}}]}}`: 2,
		`[]`: 1,
	}
	for in, n := range tests {
		if p := ContextProblems(json.RawMessage(in)); len(p) != n {
			t.Errorf("ContextProblems(%s) = %v; want %d problems", in, p, n)
		}
	}
}
