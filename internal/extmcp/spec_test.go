package extmcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestPinnedSpecs: a package runner's server runs from the tree its
// package was pinned in (the package's program, with the line's
// arguments, the tree read-only beside its runtime); without a pin for
// what the manifest asks now, or with a line that cannot be pinned, it
// is not started, with why and the command that pins it.
func TestPinnedSpecs(t *testing.T) {
	pin := extension.Pin{Runner: "npx", Request: "@upstash/context7-mcp", Package: "@upstash/context7-mcp", Version: "4.1.1",
		Tree: "/pins/c7", Program: "node_modules/@upstash/context7-mcp/dist/index.js"}
	for _, tc := range []struct {
		name, command string
		args          []string
		pins          map[string]extension.Pin
		cmd           string
		runArgs       []string
		unpinned      string
	}{
		{"pinned", "npx", []string{"-y", "@upstash/context7-mcp", "--api-key", "K"}, map[string]extension.Pin{"s": pin},
			"/pins/c7/node_modules/@upstash/context7-mcp/dist/index.js", []string{"--api-key", "K"}, ""},
		{"not pinned", "npx", []string{"-y", "@upstash/context7-mcp"}, nil,
			"npx", []string{"-y", "@upstash/context7-mcp"}, "its command (npx -y @upstash/context7-mcp) fetches @upstash/context7-mcp from the registry, and gemkit has not pinned it: `gemkit extensions sandbox e`"},
		{"asks for another version", "npx", []string{"-y", "@upstash/context7-mcp@5.0.0"}, map[string]extension.Pin{"s": pin},
			"npx", []string{"-y", "@upstash/context7-mcp@5.0.0"}, "its manifest now asks for @upstash/context7-mcp@5.0.0 (npx), not @upstash/context7-mcp as pinned"},
		{"cannot be pinned", "npx", []string{"-c", "context7-mcp"}, nil,
			"npx", []string{"-c", "context7-mcp"}, "its npx command line cannot be pinned: -c: it runs a shell command string"},
		{"PyPI", "uvx", []string{"mcp-server-fetch"}, nil,
			"uvx", []string{"mcp-server-fetch"}, "uvx fetches mcp-server-fetch from PyPI at each start; gemkit pins npm packages only so far"},
		{"no runner", "node", []string{"s.js"}, nil, "node", []string{"s.js"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := Spec{Extension: "e", Server: "s", Command: tc.command, Args: tc.args}
			pinned(&sp, "s", tc.pins)
			if sp.Command != tc.cmd || !slices.Equal(sp.Args, tc.runArgs) {
				t.Errorf("runs %s %q, want %s %q", sp.Command, sp.Args, tc.cmd, tc.runArgs)
			}
			if tc.unpinned == "" && sp.Unpinned != "" || !strings.HasPrefix(sp.Unpinned, tc.unpinned) {
				t.Errorf("Unpinned = %q, want it to begin %q", sp.Unpinned, tc.unpinned)
			}
			if (sp.Tree != "") != (tc.name == "pinned") {
				t.Errorf("Tree = %q", sp.Tree)
			}
		})
	}
	m := NewManager(Config{})
	defer m.Close()
	sp := Spec{Extension: "e", Server: "s", Command: "npx", Args: []string{"-y", "pkg"}}
	pinned(&sp, "s", nil)
	m.Sync([]Spec{sp})
	if _, err := m.servers[sp.Key()].ensure(context.Background()); err == nil || !strings.Contains(err.Error(), "extension e's MCP server s is not started: its command (npx -y pkg) fetches pkg") {
		t.Errorf("an unpinned server's start: %v", err)
	}
}
