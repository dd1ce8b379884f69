package claudeplugin

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadPart reads a plugin's LSP servers and monitors from their
// default files and from what plugin.json names, and refuses what is
// not there, a socket server and a file Claude Code cannot read.
func TestReadPart(t *testing.T) {
	for _, c := range []struct {
		name        string
		files       map[string]string
		kind, part  string
		want        Part
		errContains string
	}{
		{"lsp", map[string]string{".lsp.json": `{"go": {"command": "gopls", "args": ["serve"], "env": {"A": "1"}, "extensionToLanguage": {".go": "go"}}}`},
			KindLSP, "go", Part{Kind: KindLSP, Name: "go", Command: "gopls", Args: []string{"serve"}, Env: map[string]string{"A": "1"}}, ""},
		{"lsp named by plugin.json", map[string]string{".claude-plugin/plugin.json": `{"lspServers": "./conf/lsp.json"}`, "conf/lsp.json": `{"x": {"command": "x-ls"}}`},
			KindLSP, "x", Part{Kind: KindLSP, Name: "x", Command: "x-ls"}, ""},
		{"lsp inline", map[string]string{".claude-plugin/plugin.json": `{"lspServers": {"x": {"command": "inline"}}}`, ".lsp.json": `{"x": {"command": "file"}}`},
			KindLSP, "x", Part{Kind: KindLSP, Name: "x", Command: "inline"}, ""},
		{"socket", map[string]string{".lsp.json": `{"s": {"command": "s", "transport": "socket"}}`}, KindLSP, "s", Part{}, "over socket"},
		{"no lsp", map[string]string{}, KindLSP, "go", Part{}, "has no LSP servers"},
		{"not JSON", map[string]string{".lsp.json": `{"go": {"command": "gopls",}}`}, KindLSP, "go", Part{}, ".lsp.json"},
		{"monitor", map[string]string{"monitors/monitors.json": `[{"name": "m", "command": "tail -f log", "description": "d", "when": "always"}]`},
			KindMonitor, "m", Part{Kind: KindMonitor, Name: "m", Command: "tail -f log"}, ""},
		{"experimental monitors first", map[string]string{".claude-plugin/plugin.json": `{"experimental": {"monitors": [{"name": "m", "command": "exp"}]}}`,
			"monitors/monitors.json": `[{"name": "m", "command": "file"}]`}, KindMonitor, "m", Part{Kind: KindMonitor, Name: "m", Command: "exp"}, ""},
		{"two monitors of a name", map[string]string{"monitors/monitors.json": `[{"name": "m", "command": "a"}, {"name": "m", "command": "b"}]`}, KindMonitor, "m", Part{}, "2 monitors"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range c.files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadPart(dir, c.kind, c.part)
			if c.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), c.errContains) {
					t.Errorf("err %v, want one with %q", err, c.errContains)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
