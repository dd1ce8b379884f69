package companion

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// langEditor is a fakeEditor with language clients: it answers the
// language requests as scripted and records what it was asked.
type langEditor struct {
	*fakeEditor
	mu      sync.Mutex
	asked   []ide.LSPRequestParams
	changed [][]string
	// hang makes every language request wait for its context.
	hang bool
}

func (e *langEditor) LSPClients(ctx context.Context, path string) ([]ide.LSPClient, error) {
	if e.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return []ide.LSPClient{{Name: "gopls"}}, nil
}

func (e *langEditor) LSPRequest(ctx context.Context, p ide.LSPRequestParams) (ide.LSPRequestResult, error) {
	e.mu.Lock()
	e.asked = append(e.asked, p)
	e.mu.Unlock()
	return ide.LSPRequestResult{Clients: []string{"gopls"}, Answers: []ide.LSPAnswer{{Client: "gopls", Result: json.RawMessage(`null`)}}}, nil
}

func (e *langEditor) LSPChanged(_ context.Context, paths []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changed = append(e.changed, paths)
	return nil
}

func (e *langEditor) LSPUnsaved(context.Context) ([]ide.UnsavedFile, error) { return nil, nil }

func (e *langEditor) SettledDiagnostics(context.Context, string, time.Duration) ([]FileDiagnostics, error) {
	return nil, nil
}

func lspPost(t *testing.T, srv *Server, hdr map[string]string, body string) (int, string) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + srv.Token()}
	for k, v := range hdr {
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	resp, data := httpDo(t, srv, http.MethodPost, ide.LSPPath, h, body)
	return resp.StatusCode, string(data)
}

// The route keeps the companion's guard: token, Host and Origin as every
// other route, checked before the editor is asked.
func TestLSPRouteGuard(t *testing.T) {
	ed := &langEditor{fakeEditor: newFakeEditor()}
	srv := startServer(t, Config{Editor: ed})
	body := `{"jsonrpc":"2.0","id":1,"method":"lsp/clients","params":{}}`
	cases := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no token", map[string]string{"Authorization": ""}, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64)}, http.StatusUnauthorized},
		{"an Origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"a foreign Host", map[string]string{"Host": "evil.example:80"}, http.StatusForbidden},
		{"allowed", nil, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if status, data := lspPost(t, srv, c.hdr, body); status != c.want {
				t.Errorf("HTTP %d (%s), want %d", status, data, c.want)
			}
		})
	}
	if status, data := httpDo(t, srv, http.MethodGet, ide.LSPPath, map[string]string{"Authorization": "Bearer " + srv.Token()}, ""); status.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: HTTP %d %s", status.StatusCode, data)
	}
}

// An editor without language clients (the terminal front-end, an LSP
// client's front-end) answers "method not found": gemkit's own servers
// answer instead.
func TestLSPRouteNoClients(t *testing.T) {
	srv := startServer(t, Config{Editor: newFakeEditor()})
	status, data := lspPost(t, srv, nil, `{"jsonrpc":"2.0","id":1,"method":"lsp/request","params":{"method":"workspace/symbol","params":{"query":"x"}}}`)
	if status != http.StatusOK || !strings.Contains(data, `"code":-32601`) || !strings.Contains(data, "lends no language clients") {
		t.Errorf("HTTP %d %s", status, data)
	}
}

// A path that leads out of the workspace through a symbolic link is
// refused, as /write-file refuses it; the timeout given to the editor is
// bounded by the companion's own wait.
func TestLSPRoutePaths(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeFile(t, outside, "secret.go", "package secret\n")
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	ed := &langEditor{fakeEditor: newFakeEditor()}
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}, EditorTimeout: 5 * time.Second})
	status, data := lspPost(t, srv, nil, `{"jsonrpc":"2.0","id":1,"method":"lsp/request","params":{"path":"`+filepath.Join(ws, "link", "secret.go")+`","method":"textDocument/hover","params":{}}}`)
	if status != http.StatusOK || !strings.Contains(data, `"code":-32602`) || !strings.Contains(data, "outside the workspace") {
		t.Errorf("a path through a link out: HTTP %d %s", status, data)
	}
	_, data = lspPost(t, srv, nil, `{"jsonrpc":"2.0","id":2,"method":"lsp/request","params":{"path":"`+filepath.Join(ws, "a.go")+`","method":"textDocument/hover","params":{},"timeout":600000}}`)
	if !strings.Contains(data, `"answers":[{"client":"gopls","result":null}]`) {
		t.Errorf("answer %s", data)
	}
	ed.mu.Lock()
	asked := ed.asked
	ed.mu.Unlock()
	if len(asked) != 1 || asked[0].Timeout != 4000 {
		t.Errorf("the editor was asked %+v, want one request with a timeout of 4000 ms", asked)
	}
}

