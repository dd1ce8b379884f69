package lspsource

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// loading is a set of clients whose one server, gopls, finds symbols (or
// none) and may have reported that it could not load the workspace.
type loading struct {
	loadErr string
	symbols string
}

func (l *loading) Call(_ context.Context, method string, _, result any) error {
	var res any
	switch method {
	case ide.MethodLSPClients:
		res = ide.LSPClientsResult{Clients: []ide.LSPClient{{Name: "gopls", LoadError: l.loadErr}}}
	case ide.MethodLSPRequest:
		res = ide.LSPRequestResult{Clients: []string{"gopls"}, Answers: []ide.LSPAnswer{{Client: "gopls", Result: json.RawMessage(l.symbols)}}}
	default:
		return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, result)
}

// TestLoadError: a name not found, when the clients' server reported that
// it could not load the workspace, is answered with its error and what
// to do, through lsp/clients' loadError.
func TestLoadError(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "command.go"), []byte("package cobra\n\ntype Command struct{}\n\nfunc (c *Command) Execute() error { return nil }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const missing = "go: github.com/spf13/pflag@v1.0.9: module lookup disabled by GOPROXY=off; run `go mod download` in /ws (gemkit's servers have no network: gopls reads the modules in /home/u/go/pkg/mod)"
	found := `[{"name":"Command.Execute","kind":6,"containerName":"github.com/spf13/cobra","location":{"uri":"` + "file://" + filepath.ToSlash(filepath.Join(ws, "command.go")) + `","range":{"start":{"line":4,"character":18},"end":{"line":4,"character":25}}}}]`
	for _, tt := range []struct {
		name    string
		clients *loading
		editor  bool
		want    string
	}{
		{"gemkit's gopls could not load", &loading{loadErr: missing, symbols: "null"}, false,
			"no declaration named Command.Execute found: gopls could not load the workspace: " + missing},
		{"the editor's gopls could not load", &loading{loadErr: "go: errors parsing go.mod", symbols: "[]"}, true,
			"no declaration named Command.Execute found: Neovim's gopls could not load the workspace: go: errors parsing go.mod"},
		{"loaded, and not declared", &loading{symbols: "null"}, false,
			"no declaration named Command.Execute in the workspace"},
		{"declared all the same", &loading{loadErr: missing, symbols: found}, false,
			"command.go:5:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := New(nil, &Clients{Conn: tt.clients, Confined: true})
			if tt.editor {
				src = New(func(context.Context) *Clients { return &Clients{Conn: tt.clients, Name: "Neovim"} }, nil)
			}
			tools, err := codeintel.NewTools(src, ws, codeintel.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tools.Close()
			got, _ := tools.Call(context.Background(), codeintel.ToolDefinition, json.RawMessage(`{"symbol":"Command.Execute"}`))
			if got != tt.want && !(tt.clients.symbols == found && strings.Contains(got, tt.want)) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
