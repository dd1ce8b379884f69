package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// The Pool answers the editor protocol's language requests as an editor
// plugin does, with the real gopls as its one client: each request as it
// goes on the wire, and the answer's members that matter (the raw
// result of the server, as it sent it; the reason a file has no client;
// the refusals of a request the protocol does not allow).
func TestPoolHandle(t *testing.T) {
	gopls := codeinteltest.Gopls(t)
	ws := codeinteltest.Fixture(t, "go")
	path := filepath.Dir(gopls) + string(filepath.ListSeparator) + os.Getenv("PATH")
	p, err := New(Options{Workspace: ws, Env: append(os.Environ(), "PATH="+path), LookPath: lookIn(path)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	main := filepath.Join(ws, "main.go")
	os.WriteFile(filepath.Join(ws, "notes.zig"), []byte("const x = 1;\n"), 0o644)
	broken := filepath.Join(ws, "broken.go")
	os.WriteFile(broken, []byte("package main\n\nfunc broken() { undefinedThing() }\n"), 0o644)
	at := func(line, char int) string {
		return `{"textDocument":{"uri":"file://` + main + `"},"position":{"line":` + itoa(line) + `,"character":` + itoa(char) + `}}`
	}
	cases := []struct {
		name, method, params string
		want                 []string // substrings of the answer, in order
		wantCode             int      // a refusal's code
	}{
		{"clients of a Go file", ide.MethodLSPClients, `{"path":"` + main + `"}`, []string{`{"clients":[{"name":"gopls"`}, 0},
		{"clients of the workspace", ide.MethodLSPClients, `{}`, []string{`"name":"gopls"`}, 0},
		{"no client, with the reason", ide.MethodLSPClients, `{"path":"` + filepath.Join(ws, "notes.zig") + `"}`,
			[]string{`{"clients":[],"reason":"gemkit knows no language server for .zig files; add one under the codeIntel object of gemkit's config file"}`}, 0},
		{"definition, gopls's answer as it sent it", ide.MethodLSPRequest, `{"path":"` + main + `","method":"textDocument/definition","params":` + at(14, 19) + `}`,
			[]string{`"clients":["gopls"]`, `"answers":[{"client":"gopls","result":[{"uri":"file://` + filepath.Join(ws, "greet", "greet.go") + `","range":{"start":{"line":15,"character":5}`}, 0},
		{"hover", ide.MethodLSPRequest, `{"path":"` + main + `","method":"textDocument/hover","params":` + at(14, 19) + `,"timeout":60000}`,
			[]string{`"client":"gopls","result":{"contents":`, "Greet greets name in English."}, 0},
		{"another client named", ide.MethodLSPRequest, `{"path":"` + main + `","client":"pyright","method":"textDocument/hover","params":` + at(14, 19) + `}`,
			[]string{`{"clients":["gopls"],"answers":[]}`}, 0},
		{"workspace symbols", ide.MethodLSPRequest, `{"method":"workspace/symbol","params":{"query":"Total"}}`, []string{`"clients":["gopls"]`, `"name":"Store.Total"`}, 0},
		{"no server for the file", ide.MethodLSPRequest, `{"path":"` + filepath.Join(ws, "notes.zig") + `","method":"textDocument/hover","params":{}}`,
			[]string{`{"clients":[],"answers":[],"reason":"gemkit knows no language server for .zig files`}, 0},
		{"diagnostics of a file, 1-based", ide.MethodDiagnostics, `{"path":"` + main + `","settle":3000}`, []string{`{"files":[{"path":"` + main + `","diagnostics":[]}]}`}, 0},
		{"diagnostics of a broken file, 1-based", ide.MethodDiagnostics, `{"path":"` + broken + `","settle":3000}`,
			[]string{`"message":"undefined: undefinedThing","severity":"error"`, `"range":{"start":{"line":3,"character":17},"end":{"line":3,"character":31}}`}, 0},
		{"changed", ide.MethodLSPChanged, `{"paths":["` + main + `"]}`, []string{`{}`}, 0},
		{"unsaved: none", ide.MethodLSPUnsaved, `{}`, []string{`{"files":[]}`}, 0},
		{"a method that changes code", ide.MethodLSPRequest, `{"path":"` + main + `","method":"textDocument/rename","params":{}}`, nil, jsonrpc.CodeInvalidParams},
		{"malformed params", ide.MethodLSPClients, `{"path":5}`, nil, jsonrpc.CodeInvalidParams},
		{"an unknown method", "lsp/format", `{}`, nil, jsonrpc.CodeMethodNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := p.Handle(context.Background(), c.method, json.RawMessage(c.params))
			if c.wantCode != 0 {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != c.wantCode {
					t.Fatalf("err = %v, want code %d", err, c.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res)
			rest := string(b)
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("answer %s\nlacks (in order) %s", b, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
