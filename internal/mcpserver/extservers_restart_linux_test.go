package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// TestExtensionServerRestartKeepsTools: a widening restarts an
// extension's server while a client is connected; the client's call of
// a tool it listed before reaches the restarted server and is answered,
// though the new server has not answered its listing yet (it holds it
// while a file of its data folder exists). Before, the server's tools
// left the list at the restart and came back only with the listing, and
// the call got "unknown tool".
func TestExtensionServerRestartKeepsTools(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts gemkit mcp and a Node server in the sandbox: runs without -short, as in CI")
	}
	f := newFixture(t)
	fixture := serverFixture(t)
	src := f.link(t, "slowlist", `{"name": "slowlist", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"], "env": {"FIXTURE_HOLD_LIST": "$HOME/hold"}}}}`,
		map[string]string{"fixture.mjs": fixture})
	if out, err := f.gemkit("extensions", "sandbox", "slowlist"); err != nil {
		t.Fatalf("extensions sandbox: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	c, stderr := run.c, run.stderr
	defer c.Close()
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	if !slices.ContainsFunc(tools, func(tl mcpclient.Tool) bool { return tl.Name == "slowlist_ok" }) {
		t.Fatalf("slowlist_ok is not listed:\n%s", stderr.String())
	}
	// The first list is answered from the catalog the switch kept, and
	// the server started behind the answer.
	var before []string
	if !gemkittest.Poll(time.Minute, 50*time.Millisecond, func() bool { before = serverProcesses(src); return len(before) > 0 }) {
		t.Fatal("no server process a minute after tools/list")
	}

	// The next start of the server holds its listing.
	hold := filepath.Join(f.home, ".local", "share", "gemkit", "extension-data", "slowlist", "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(hold)
	// And no listing kept from its last start answers for it (the kept
	// catalogs, by what starts a server, answer a first listing at once:
	// they narrow the window this test holds open, they do not close it).
	// The widening's own listing (the switch lists what it switched)
	// waits out its bound on the held list, and keeps that failure,
	// which is not answered from.
	if err := os.RemoveAll(filepath.Join(f.home, ".local", "share", "gemkit", "server-catalogs")); err != nil {
		t.Fatal(err)
	}
	if out, err := f.gemkit("extensions", "sandbox", "slowlist", "--allow-host", "example.com:443"); err != nil {
		t.Fatalf("the widening: %v\n%s", err, out)
	}
	// gemkit mcp sees the change and starts the server again; other
	// processes' starts are seen only by reading /proc.
	if !gemkittest.Poll(time.Minute, 50*time.Millisecond, func() bool {
		now := serverProcesses(src)
		return len(now) > 0 && !slices.Equal(now, before) && !slices.ContainsFunc(now, func(p string) bool { return slices.Contains(before, p) })
	}) {
		t.Fatalf("the server did not start again a minute after the widening (before %v, now %v):\n%s", before, serverProcesses(src), stderr.String())
	}
	res, err := c.CallTool(ctx, "slowlist_ok", map[string]any{})
	if err != nil || res.IsError || !strings.Contains(res.Text("\n"), "ok") {
		t.Fatalf("slowlist_ok while the restarted server holds its listing: %+v %v\n%s", res, err, stderr.String())
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	tools, err = c.ListTools(ctx)
	if err != nil || !slices.ContainsFunc(tools, func(tl mcpclient.Tool) bool { return tl.Name == "slowlist_ok" }) {
		t.Fatalf("slowlist_ok is not listed after the restart: %v\n%s", err, stderr.String())
	}
}
