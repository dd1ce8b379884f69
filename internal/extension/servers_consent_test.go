package extension

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConsentTextServers: the consent text says, per MCP server, whether
// gemkit mcp runs it in its sandbox and what it can do there.
func TestConsentTextServers(t *testing.T) {
	servers := map[string]json.RawMessage{
		"local":  json.RawMessage(`{"command": "node", "args": ["server.js"]}`),
		"remote": json.RawMessage(`{"httpUrl": "https://mcp.example.com/mcp"}`),
		"self":   json.RawMessage(`{"command": "gemkit", "args": ["mcp", "--extension", "."]}`),
	}
	for _, tc := range []struct {
		name  string
		perms *Permissions
		want  map[string]bool // server: sandboxed
	}{
		{"no permissions", nil, map[string]bool{"local": true, "remote": false, "self": false}},
		{"permissions", &Permissions{}, map[string]bool{"local": false, "remote": false, "self": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Manifest{Name: "srv", Version: "1", Permissions: tc.perms, MCPServers: servers}
			text := strings.Join(ConsentText(&Extension{Manifest: m}, "Installing"), "\n")
			for name, sandboxed := range tc.want {
				if got := SandboxedServer(m, servers[name]); got != sandboxed {
					t.Errorf("SandboxedServer(%s) = %v, want %v", name, got, sandboxed)
				}
				var line string
				for _, l := range strings.Split(text, "\n") {
					if strings.HasPrefix(l, "  - "+name+" (") {
						line = l
					}
				}
				if sandboxed != strings.Contains(line, "gemkit mcp --extension-servers runs it in gemkit's sandbox, where it can "+SandboxedServerWords) ||
					!sandboxed != strings.HasSuffix(line, ": not sandboxed by gemkit") {
					t.Errorf("server %s: line %q", name, line)
				}
			}
		})
	}
}
