package mcpserver_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestSDKv2Client connects the TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.3.1) pinned to protocol 2026-07-28, the
// path Claude Code takes: server/discover instead of initialize, over
// stdio and over Streamable HTTP. It must get the summary as the
// instructions (from server/discover), and list, call (with
// structuredContent) and read in that revision's encoding, which the
// client checks; a long call reports progress.
func TestSDKv2Client(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/client/package.json")
	f := newFixture(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			args := []string{"mcp-client-v2.mjs", "stdio", f.bin, "mcp", "--workspace", f.ws, "--progress-interval", "500ms"}
			env := append(f.env(), "CALL=demo_count", `CALL_ARGS={"word":"hi","times":2}`, "SLOW=demo_slow", "SLOW_MS=2200")
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
				Era, Version, Instructions string
				Tools                      []listedTool
				Call                       toolResult
				Resources                  []struct{ URI string }
				Read                       struct{ Contents []struct{ Text string } }
				Progress                   []struct {
					Progress float64
					Message  string
				}
				Cancelled string
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got.Era != "modern" || got.Version != "2026-07-28" {
				t.Errorf("negotiated %s %s, want modern 2026-07-28", got.Era, got.Version)
			}
			if !strings.Contains(got.Instructions, "`demo_count(word: string, times: integer)`: Repeats a word.") {
				t.Errorf("instructions are not the summary: %q", got.Instructions)
			}
			got.Tools = extensionTools(t, got.Tools)
			if len(got.Tools) != 6 || got.Tools[0].Name != "demo_count" || got.Tools[0].OutputSchema == nil {
				t.Errorf("tools: %+v", got.Tools)
			}
			if got.Call.IsError || got.Call.StructuredContent["times"] != 2.0 || got.Call.text() != `{"word":"hi","times":2,"files":"a.txt"}` {
				t.Errorf("call: %+v", got.Call)
			}
			// A long call reports progress every 500ms until the client
			// gives up on it.
			if p := got.Progress; len(p) < 3 || got.Cancelled == "" || p[len(p)-1].Progress <= p[0].Progress ||
				!strings.HasPrefix(p[0].Message, "running for ") || !strings.HasSuffix(p[0].Message, "; 0 bytes of output so far") {
				t.Errorf("progress of the slow call: %+v (cancelled: %s)", p, got.Cancelled)
			}
			if len(got.Resources) != 2 || len(got.Read.Contents) != 1 || got.Read.Contents[0].Text != guideText {
				t.Errorf("resources: %+v, read %+v", got.Resources, got.Read)
			}
		})
	}
}
