package mcpserver_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// TestExtensionServersRemoteEverything: the real server-everything in
// its Streamable HTTP mode (node dist/index.js streamableHttp, on a port
// of the test's), an extension's remote server, beside the same server
// on stdio in the sandbox for another extension, through `gemkit mcp
// --extension-servers`: the remote one's tools, prompts and log reach
// the client; the URIs both servers list are listed in the gemkit-mcp
// form, each read from its own server, and a URI both servers'
// templates match is refused with the words that name the way out.
func TestExtensionServersRemoteEverything(t *testing.T) {
	t.Parallel()
	node, _ := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := newFixture(t)
	realDir := filepath.Join(f.root, "src", "realmcp")
	copyServers(t, realDir)
	f.link(t, "realmcp", everythingManifest, nil)

	// server-everything listens on every interface of the port it is
	// given; the port is a free loopback one, and gemkit reaches it on
	// 127.0.0.1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := exec.Command(node, filepath.Join(realDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "streamableHttp")
	srv.Env = append(f.env(), "PORT="+strconv.Itoa(port))
	var srvErr gemkittest.Output
	srv.Stderr = &srvErr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if !gemkittest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("server-everything does not listen on %s:\n%s", addr, srvErr.String())
	}
	f.link(t, "farmcp", fmt.Sprintf(`{"name": "farmcp", "version": "1.0.0", "mcpServers": {"everything": {"httpUrl": "http://%s/mcp"}}}`, addr), nil)
	f.allowHosts(t, "farmcp", "http://"+addr)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ev := newEvents()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1", ProtocolVersion: "2025-06-18", Events: ev.add}, "--extension-servers")
	c, stderr := run.c, run.stderr
	defer c.Close()

	if res, err := c.CallTool(ctx, "farmcp_echo", map[string]any{"message": "over streamable http"}); err != nil || !strings.Contains(res.Text(""), "over streamable http") {
		t.Fatalf("farmcp_echo: %+v %v\n%s", res, err, stderr.String())
	}
	prompts, err := c.ListPrompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range prompts {
		names[p.ID] = true
	}
	if !names["farmcp_args-prompt"] || !names["realmcp_args-prompt"] {
		t.Errorf("prompts/list: %v", names)
	}
	if raw, err := c.GetPromptRaw(ctx, "farmcp_args-prompt", map[string]string{"city": "Nantes"}); err != nil || !strings.Contains(string(raw), "Nantes") {
		t.Errorf("prompts/get farmcp_args-prompt: %s %v", raw, err)
	}

	resources, err := c.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]bool{}
	for _, r := range resources {
		uris[r.ID] = true
	}
	const doc = "demo://resource/static/document/features.md"
	for _, ext := range []string{"realmcp", "farmcp"} {
		q := "gemkit-mcp://" + ext + "/everything/" + doc
		if !uris[q] {
			t.Errorf("resources/list lacks %s: %v", q, uris)
		}
		if raw, err := c.ReadResourceRaw(ctx, q); err != nil || !strings.Contains(string(raw), "Everything Server") {
			t.Errorf("resources/read %s: %.200s %v", q, raw, err)
		}
	}
	if uris[doc] {
		t.Errorf("%s, which both servers list, is listed as it is", doc)
	}
	if _, err := c.ReadResourceRaw(ctx, "demo://resource/dynamic/text/3"); err == nil ||
		!strings.Contains(err.Error(), "read it as gemkit-mcp://EXTENSION/SERVER/demo://resource/dynamic/text/3") {
		t.Errorf("a URI both servers' templates match: %v", err)
	}

	// The remote server's log, named after its extension and server.
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool(ctx, "farmcp_toggle-simulated-logging", nil); err != nil || res.IsError {
		t.Fatalf("farmcp_toggle-simulated-logging: %+v %v", res, err)
	}
	if !ev.wait(15*time.Second, 0, "notifications/message", `"logger":"farmcp/everything"`) {
		t.Errorf("no log line of the remote server-everything reached the client:\n%s", ev)
	}
}
