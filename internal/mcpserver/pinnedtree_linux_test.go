package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
)

// tinyServer is an npm package's MCP server: one tool, hello, whose
// answer is the line GREETING.
const tinyServer = `#!/usr/bin/env node
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "tiny", version: "1" } } });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "hello", description: "Says hello.", inputSchema: { type: "object" } }] } });
    case "tools/call":
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "GREETING" }] } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no " + m.method } });
  }
});
`

// TestPinnedTreeChangedNotServed: a pinned package's tree changed after
// the person agreed to it (its server's program rewritten by a process
// of theirs) is not run by gemkit mcp, even when it starts the
// extension's server from its agreed copy, which vouches for the
// extension's folder and not for the tree: the client gets the server's
// placeholder saying why and the fix, and the changed program never
// answers. The start from the copy read the tree on trust, so the
// changed program answered.
func TestPinnedTreeChangedNotServed(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "installs a package from a loopback registry and starts its server in the sandbox")
	for _, unprivileged := range []bool{false, true} {
		name := "root"
		if unprivileged {
			name = "uid 65534"
		}
		t.Run(name, func(t *testing.T) { pinnedTreeChanged(t, unprivileged) })
	}
}

func pinnedTreeChanged(t *testing.T, unprivileged bool) {
	gemkittest.Interop(t) // node and npm
	f := newFixture(t)
	r := npmregistrytest.New(t, nil)
	r.Publish(map[string]string{
		"package.json": `{"name": "tiny-mcp", "version": "1.0.0", "bin": "server.js"}`,
		"server.js":    strings.Replace(tinyServer, "GREETING", "hello from the pinned tree", 1),
	})
	writeFile(t, filepath.Join(f.home, ".npmrc"), "registry="+r.URL+"\nfetch-retries=0\n", 0o600)
	src := filepath.Join(f.root, "src", "tiny")
	writeFile(t, filepath.Join(src, "gemini-extension.json"), `{"name": "tiny", "version": "1.0.0",
 "mcpServers": {"greeter": {"command": "npx", "args": ["-y", "tiny-mcp"]}}}`, 0o644)
	if unprivileged {
		asUnprivileged(t, f)
	}
	for _, args := range [][]string{{"extensions", "link", "--consent", src}, {"extensions", "sandbox", "tiny"}} {
		if out, err := f.gemkit(args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := func() (tools []mcpclient.Tool, answer string) {
		t.Helper()
		run, tools, end := f.startListed(t, ctx)
		defer end()
		for _, tl := range tools {
			if strings.HasPrefix(tl.Name, "tiny_") && !strings.HasSuffix(tl.Name, "_unavailable") {
				res, err := run.c.CallTool(ctx, tl.Name, map[string]any{})
				if err != nil {
					t.Fatalf("%s: %v\n%s", tl.Name, err, run.stderr.String())
				}
				answer += res.Text("\n")
			}
		}
		return tools, answer
	}
	if _, answer := call(); answer != "hello from the pinned tree" {
		t.Fatalf("the pinned server answers %q", answer)
	}
	// The start made the agreed copy, which the next start runs from.
	agreed := filepath.Join(f.home, ".local", "share", "gemkit", "agreed", "tiny")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if entries, _ := os.ReadDir(agreed); len(entries) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no agreed copy of tiny was made")
		}
	}
	c, err := extension.OpenStore(f.home).ServerChoice("tiny")
	if err != nil {
		t.Fatal(err)
	}
	program := filepath.Join(c.Packages["greeter"].Tree, filepath.FromSlash(c.Packages["greeter"].Program))
	if err := os.WriteFile(program, []byte(strings.Replace(tinyServer, "GREETING", "hello from the changed tree", 1)), 0o755); err != nil {
		t.Fatal(err)
	}
	tools, answer := call()
	if strings.Contains(answer, "changed tree") {
		t.Fatalf("gemkit mcp ran the changed tree: %q", answer)
	}
	var placeholder mcpclient.Tool
	for _, tl := range tools {
		if tl.Name == "tiny_greeter_unavailable" {
			placeholder = tl
		}
	}
	for _, want := range []string{"the package pinned for its server greeter (tiny-mcp 1.0.0) is not as you agreed to it: its files in", "changed since it was pinned", "gemkit extensions sandbox tiny"} {
		if !strings.Contains(placeholder.Description, want) {
			t.Errorf("the placeholder does not say %q: %q (tools %v)", want, placeholder.Description, toolNames(tools))
		}
	}
}

func toolNames(tools []mcpclient.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}
