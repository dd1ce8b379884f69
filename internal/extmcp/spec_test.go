package extmcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
)

// TestSpecs: the stdio entries are served, with their timeout, the
// settings' values and the widening Choose gives, whether or not the
// extension declares permissions (those are its tools'); so are remote
// ones (TestRemoteSpecs); tcp entries, gemkit itself and the servers
// Choose refuses are not, each with why.
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
   "remote": {"httpUrl": "https://mcp.example.com/mcp", "timeout": 1500},
   "tcp": {"tcp": "127.0.0.1:9000"},
   "self": {"command": "gemkit", "args": ["mcp", "--extension", "${extensionPath}"]}}}`,
			nil, []string{"local", "remote"}, map[string]string{
				"tcp":  "a tcp server, which Gemini CLI does not start either; gemkit serves stdio and remote (url, httpUrl) servers",
				"self": "it is gemkit itself"}},
		{"permissions", `{"name": "e", "version": "1", "settings": [{"name": "Key", "envVar": "API_KEY"}], "permissions": {"filesystem": {"read": "workspace"}},
  "mcpServers": {"local": {"command": "node", "args": ["${extensionPath}/s.js"], "timeout": 1500}}}`,
			func(*disclosure.Extension) Choice { return Choice{Widening: widened} }, []string{"local"}, nil},
		{"remote served with the stdio one", `{"name": "e", "version": "1", "settings": [{"name": "Key", "envVar": "API_KEY"}],
  "mcpServers": {"local": {"command": "node", "args": ["${extensionPath}/s.js"], "timeout": 1500}, "remote": {"url": "https://mcp.example.com/sse", "timeout": 1500}}}`,
			func(*disclosure.Extension) Choice { return Choice{Widening: widened} }, []string{"local", "remote"}, nil},
		{"refused", `{"name": "e", "version": "1",
  "mcpServers": {"local": {"command": "node", "args": ["s.js"]}, "remote": {"url": "https://mcp.example.com/sse"}}}`,
			func(*disclosure.Extension) Choice { return Choice{Why: "not switched"} },
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
				if sp.Timeout != 1500*time.Millisecond || sp.Settings["API_KEY"] != "k1" ||
					!sp.Remote() && sp.Args[0] != filepath.Join(dir, "s.js") && sp.Args[0] != dir+"/s.js" {
					t.Errorf("spec %+v", sp)
				}
			}
			if !slices.Equal(served, tc.served) {
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

// TestRemoteSpecs: a remote entry is served by its URL and transport as
// Gemini CLI 0.61 chooses them (httpUrl first; url with its type; url
// alone: Streamable HTTP, then SSE), with its headers as written; an
// entry whose URL or type gemkit cannot use is left out with why.
func TestRemoteSpecs(t *testing.T) {
	for _, tc := range []struct {
		entry, url, transport, skipped string
	}{
		{`{"httpUrl": "http://127.0.0.1:1/mcp", "url": "http://127.0.0.1:2/sse"}`, "http://127.0.0.1:1/mcp", TransportHTTP, ""},
		{`{"url": "http://127.0.0.1:2/sse", "type": "sse", "headers": {"Authorization": "Bearer $TOKEN"}}`, "http://127.0.0.1:2/sse", TransportSSE, ""},
		{`{"url": "https://mcp.example.com/mcp", "type": "http"}`, "https://mcp.example.com/mcp", TransportHTTP, ""},
		{`{"url": "https://mcp.example.com/mcp"}`, "https://mcp.example.com/mcp", "", ""},
		{`{"url": "https://mcp.example.com/mcp", "type": "ws"}`, "", "", `its type "ws" is neither "http" nor "sse"`},
		{`{"url": "file:///etc/passwd"}`, "", "", "its URL file:///etc/passwd is not an http or https URL"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "gemini-extension.json"), []byte(`{"name": "e", "version": "1", "mcpServers": {"r": `+tc.entry+`}}`), 0o644)
		set, err := disclosure.LoadDir(dir, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		specs, skipped := Specs(set, nil)
		if tc.skipped != "" {
			if len(specs) != 0 || len(skipped) != 1 || skipped[0].Reason != tc.skipped {
				t.Errorf("%s: specs %+v, skipped %+v; want skipped with %q", tc.entry, specs, skipped, tc.skipped)
			}
			continue
		}
		if len(specs) != 1 || !specs[0].Remote() || specs[0].URL != tc.url || specs[0].Transport != tc.transport {
			t.Errorf("%s: specs %+v, skipped %+v", tc.entry, specs, skipped)
			continue
		}
		if tc.transport == TransportSSE && specs[0].Headers["Authorization"] != "Bearer $TOKEN" {
			t.Errorf("%s: headers %v", tc.entry, specs[0].Headers)
		}
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
