package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// TestSwitchedRemoteServer: a switched extension's remote server is
// served by plain `gemkit mcp` (no --extension-servers), as its stdio
// one is, to a client that is not Gemini CLI: not before the switch,
// from the switch on (a running gemkit mcp follows it), and no more
// after --off. Its tool says it is not sandboxed, and its answer comes
// from the test's loopback Streamable HTTP server, to which gemkit
// connects as a client named gemkit.
func TestSwitchedRemoteServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a stdio MCP server (node) through gemkit mcp: runs without -short, as in CI")
	}
	gemkittest.Interop(t) // node, for the stdio server
	f := newFixture(t)
	fixture := serverFixture(t)
	url, clients := remoteNotes(t)
	f.link(t, "mixed", `{"name": "mixed", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}, "farnotes": {"httpUrl": "`+url+`"}}}`,
		map[string]string{"fixture.mjs": fixture})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	c, stderr := run.c, run.stderr
	defer c.Close()
	served := func() map[string]mcpclient.Tool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, stderr.String())
		}
		out := map[string]mcpclient.Tool{}
		for _, tl := range tools {
			if strings.HasPrefix(tl.Name, "mixed_") {
				out[tl.Name] = tl
			}
		}
		return out
	}
	if got := served(); len(got) > 0 {
		t.Errorf("tools of an extension not switched are served: %v", got)
	}
	if out, err := f.gemkit("extensions", "sandbox", "mixed", "--allow-host", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	var tools map[string]mcpclient.Tool
	// Polls the tool list, as a client that heard list_changed would.
	if !gemkittest.Poll(20*time.Second, 100*time.Millisecond, func() bool {
		tools = served()
		return len(tools) > 0 && tools["mixed_far_lookup"].Name != "" && tools["mixed_ok"].Name != ""
	}) {
		t.Fatalf("the switched extension's servers are not both served: %v\n%s", tools, stderr.String())
	}
	if d := tools["mixed_far_lookup"].Description; !strings.Contains(d, "its MCP server farnotes, a remote one, which gemkit connects to, not sandboxed") {
		t.Errorf("the remote tool's description: %q", d)
	}
	if d := tools["mixed_ok"].Description; !strings.Contains(d, "its MCP server srv, in gemkit's sandbox") {
		t.Errorf("the stdio tool's description: %q", d)
	}
	if res, err := c.CallTool(ctx, "mixed_far_lookup", nil); err != nil || res.Text("") != remoteAnswer {
		t.Errorf("mixed_far_lookup: %+v %v\n%s", res, err, stderr.String())
	}
	if got := clients(); len(got) == 0 || strings.Join(got, ",") != strings.TrimSuffix(strings.Repeat("gemkit,", len(got)), ",") {
		t.Errorf("the remote server's clients were %v, want gemkit alone", got)
	}

	if out, err := f.gemkit("extensions", "sandbox", "mixed", "--off"); err != nil || !strings.Contains(out, "Removed farnotes, srv from mcp.excluded") {
		t.Fatalf("gemkit extensions sandbox --off: %v\n%s", err, out)
	}
	if !gemkittest.Poll(20*time.Second, 100*time.Millisecond, func() bool { return len(served()) == 0 }) {
		t.Errorf("the servers are still served after --off: %v", served())
	}
}
