package mcpserver_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// TestExtensionServerRefusals: through the real gemkit binary, a
// sandboxed server refused a loopback server of the test's (no host
// allowed) is reported to the person on gemkit mcp's stderr and by
// extensions doctor, with the command that allows it, and to the model
// in the call's result; after that command, run as the person runs it,
// the server reaches the host, without a restart of gemkit mcp.
func TestExtensionServerRefusals(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts gemkit mcp and a Node server in the sandbox: runs without -short, as in CI")
	}
	f := newFixture(t)
	fixture := serverFixture(t)
	f.link(t, "netext", `{"name": "netext", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`, map[string]string{"fixture.mjs": fixture})
	if out, err := f.gemkit("extensions", "sandbox", "netext"); err != nil {
		t.Fatalf("extensions sandbox: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	target := ln.Addr().String()
	allow := "gemkit extensions sandbox netext --allow-host " + target

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	c, stderr := run.c, run.stderr
	defer c.Close()
	if _, err := c.ListTools(ctx); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	get := func() (string, bool) {
		res, err := c.CallTool(ctx, "netext_proxied", map[string]any{"url": "http://" + target + "/"})
		if err != nil {
			t.Fatalf("netext_proxied: %v\n%s", err, stderr.String())
		}
		return res.Text("\n"), res.IsError
	}
	text, isErr := get()
	if !isErr || strings.Contains(text, "reached") || !strings.Contains(text, "gemkit's sandbox refused this MCP server during the call: a connection to "+target) || !strings.Contains(text, allow) {
		t.Errorf("the model is not told of the refusal: %v %q", isErr, text)
	}
	person := "extension netext's MCP server srv was refused a connection to " + target + " (named in the call's arguments) (host not in network.allowedHosts); to allow it: " + allow
	// gemkit mcp's stderr reaches the buffer through a pipe, maybe after
	// the call's answer.
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(stderr.String(), person) }) {
		t.Errorf("gemkit mcp's stderr does not say %q:\n%s", person, stderr.String())
	}
	// A write the server says was refused, in the workspace it may not
	// write, is told with the command that allows it too.
	res, err := c.CallTool(ctx, "netext_write", map[string]any{"path": filepath.Join(f.ws, "made.txt")})
	if err != nil || !res.IsError || !strings.Contains(res.Text("\n"), "a write to "+filepath.Join(f.ws, "made.txt")+". The person (not the model) can allow it with: gemkit extensions sandbox netext --allow-write workspace") {
		t.Errorf("netext_write: %+v %v", res, err)
	}
	// And whatever the call's arguments say (the sixth newcomer tour's
	// case): Node's recursive mkdir of a folder of its own, which Node
	// 20 fails with ENOENT, naming no path the call gave.
	res, err = c.CallTool(ctx, "netext_mkdirp", map[string]any{})
	made := filepath.Join(f.ws, "reports", "2026")
	if err != nil || !res.IsError || !strings.Contains(res.Text("\n"), "a write to "+made) || !strings.Contains(res.Text("\n"), "--allow-write workspace") {
		t.Errorf("netext_mkdirp: %+v %v", res, err)
	}
	// doctor and describe say the start's refusals as one report, each
	// host once, with one command for what it likely needs.
	refused := "a connection to " + target + " (named in the call's arguments): host not in network.allowedHosts"
	wrote := "a write to " + filepath.Join(f.ws, "made.txt") + ": the workspace is read-only to its servers"
	mkdir := "a write to " + made + ": the workspace is read-only to its servers"
	both := "gemkit extensions sandbox netext --allow-host " + target + " --allow-host localhost:" + strings.Split(target, ":")[1] + " --allow-write workspace"
	for _, args := range [][]string{{"extensions", "doctor"}, {"extensions", "describe", "netext"}} {
		out, _ := f.gemkit(args...)
		if !strings.Contains(out, "extension netext's MCP server srv was refused") || !strings.Contains(out, refused) || !strings.Contains(out, wrote) || !strings.Contains(out, mkdir) || !strings.Contains(out, both) {
			t.Errorf("%v does not say %q, %q and %q with %q:\n%s", args, refused, wrote, mkdir, both, out)
		}
	}

	allowAndReach(t, ctx, f, run, target, allow)
	// Allowed now: doctor no longer lists it.
	if out, _ := f.gemkit("extensions", "doctor"); strings.Contains(out, refused) {
		t.Errorf("extensions doctor still lists an allowed host:\n%s", out)
	}
}

// allowAndReach runs the command allow, and waits for the server, started
// again in the sandbox it widened, to reach target.
func allowAndReach(t *testing.T, ctx context.Context, f *fixture, run *mcpRun, target, allow string) {
	c, stderr := run.c, run.stderr
	args := strings.Fields(allow)[1:]
	var text string
	if out, err := f.gemkit(args...); err != nil {
		t.Fatalf("%s: %v\n%s", allow, err, out)
	}
	// Polls, as a client that heard list_changed would: the server
	// starts again in the sandbox the command widened, and its tool is
	// called once it is listed again (a CI run's call between the two
	// got "unknown tool").
	if !gemkittest.Poll(time.Minute, 100*time.Millisecond, func() bool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(tools, func(tl mcpclient.Tool) bool { return tl.Name == "netext_proxied" }) {
			return false
		}
		res, err := c.CallTool(ctx, "netext_proxied", map[string]any{"url": "http://" + target + "/"})
		if err != nil && strings.Contains(err.Error(), "unknown tool") { // listed, then restarted again
			return false
		} else if err != nil {
			t.Fatalf("netext_proxied: %v\n%s", err, stderr.String())
		}
		text = res.Text("\n")
		return !res.IsError && text == "reached"
	}) {
		t.Fatalf("the server does not reach %s a minute after %s: %q\n%s", target, allow, text, stderr.String())
	}
}
