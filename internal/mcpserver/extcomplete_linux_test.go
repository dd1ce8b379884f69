package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/gemkit/gemkit/internal/mcpclient"
)

// TestExtensionServersComplete: through `gemkit mcp`, a client's
// completion/complete of an argument of the real server-everything's
// prompt (by the name gemkit serves it under, with the context of the
// other argument) and of its resource template (as served, and in the
// gemkit-mcp:// form) reaches server-everything, in the sandbox, and its
// answer comes back; a ref to nothing gemkit serves is invalid params in
// words, and one of a server that declares no completions (the test's
// remote server) says so. The completions capability is declared once a
// server that offers it is known: not by the first gemkit mcp, which has
// started no server at initialize, but by the next, from what
// server-everything declared when it started.
func TestExtensionServersComplete(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the real server-everything (node) through gemkit mcp: runs without -short, as in CI")
	}
	f := newFixture(t)
	copyServers(t, filepath.Join(f.root, "src", "realmcp"))
	f.link(t, "realmcp", everythingManifest, nil)
	httpURL, sseURL, _ := remoteServers(t)
	f.link(t, "remotemcp", strings.NewReplacer("HTTPURL", httpURL, "SSEURL", sseURL).Replace(remoteManifest), nil)
	f.allowHosts(t, "remotemcp", httpURL, sseURL)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := mcpclient.Options{Name: "test", Version: "1", ProtocolVersion: "2025-06-18"}
	run := f.startMCP(t, ctx, opts, "--extension-servers")
	c, stderr := run.c, run.stderr
	if c.Capabilities().Completions {
		t.Error("the first gemkit mcp declares completions before it knows of a server that offers them")
	}
	values := func(c *mcpclient.Client, req mcpclient.Completion) []string {
		t.Helper()
		raw, err := c.CompleteRaw(ctx, req)
		if err != nil {
			t.Fatalf("completion/complete %+v: %v\n%s", req, err, stderr.String())
		}
		var res struct{ Completion struct{ Values []string } }
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("completion/complete %+v: %s: %v", req, raw, err)
		}
		return res.Completion.Values
	}
	prompt := mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "realmcp_completable-prompt"}
	for _, tc := range []struct {
		req  mcpclient.Completion
		want string
	}{
		// Asked before any list: the servers are listed first.
		{mcpclient.Completion{Ref: prompt, Name: "department", Value: "En"}, "Engineering"},
		{mcpclient.Completion{Ref: prompt, Name: "name", Value: "", Arguments: map[string]string{"department": "Sales"}}, "David,Eve,Frank"},
		{mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefResource, URI: "demo://resource/dynamic/text/{resourceId}"}, Name: "resourceId", Value: "12"}, "12"},
		{mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefResource, URI: "gemkit-mcp://realmcp/everything/demo://resource/dynamic/text/{resourceId}"}, Name: "resourceId", Value: "7"}, "7"},
	} {
		if got := strings.Join(values(c, tc.req), ","); got != tc.want {
			t.Errorf("completion/complete %+v: %q, want %q", tc.req, got, tc.want)
		}
	}
	for _, tc := range []struct {
		req  mcpclient.Completion
		want string
	}{
		{mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "completable-prompt"}, Name: "department"},
			`completion/complete: gemkit serves no prompt named "completable-prompt" of an extension's MCP server (prompts/list names those it serves)`},
		{mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefResource, URI: "demo://nothing/{id}"}, Name: "id"},
			`completion/complete: gemkit serves no resource template "demo://nothing/{id}" of an extension's MCP server (resources/templates/list names those it serves)`},
		{mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "remotemcp_greet"}, Name: "who", Value: "A"},
			"extension remotemcp's MCP server http failed to answer completion/complete of the argument who of the prompt greet: it does not offer completions"},
	} {
		_, err := c.CompleteRaw(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("completion/complete %+v: %v, want %q", tc.req, err, tc.want)
		}
	}
	var werr *jsonrpc.Error
	if _, err := c.CompleteRaw(ctx, mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "nothing"}, Name: "x"}); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a ref to nothing served: %v, want the JSON-RPC error invalid params", err)
	}
	c.Close()

	next := f.startMCP(t, ctx, opts, "--extension-servers")
	defer next.c.Close()
	if !next.c.Capabilities().Completions {
		t.Errorf("the next gemkit mcp does not declare completions, which server-everything offers\n%s", next.stderr.String())
	}
	if got := strings.Join(values(next.c, mcpclient.Completion{Ref: prompt, Name: "department", Value: "Su"}), ","); got != "Support" {
		t.Errorf("completion/complete in the next gemkit mcp: %q", got)
	}
}
