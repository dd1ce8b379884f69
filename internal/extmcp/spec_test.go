package extmcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
)

// TestSpecs: the stdio entries are served, with their timeout, the
// settings' values and the widening Choose gives, whether or not the
// extension declares permissions (those are its tools'); remote entries,
// gemkit itself and the servers Choose refuses are not, each with why.
func TestSpecs(t *testing.T) {
	widened := extension.Widening{Hosts: []string{"api.example.com"}}
	for _, tc := range []struct {
		name, manifest string
		choose         Choose
		served         []string
		skipped        map[string]string
	}{
		{"stdio and remote", `{"name": "e", "version": "1",
  "settings": [{"name": "Key", "envVar": "API_KEY"}],
  "mcpServers": {
   "local": {"command": "node", "args": ["${extensionPath}/s.js"], "timeout": 1500, "cwd": "/elsewhere"},
   "remote": {"httpUrl": "https://mcp.example.com/mcp"},
   "self": {"command": "gemkit", "args": ["mcp", "--extension", "${extensionPath}"]}}}`,
			nil, []string{"local"}, map[string]string{"remote": "a remote server; gemkit serves stdio servers only", "self": "it is gemkit itself"}},
		{"permissions", `{"name": "e", "version": "1", "settings": [{"name": "Key", "envVar": "API_KEY"}], "permissions": {"filesystem": {"read": "workspace"}},
  "mcpServers": {"local": {"command": "node", "args": ["${extensionPath}/s.js"], "timeout": 1500}}}`,
			func(*disclosure.Extension) (extension.Widening, func() error, string) { return widened, nil, "" }, []string{"local"}, nil},
		{"refused", `{"name": "e", "version": "1",
  "mcpServers": {"local": {"command": "node", "args": ["s.js"]}, "remote": {"url": "https://mcp.example.com/sse"}}}`,
			func(*disclosure.Extension) (extension.Widening, func() error, string) {
				return extension.Widening{}, nil, "not switched"
			},
			nil, map[string]string{"local": "not switched", "remote": "not switched"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "gemini-extension.json"), []byte(tc.manifest), 0o644)
			os.WriteFile(filepath.Join(dir, ".env"), []byte("API_KEY=k1\n"), 0o600)
			set, err := disclosure.LoadDir(dir, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			specs, skipped := Specs(set, tc.choose)
			var served []string
			for _, sp := range specs {
				served = append(served, sp.Server)
				if tc.choose != nil && len(sp.Widening.Hosts) != 1 {
					t.Errorf("spec %s: widening %+v", sp.Server, sp.Widening)
				}
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

// TestAllowedGate: a server whose Allowed says no is not started, and
// the failure says which server and why, in words.
func TestAllowedGate(t *testing.T) {
	m := NewManager(Config{Workspace: t.TempDir(), Environ: []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}})
	defer m.Close()
	m.Sync([]Spec{{Extension: "e", Server: "s", Dir: t.TempDir(), Command: "/bin/sh",
		Allowed: func() error { return errors.New("you have not agreed to the extension e as it is now") }}})
	tools, failed := m.Tools(context.Background())
	if len(tools) != 0 || len(failed) != 1 ||
		failed[0].Err.Error() != "extension e's MCP server s is not started: you have not agreed to the extension e as it is now" {
		t.Errorf("Tools = %v, %v", tools, failed)
	}
}
