package mcpserver_test

import (
	"bytes"
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
	// Every call but the last runs in one node process (inspectorRuns):
	// node's start and the CLI's load, paid once, were most of the test's
	// CPU when each call was a process of its own.
	type call struct {
		name string
		args []string
	}
	var calls []call
	for _, era := range []string{"legacy", "modern"} {
		for _, transport := range []string{"stdio", "http"} {
			target := []string{"--cwd", f.ws, f.bin, "mcp", "--workspace", f.ws}
			if transport == "http" {
				target = []string{"--transport", "http", "--server-url", url, "--header", "Authorization: Bearer " + token}
			}
			for _, args := range [][]string{
				{"--method", "tools/list"},
				{"--method", "tools/call", "--tool-name", "demo_count", "--tool-arg", "word=hi", "times=2"},
				{"--method", "resources/list"},
				{"--method", "resources/read", "--uri", "gemkit-doc://demo/guide"},
			} {
				calls = append(calls, call{era + "/" + transport, append(append([]string{"--format", "json", "--protocol-era", era}, args...), target...)})
			}
		}
	}
	argvs := make([][]string, len(calls))
	for i, c := range calls {
		argvs[i] = c.args
	}
	outs := inspectorRuns(t, node, interop, f.ws, f.env(), argvs)
	for i := 0; i < len(calls); i += 4 {
		t.Run(calls[i].name, func(t *testing.T) {
			result := func(j int) json.RawMessage {
				t.Helper()
				var ans struct {
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal([]byte(outs[i+j]), &ans); ans.Result == nil {
					t.Fatalf("inspector %v: no result\n%s", calls[i+j].args, outs[i+j])
				}
				return ans.Result
			}
			var list struct{ Tools []listedTool }
			json.Unmarshal(result(0), &list)
			list.Tools = extensionTools(t, list.Tools)
			if len(list.Tools) != 6 || list.Tools[0].Name != "demo_count" || list.Tools[0].OutputSchema["type"] != "object" || list.Tools[1].OutputSchema != nil {
				t.Errorf("tools/list: %+v", list.Tools)
			}
			var call toolResult
			json.Unmarshal(result(1), &call)
			if call.IsError || call.text() != `{"word":"hi","times":2,"files":"a.txt"}` || call.StructuredContent["word"] != "hi" {
				t.Errorf("tools/call: %+v", call)
			}
			var resources struct{ Resources []struct{ URI string } }
			json.Unmarshal(result(2), &resources)
			if len(resources.Resources) != 2 || resources.Resources[0].URI != "gemkit-doc://demo/guide" {
				t.Errorf("resources/list: %+v", resources)
			}
			var read struct{ Contents []struct{ Text string } }
			json.Unmarshal(result(3), &read)
			if len(read.Contents) != 1 || read.Contents[0].Text != guideText {
				t.Errorf("resources/read: %+v", read)
			}
		})
	}
	// The Inspector's launcher, as a user runs it, in a process of its own:
	// its exit code is the answer.
	t.Run("no token", func(t *testing.T) {
		cmd := exec.Command(node, inspector, "--cli", "--format", "json", "--stored-auth-only", "--method", "tools/list", "--transport", "http", "--server-url", url)
		cmd.Dir, cmd.Env = f.ws, f.env()
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("without the token: %v, want exit 3 (authentication required)\n%s", err, out)
		}
	})
}

// inspectorRuns runs the real MCP Inspector CLI (the runCli its launcher's
// --cli mode calls) once for each of runs, in one node process
// (testdata/inspector-runs.mjs), in dir with env, and returns each run's
// stdout. A run that fails fails the test.
func inspectorRuns(t *testing.T, node, interop, dir string, env []string, runs [][]string) []string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "inspector-runs.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, filepath.Join(interop, "node_modules", "@modelcontextprotocol", "inspector", "clients", "cli", "build", "index.js"))
	in, err := json.Marshal(runs)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, bytes.NewReader(in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector runs: %v\n%s\n%s", err, out, stderr.String())
	}
	var results []struct{ Out, Error string }
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(runs) {
		t.Fatalf("inspector runs: %d results for %d runs (%v)\n%s\n%s", len(results), len(runs), err, out, stderr.String())
	}
	outs := make([]string, len(runs))
	for i, r := range results {
		if r.Error != "" {
			t.Fatalf("inspector %v: %s\n%s\n%s", runs[i], r.Error, r.Out, stderr.String())
		}
		outs[i] = r.Out
	}
	return outs
}
