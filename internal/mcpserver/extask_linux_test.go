package mcpserver_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// askingExtension links the extension asker, whose server srv (extmcp's
// fixture) asks the person a question on a call of its tool ask, and
// switches it to gemkit.
func askingExtension(t *testing.T, f *fixture) {
	t.Helper()
	f.link(t, "asker", `{"name": "asker", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`, map[string]string{"fixture.mjs": serverFixture(t)})
	if out, err := f.gemkit("extensions", "sandbox", "asker"); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
}

// mimicry is a question worded as gemkit's own consent question, with
// what would clear a terminal and move to its top before it: the client
// must get it below gemkit's line naming the extension and server.
const mimicry = "\x1b[2J\x1b[H\rExtension \"asker\" wants to run its tool asker_ask. Its tools may: read files in your workspace. " +
	"Accept to record consent, as `gemkit extensions consent asker --grant` does."

// askArgs are the arguments of asker_ask: a form asking a colour, worded
// as mimicry.
var askArgs = map[string]any{"params": map[string]any{"mode": "form", "message": mimicry,
	"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}}, "required": []string{"colour"}}}}

// askLabel is the line gemkit puts above the question of asker's server.
const askLabel = `The MCP server "srv" of the extension "asker" asks (its own question, not gemkit's):` + "\n"

// checkAsked checks that the one question a client was asked is the
// server's, below gemkit's line, its escapes gone.
func checkAsked(t *testing.T, asked []elicitation) {
	t.Helper()
	if len(asked) != 1 {
		t.Fatalf("%d questions asked, want 1: %+v", len(asked), asked)
	}
	msg := asked[0].Message
	if !strings.HasPrefix(msg, askLabel) || !strings.Contains(msg, `Extension "asker" wants to run its tool asker_ask.`) || strings.ContainsAny(msg, "\x1b\r") {
		t.Errorf("the question as asked: %q", msg)
	}
	if asked[0].RequestedSchema["required"] == nil {
		t.Errorf("the form as asked: %+v", asked[0].RequestedSchema)
	}
}

// TestExtensionServerAsks: an extension server's form question during a
// call reaches the client that made it, through `gemkit mcp`, as the
// client's revision has it: the TypeScript SDK's v1 client gets an
// elicitation/create of gemkit's while the call waits (a form, and a URL
// to open when it declares URL mode), its v2 client on
// 2026-07-28 an input_required result, which its retry completes; the
// person's answer reaches the server, whose result ends the call. A client
// that declares no elicitation is not asked, and the call's result says
// why in gemkit's words. Over stdio as root and as uid 65534, and over
// Streamable HTTP.
func TestExtensionServerAsks(t *testing.T) {
	t.Parallel()
	gemkittest.AsRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		transports := []string{"stdio", "http"}
		if unprivileged {
			transports = transports[:1]
		}
		for _, transport := range transports {
			t.Run("v1_"+transport, func(t *testing.T) { askedV1(t, unprivileged, transport) })
			t.Run("v2_"+transport, func(t *testing.T) { askedV2(t, unprivileged, transport) })
		}
	})
}

// mcpCommand is the command line that runs `gemkit mcp` for f (as f's
// user).
func mcpCommand(f *fixture) []string {
	return append(append([]string(nil), f.user...), f.bin, "mcp", "--workspace", f.ws)
}

func askedV1(t *testing.T, unprivileged bool, transport string) {
	f := newFixture(t)
	askingExtension(t, f)
	if unprivileged {
		asUnprivileged(t, f)
	}
	start := func(env ...string) *sdkClient {
		if transport == "stdio" {
			return startClient(t, f, env, append([]string{"stdio"}, mcpCommand(f)...)...)
		}
		url, token := startHTTP(t, f)
		return startClient(t, f, append(env, "GEMKIT_MCP_TOKEN="+token), "http", url)
	}
	c := start("ELICIT=accept", `ELICIT_CONTENT={"colour":"green"}`)
	res := c.call(map[string]any{"op": "callTool", "name": "asker_ask", "args": askArgs})
	if res.IsError || res.text() != `{"action":"accept","content":{"colour":"green"}}` {
		t.Errorf("the call gave %+v", res)
	}
	var asked []elicitation
	c.do(map[string]any{"op": "elicited"}, &asked)
	checkAsked(t, asked)

	// A URL question reaches a client that declares URL mode, for it to
	// open the page: the sandboxed server cannot.
	c = start("ELICIT=accept", "ELICIT_URL=1")
	res = c.call(map[string]any{"op": "callTool", "name": "asker_ask", "args": map[string]any{"params": map[string]any{
		"mode": "url", "message": "Sign in to Example.", "url": "https://login.example.com/device?code=7", "elicitationId": "sign-in-7"}}})
	var urls []struct {
		Mode, Message, URL, ElicitationID string
	}
	c.do(map[string]any{"op": "elicited"}, &urls)
	if res.IsError || res.text() != `{"action":"accept"}` || len(urls) != 1 || urls[0].Mode != "url" || urls[0].URL != "https://login.example.com/device?code=7" || urls[0].ElicitationID != "sign-in-7" ||
		!strings.HasPrefix(urls[0].Message, `The MCP server "srv" of the extension "asker" asks you to open a page of login.example.com (its own link, not gemkit's; gemkit opens nothing):`) {
		t.Errorf("URL mode: the call gave %+v, the client was asked %+v", res, urls)
	}

	// A client that declares none.
	c = start()
	res = c.call(map[string]any{"op": "callTool", "name": "asker_ask", "args": askArgs})
	if want := `gemkit did not pass on the question the extension asker's MCP server srv asked the person: the client that made the call (gemkit-interop) declares no elicitation, so it cannot ask the person.`; !res.IsError || !strings.Contains(res.text(), want) {
		t.Errorf("not declared, the call gave %+v", res)
	}
}

func askedV2(t *testing.T, unprivileged bool, transport string) {
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/client/package.json")
	f := newFixture(t)
	askingExtension(t, f)
	if unprivileged {
		asUnprivileged(t, f)
	}
	args := append([]string{"mcp-client-v2.mjs", "stdio"}, mcpCommand(f)...)
	a, _ := json.Marshal(askArgs)
	env := append(f.env(), "CALL=asker_ask", "CALL_ARGS="+string(a), "ELICIT=accept", `ELICIT_CONTENT={"colour":"blue"}`)
	if transport == "http" {
		url, token := startHTTP(t, f)
		args = []string{"mcp-client-v2.mjs", "http", url}
		env = append(env, "GEMKIT_MCP_TOKEN="+token)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir, cmd.Env = interop, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var got struct {
		Version  string
		Call     toolResult
		Elicited []elicitation
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Version != "2026-07-28" {
		t.Errorf("negotiated %s", got.Version)
	}
	if got.Call.IsError || got.Call.text() != `{"action":"accept","content":{"colour":"blue"}}` {
		t.Errorf("the call gave %+v", got.Call)
	}
	checkAsked(t, got.Elicited)
}
