package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestAgentPluginMCPChangedAfterConsent: consent to a plugin binds its
// mcp.json as well as its plugin.json. A linked plugin's mcp.json
// changed after consent (another argument for its server) does not run:
// gemkit mcp, which had served the server from its copy of the plugin
// as agreed to, refuses it until the person agrees again.
func TestAgentPluginMCPChangedAfterConsent(t *testing.T) {
	t.Parallel()
	gemkittest.Interop(t) // node, for the server
	f := newFixture(t)
	src := pluginSource(t, filepath.Join(f.root, "src", "hello-plugin"), nil)
	if out, err := f.gemkit("extensions", "link", "--consent", src); err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	c := startClient(t, f, nil, "stdio", f.bin, "mcp", "--workspace", f.ws)
	if r := c.call(map[string]any{"op": "callTool", "name": "hello-plugin_probe"}); r.IsError || strings.Contains(r.text(), "--changed") {
		t.Fatalf("before the change: %s", r.text())
	}
	// The copy as agreed to is made once a start has passed the check
	// of the folder, after it: from then on the server runs from it.
	copies := filepath.Join(gemkitdir.Agreed(f.home), "hello-plugin")
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { m, _ := filepath.Glob(filepath.Join(copies, "*", "plugin.json")); return len(m) > 0 }) {
		t.Fatalf("no copy as agreed to in %s", copies)
	}
	writeFile(t, filepath.Join(src, "mcp.json"), strings.Replace(helloMCPJSON, `"${PLUGIN_ROOT}/server.mjs"]`, `"${PLUGIN_ROOT}/server.mjs", "--changed"]`, 1), 0o644)
	c = startClient(t, f, nil, "stdio", f.bin, "mcp", "--workspace", f.ws)
	r := c.call(map[string]any{"op": "callTool", "name": "hello-plugin_probe"})
	if !r.IsError || strings.Contains(r.text(), "--changed") || !strings.Contains(r.text(), "you agreed to the extension hello-plugin as it was, not as it is now") {
		t.Errorf("after mcp.json changed: %s", r.text())
	}
}
