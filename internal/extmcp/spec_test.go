package extmcp

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
)

// TestSpecs: the stdio entries are served, with their timeout and the
// settings' values; remote entries, gemkit itself and the servers of an
// extension that declares permissions are not, each with why.
func TestSpecs(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		served         []string
		skipped        map[string]string
	}{
		{"stdio and remote", `{"name": "e", "version": "1",
  "settings": [{"name": "Key", "envVar": "API_KEY"}],
  "mcpServers": {
   "local": {"command": "node", "args": ["${extensionPath}/s.js"], "timeout": 1500, "cwd": "/elsewhere"},
   "remote": {"httpUrl": "https://mcp.example.com/mcp"},
   "self": {"command": "gemkit", "args": ["mcp", "--extension", "${extensionPath}"]}}}`,
			[]string{"local"}, map[string]string{"remote": "a remote server; gemkit serves stdio servers only", "self": "it is gemkit itself"}},
		{"permissions", `{"name": "e", "version": "1", "permissions": {"filesystem": {"read": "workspace"}},
  "mcpServers": {"local": {"command": "node", "args": ["s.js"]}}}`,
			nil, map[string]string{"local": "its extension declares permissions, and gemkit serves MCP servers under the default profile only (read the workspace, write its data folder, no network)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "gemini-extension.json"), []byte(tc.manifest), 0o644)
			os.WriteFile(filepath.Join(dir, ".env"), []byte("API_KEY=k1\n"), 0o600)
			set, err := disclosure.LoadDir(dir, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			specs, skipped := Specs(set)
			var served []string
			for _, sp := range specs {
				served = append(served, sp.Server)
				if sp.Timeout != 1500*time.Millisecond || sp.Settings["API_KEY"] != "k1" || sp.Args[0] != filepath.Join(dir, "s.js") && sp.Args[0] != dir+"/s.js" {
					t.Errorf("spec %+v", sp)
				}
			}
			if len(served) != len(tc.served) || len(served) > 0 && served[0] != tc.served[0] {
				t.Errorf("served %v, want %v", served, tc.served)
			}
			if len(skipped) != len(tc.skipped) {
				t.Errorf("skipped %v, want %v", skipped, tc.skipped)
			}
			for _, k := range skipped {
				if tc.skipped[k.Server] != k.Reason {
					t.Errorf("skipped %s: %q, want %q", k.Server, k.Reason, tc.skipped[k.Server])
				}
			}
		})
	}
}