// An editor that does not answer is given up after the editor timeout.
func TestLSPRouteEditorTimeout(t *testing.T) {
	ed := &langEditor{fakeEditor: newFakeEditor(), hang: true}
	srv := startServer(t, Config{Editor: ed, EditorTimeout: 300 * time.Millisecond})
	start := time.Now()
	status, data := lspPost(t, srv, nil, `{"jsonrpc":"2.0","id":1,"method":"lsp/clients","params":{}}`)
	if status != http.StatusOK || !strings.Contains(data, "did not answer lsp/clients within 300ms") {
		t.Errorf("HTTP %d %s", status, data)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("answered after %v", d)
	}
}

// ownServers stands for gemkit's own language servers (Config.Diagnostics).
type ownServers struct{ asked []string }

func (o *ownServers) Diagnostics(_ context.Context, path string) ([]FileDiagnostics, error) {
	o.asked = append(o.asked, path)
	return []FileDiagnostics{{Path: path, Diagnostics: []Diagnostic{{Message: "from gemkit's own server", Severity: ide.SevError}}}}, nil
}

// clientsByExt is a langEditor with a client for Go files only, whose
// diagnostics are those it reports once settled.
type clientsByExt struct {
	langEditor
	settled []time.Duration
}

func (e *clientsByExt) LSPClients(_ context.Context, path string) ([]ide.LSPClient, error) {
	if path == "" || strings.HasSuffix(path, ".go") {
		return []ide.LSPClient{{Name: "gopls"}}, nil
	}
	return nil, nil
}

func (e *clientsByExt) SettledDiagnostics(_ context.Context, path string, settle time.Duration) ([]FileDiagnostics, error) {
	e.settled = append(e.settled, settle)
	return []FileDiagnostics{{Path: path, Diagnostics: []Diagnostic{{Message: "from the editor's gopls", Severity: ide.SevError}}}}, nil
}

func (e *clientsByExt) Diagnostics(_ context.Context, path string) ([]FileDiagnostics, error) {
	return []FileDiagnostics{{Path: path, Diagnostics: []Diagnostic{{Message: "what the editor shows", Severity: ide.SevInfo}}}}, nil
}

// Claude Code's diagnostics come from where gemkit's code-intelligence
// tools get theirs: the editor's client for a file it serves (settled on
// the buffer's current text), gemkit's own servers for a file it does not
// (with what the editor shows for it).
func TestDiagnosticsFromClients(t *testing.T) {
	ed := &clientsByExt{langEditor: langEditor{fakeEditor: newFakeEditor()}}
	own := &ownServers{}
	ws := t.TempDir()
	srv := startServer(t, Config{Editor: ed, Workspace: []string{ws}, Diagnostics: own})
	files, err := srv.Diagnostics(context.Background(), filepath.Join(ws, "main.go"))
	if err != nil || len(files) != 1 || files[0].Diagnostics[0].Message != "from the editor's gopls" || len(ed.settled) != 1 || ed.settled[0] <= 0 {
		t.Errorf("a Go file: %+v, %v (settled %v)", files, err, ed.settled)
	}
	// A file no client serves: what the editor shows (a linter, the
	// quickfix list) and what gemkit's own servers find.
	files, err = srv.Diagnostics(context.Background(), filepath.Join(ws, "notes.txt"))
	if err != nil || len(files) != 1 || len(files[0].Diagnostics) != 2 || files[0].Diagnostics[0].Message != "what the editor shows" ||
		files[0].Diagnostics[1].Message != "from gemkit's own server" || len(own.asked) != 1 {
		t.Errorf("a file no client serves: %+v, %v (own asked %v)", files, err, own.asked)
	}
}
