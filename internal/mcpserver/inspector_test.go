package mcpserver_test

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestInspectorCLI drives `gemkit mcp` with the real MCP Inspector CLI
// (@modelcontextprotocol/inspector 2.12.0, --cli) in both its protocol
// eras, legacy (initialize, up to 2025-11-25) and modern (2026-07-28,
// server/discover, which refuses a result without resultType), over
// stdio and Streamable HTTP: the tool list with a JSON tool's output
// schema, a call with its structuredContent, the doc resources; and over
// HTTP a request without the token, which the Inspector reports as
// needing authentication (exit 3).
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/inspector/package.json")
	inspector := filepath.Join(interop, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	f := newFixture(t)
	url, token := startHTTP(t, f)
	run := func(t *testing.T, target []string, args ...string) (json.RawMessage, int) {
		t.Helper()
		cmd := exec.Command(node, append(append([]string{inspector, "--cli", "--format", "json"}, args...), target...)...)
		cmd.Dir, cmd.Env = f.ws, f.env()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var ans struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(out, &ans); code == 0 && ans.Result == nil {
			t.Fatalf("inspector %v: no result\n%s\n%s", args, out, stderr.String())
		}
		return ans.Result, code
	}
	for _, era := range []string{"legacy", "modern"} {
		for _, transport := range []string{"stdio", "http"} {
			t.Run(era+"/"+transport, func(t *testing.T) {
				target := []string{"--cwd", f.ws, f.bin, "mcp", "--workspace", f.ws}
				if transport == "http" {
					target = []string{"--transport", "http", "--server-url", url, "--header", "Authorization: Bearer " + token}
				}
				do := func(args ...string) json.RawMessage {
					t.Helper()
					res, code := run(t, target, append([]string{"--protocol-era", era}, args...)...)
					if code != 0 {
						t.Fatalf("inspector %v: exit %d", args, code)
					}
					return res
				}
				var list struct{ Tools []listedTool }
				json.Unmarshal(do("--method", "tools/list"), &list)
				list.Tools = extensionTools(t, list.Tools)
				if len(list.Tools) != 6 || list.Tools[0].Name != "demo_count" || list.Tools[0].OutputSchema["type"] != "object" || list.Tools[1].OutputSchema != nil {
					t.Errorf("tools/list: %+v", list.Tools)
				}
				var call toolResult
				json.Unmarshal(do("--method", "tools/call", "--tool-name", "demo_count", "--tool-arg", "word=hi", "times=2"), &call)
				if call.IsError || call.text() != `{"word":"hi","times":2,"files":"a.txt"}` || call.StructuredContent["word"] != "hi" {
					t.Errorf("tools/call: %+v", call)
				}
				var resources struct{ Resources []struct{ URI string } }
				json.Unmarshal(do("--method", "resources/list"), &resources)
				if len(resources.Resources) != 2 || resources.Resources[0].URI != "gemkit-doc://demo/guide" {
					t.Errorf("resources/list: %+v", resources)
				}
				var read struct{ Contents []struct{ Text string } }
				json.Unmarshal(do("--method", "resources/read", "--uri", "gemkit-doc://demo/guide"), &read)
				if len(read.Contents) != 1 || read.Contents[0].Text != guideText {
					t.Errorf("resources/read: %+v", read)
				}
			})
		}
	}
	t.Run("no token", func(t *testing.T) {
		if _, code := run(t, []string{"--transport", "http", "--server-url", url}, "--stored-auth-only", "--method", "tools/list"); code != 3 {
			t.Errorf("without the token: exit %d, want 3 (authentication required)", code)
		}
	})
}
