package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
)

// envServer is an npm package's MCP server with one tool, env, whose
// answer is the environment the server runs with, as JSON.
const envServer = `#!/usr/bin/env node
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "env", version: "1" } } });
    case "tools/list":
      return send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "env", description: "Says its environment.", inputSchema: { type: "object" } }] } });
    case "tools/call":
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: JSON.stringify(process.env) }] } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no " + m.method } });
  }
});
`

// TestPinnedThroughPersonsNetwork: a package pinned from a registry
// that the person's machine reaches only through its proxy and trusts
// only through NODE_EXTRA_CA_CERTS (a company's mirror over TLS, as
// dynatrace-mcp-server's users have) is pinned by the switch, which
// names both, and its server runs from the tree through gemkit mcp with
// none of them: neither the CA's file nor the person's proxy nor npm's
// settings are in its environment. As root and as uid 65534.
func TestPinnedThroughPersonsNetwork(t *testing.T) {
	gemkittest.SkipShort(t, "installs a package from a loopback registry over TLS, through a loopback proxy, and starts its server in the sandbox")
	for _, unprivileged := range []bool{false, true} {
		name := "root"
		if unprivileged {
			name = "uid 65534"
		}
		t.Run(name, func(t *testing.T) { pinnedThroughPersonsNetwork(t, unprivileged) })
	}
}

func pinnedThroughPersonsNetwork(t *testing.T, unprivileged bool) {
	gemkittest.Interop(t) // node and npm
	f := newFixture(t)
	r := npmregistrytest.NewTLS(t, nil, "registry.corp.test")
	r.Publish(map[string]string{
		"package.json": `{"name": "env-mcp", "version": "1.0.0", "bin": "server.js"}`,
		"server.js":    envServer,
	})
	px := npmregistrytest.NewProxy(t, "ann", "pr0xy-secret")
	px.Route(r.Host, r.Addr)
	ca := filepath.Join(f.root, "etc", "company-ca.pem")
	writeFile(t, ca, string(r.CA), 0o644)
	// This machine's own global npmrc may name a cafile, which would
	// replace NODE_EXTRA_CA_CERTS (for npx too): an empty one instead.
	global := filepath.Join(f.root, "etc", "npmrc")
	writeFile(t, global, "", 0o644)
	writeFile(t, filepath.Join(f.home, ".npmrc"), "registry="+r.URL+"\nfetch-retries=0\n", 0o600)
	t.Setenv("NODE_EXTRA_CA_CERTS", ca)
	t.Setenv("HTTPS_PROXY", px.URL)
	t.Setenv("NPM_CONFIG_GLOBALCONFIG", global)
	src := filepath.Join(f.root, "src", "envy")
	writeFile(t, filepath.Join(src, "gemini-extension.json"), `{"name": "envy", "version": "1.0.0",
 "mcpServers": {"env": {"command": "npx", "args": ["-y", "env-mcp"]}}}`, 0o644)
	if unprivileged {
		asUnprivileged(t, f)
	}
	if out, err := f.gemkit("extensions", "link", "--consent", src); err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	out, err := f.gemkit("extensions", "sandbox", "envy")
	shown := strings.Replace(px.URL, "ann:pr0xy-secret@", "", 1)
	if err != nil || !strings.Contains(out, "- env (npx -y env-mcp): env-mcp 1.0.0 installed") ||
		!strings.Contains(out, "fetched as your npx would: through your proxy "+shown+" ($HTTPS_PROXY), trusting the certificates in "+ca+" (NODE_EXTRA_CA_CERTS) beside node's own; none of these settings is given to the server") {
		t.Fatalf("the switch: %v\n%s", err, out)
	}
	if strings.Contains(out, "pr0xy-secret") {
		t.Errorf("the switch shows the proxy's password:\n%s", out)
	}
	if len(px.Asked()) == 0 {
		t.Fatal("the install did not go through the person's proxy")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, tools, end := f.startListed(t, ctx)
	defer end()
	var answer string
	for _, tl := range tools {
		if tl.Name == "envy_env" {
			res, err := run.c.CallTool(ctx, tl.Name, map[string]any{})
			if err != nil {
				t.Fatalf("%s: %v\n%s", tl.Name, err, run.stderr.String())
			}
			answer = res.Text("")
		}
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(answer), &env); err != nil {
		t.Fatalf("the server's environment %q (tools %v): %v\n%s", answer, toolNames(tools), err, run.stderr.String())
	}
	proxyAddr := strings.TrimPrefix(shown, "http://")
	for k, v := range env {
		lk := strings.ToLower(k)
		if k == "NODE_EXTRA_CA_CERTS" || strings.HasPrefix(lk, "npm_config_") || strings.Contains(v, "company-ca") || strings.Contains(v, proxyAddr) ||
			strings.Contains(v, "pr0xy-secret") || strings.Contains(v, "registry.corp.test") || strings.Contains(v, filepath.Join(f.root, "etc")) {
			t.Errorf("the server's environment holds the install's %s=%s", k, v)
		}
	}
	if _, ok := env["HOME"]; !ok {
		t.Errorf("the server's environment %v has no HOME: not the server's", env)
	}
	if _, err := os.Stat(ca); err != nil {
		t.Errorf("the person's CA file is gone: %v", err)
	}
}
