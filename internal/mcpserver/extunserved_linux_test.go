package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// TestUnservedServerCall: a call of a tool of an extension's server that
// is not served now (consent not given, so its start is refused; an
// extension not switched) is answered with a tool error saying why and
// the fix, in the words the server's placeholder and doctor use, not a
// bare -32602 "unknown tool"; a name of no extension's servers still
// gets the SDK's "unknown tool".
func TestUnservedServerCall(t *testing.T) {
	t.Parallel()
	dir, ws, home := filepath.Join(t.TempDir(), "weather"), t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "weather", "version": "1.0.0",
 "mcpServers": {"api": {"command": "node", "args": ["${extensionPath}/server.mjs"]}}}`})
	notAgreed := extmcp.NotServed(extension.ConsentState{}, "weather", nil)
	offWhy := "its servers are not switched to gemkit (gemkit extensions sandbox weather)"
	for _, tc := range []struct {
		name   string
		choice extmcp.Choice
		tool   string
		want   []string // in the tool error; nil: the SDK's unknown tool
	}{
		{"consent not given", extmcp.Choice{Allowed: func() error { return notAgreed }}, "weather_forecast", []string{
			"gemkit serves no tool weather_forecast now.",
			"the MCP server api of the extension weather",
			"is not running, so its tools are not offered",
			"you have not agreed to the extension weather as it is now",
			"gemkit extensions consent weather --grant",
			// A tour's finding: the fix is the person's, never the model's.
			"What to do is for the person, not the model: tell them, and do not run that gemkit command yourself.",
		}},
		{"switched off", extmcp.Choice{Why: offWhy}, "weather_forecast", []string{
			"gemkit serves no tool weather_forecast now.",
			"the MCP server api of the extension weather: gemkit does not serve that server: " + offWhy,
		}},
		{"no extension's", extmcp.Choice{Allowed: func() error { return notAgreed }}, "other_forecast", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sandboxedServers(t, dir, ws, home, tc.choice)
			c := connect(t, s, true)
			c.id++
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": "tools/call",
				"params": map[string]any{"name": tc.tool, "arguments": map[string]any{}}})
			c.send(string(req))
			var resp struct {
				Result *struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
				Error *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			line := c.answer()
			if err := json.Unmarshal([]byte(line), &resp); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			if tc.want == nil {
				if resp.Error == nil || !strings.Contains(resp.Error.Message, "unknown tool") {
					t.Errorf("want the SDK's unknown tool, got %s", line)
				}
				return
			}
			if resp.Result == nil || !resp.Result.IsError || len(resp.Result.Content) != 1 {
				t.Fatalf("want a tool error, got %s", line)
			}
			text := resp.Result.Content[0].Text
			t.Log(text)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the tool error does not say %q:\n%s", w, text)
				}
			}
		})
	}
}

// listsFromFile is an MCP server whose tools are the lines of the file
// named by its first argument; while the file "hold" stands beside
// that file, its listing waits: it writes a line to the FIFO "held" in
// its data folder, then reads the FIFO "release" before it answers.
const listsFromFile = `import { createInterface } from "node:readline";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
const file = process.argv[2];
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined || m.method === undefined) return;
  switch (m.method) {
    case "initialize":
      return send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "lists", version: "1" } } });
    case "tools/list": {
      const names = readFileSync(file, "utf8").split("\n").filter(Boolean);
      if (existsSync(join(dirname(file), "hold"))) {
        writeFileSync(join(process.env.HOME, "held"), "held\n");
        readFileSync(join(process.env.HOME, "release"));
      }
      return send({ jsonrpc: "2.0", id: m.id, result: { tools: names.map((n) => ({ name: n, description: "tool " + n, inputSchema: { type: "object" } })) } });
    }
    case "tools/call":
      return send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: "called " + m.params.name }] } });
    default:
      return send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no " + m.method } });
  }
});
`

// TestNewToolCalledAtOnce: a server that gained a tool since gemkit
// mcp's last run is first listed from its kept catalog, without the
// tool; a call of the new tool made at once, while the server started
// behind that answer is still listing, waits for the server's fresh
// list and reaches the tool, where it got "unknown tool".
func TestNewToolCalledAtOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server (node) in the sandbox: runs without -short, as in CI")
	}
	dir, ws, home := filepath.Join(t.TempDir(), "weather"), t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{
		"gemini-extension.json": `{"name": "weather", "version": "1.0.0",
 "mcpServers": {"api": {"command": "node", "args": ["${extensionPath}/lists.mjs", "${workspacePath}/tools.txt"]}}}`,
		"lists.mjs": listsFromFile,
	})
	writeTree(t, ws, map[string]string{"tools.txt": "forecast\n"})
	serve := func() *Server { return sandboxedServers(t, dir, ws, home, extmcp.Choice{}) }
	names := func(raw json.RawMessage) string {
		var r struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		json.Unmarshal(raw, &r)
		var out []string
		for _, tl := range r.Tools {
			out = append(out, tl.Name)
		}
		return strings.Join(out, " ")
	}

	// The first run lists the server, and keeps its catalog.
	first := serve()
	if got := names(connect(t, first, true).call("tools/list", map[string]any{})); !strings.Contains(got, "weather_forecast") {
		t.Fatalf("the first listing: %s", got)
	}
	first.cfg.Servers.Close()

	// The server gains a tool; its next listing is held.
	writeTree(t, ws, map[string]string{"tools.txt": "forecast\nalerts\n", "hold": ""})
	data := filepath.Join(home, "data", "weather")
	for _, fifo := range []string{"held", "release"} {
		if err := syscall.Mkfifo(filepath.Join(data, fifo), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := connect(t, serve(), true)
	if got := names(c.call("tools/list", map[string]any{})); !strings.Contains(got, "weather_forecast") || strings.Contains(got, "weather_alerts") {
		t.Fatalf("the listing from the kept catalog: %q, want the kept tool only", got)
	}
	// The server, started behind that answer, is listing.
	if _, err := os.ReadFile(filepath.Join(data, "held")); err != nil {
		t.Fatal(err)
	}
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": "tools/call",
		"params": map[string]any{"name": "weather_alerts", "arguments": map[string]any{}}})
	c.send(string(req))
	if err := os.WriteFile(filepath.Join(data, "release"), []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if line := c.answer(); !strings.Contains(line, `"called alerts"`) {
		t.Errorf("the call of the new tool: %s", line)
	}
}
