package mcpserver_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

type listedTool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema"`
}

// TestSDKClient drives `gemkit mcp` over stdio and over Streamable HTTP
// with the TypeScript SDK's client: the tool list, calls that succeed and
// fail each way, read_doc as a tool and as a resource (a doc and an agent
// skill's instructions), and
// tools/list_changed when an extension is installed while it runs.
func TestSDKClient(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			f := newFixture(t)
			var c *sdkClient
			if transport == "stdio" {
				c = startClient(t, f, nil, "stdio", f.bin, "mcp", "--workspace", f.ws, "--progress-interval", "500ms")
			} else {
				url, token := startHTTP(t, f)
				c = startClient(t, f, []string{"GEMKIT_MCP_TOKEN=" + token}, "http", url)
			}
			checkSession(t, f, c)
		})
	}
}

// startHTTP runs `gemkit mcp --http` in the workspace and returns its URL
// and token.
func startHTTP(t *testing.T, f *fixture) (url, token string) {
	t.Helper()
	token = "test-token-0123456789abcdef"
	stdout, _ := runHTTP(t, f, []string{"GEMKIT_MCP_TOKEN=" + token}, "--progress-interval", "500ms")
	line, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("gemkit mcp --http printed no address: %v", err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "serving Streamable HTTP at ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("unexpected first line %q", line)
	}
	return url, token
}

// runHTTP starts `gemkit mcp --http ARGS` in the workspace with env added
// and returns its stdout, and stop, which interrupts it and waits (at the
// test's end at the latest).
func runHTTP(t *testing.T, f *fixture, env []string, args ...string) (stdout *bufio.Reader, stop func()) {
	t.Helper()
	cmd := exec.Command(f.bin, append([]string{"mcp", "--http"}, args...)...)
	cmd.Dir = f.ws
	cmd.Env = append(f.env(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			waitOrKill(cmd)
		})
	}
	t.Cleanup(stop)
	return bufio.NewReader(out), stop
}

func checkSession(t *testing.T, f *fixture, c *sdkClient) {
	checkTools(t, f, c)
	checkDocs(t, c)
	checkCancel(t, c)
	checkInstall(t, f, c)
}

// checkTools: the instructions summarise the extensions, and their tools
// are listed and answer as results: output, bad arguments, a failure,
// the sandbox's denial, a consent missing.
func checkTools(t *testing.T, f *fixture, c *sdkClient) {
	if !strings.Contains(c.instructions, "`demo_count(word: string, times: integer)`: Repeats a word.") ||
		!strings.Contains(c.instructions, "`guide`: How the demo tools work.") ||
		!strings.Contains(c.instructions, "  - **Skills**:\n    - `triage`: Sort incoming bug reports by severity.\n") {
		t.Errorf("instructions are not the summary:\n%s", c.instructions)
	}

	var tools []listedTool
	c.do(map[string]any{"op": "listTools"}, &tools)
	tools = extensionTools(t, tools)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); got != "demo_count demo_fail demo_slow demo_write gated_hello read_doc" {
		t.Fatalf("tools: %s", got)
	}
	if d := tools[0].Description; !strings.Contains(d, `say hi twice -> demo_count(word: "hi", times: 2)`) {
		t.Errorf("description without the example: %q", d)
	}

	// A tool with JSON output has an output schema, and its result the
	// output as structuredContent (which the client checks against the
	// schema) besides the text; a text tool has neither.
	if tools[0].OutputSchema["type"] != "object" || tools[1].OutputSchema != nil {
		t.Errorf("output schemas: %v, %v", tools[0].OutputSchema, tools[1].OutputSchema)
	}
	res := c.call(map[string]any{"op": "callTool", "name": "demo_count", "args": map[string]any{"word": "hi", "times": 2}})
	if res.IsError || res.text() != `{"word":"hi","times":2,"files":"a.txt"}` ||
		fmt.Sprint(res.StructuredContent) != "map[files:a.txt times:2 word:hi]" {
		t.Errorf("count: %+v", res)
	}

	res = c.call(map[string]any{"op": "callTool", "name": "demo_count", "args": map[string]any{"word": "hi"}})
	if !res.IsError || !strings.Contains(res.text(), `missing argument "times"`) || res.StructuredContent != nil {
		t.Errorf("bad arguments: %+v", res)
	}

	res = c.call(map[string]any{"op": "callTool", "name": "demo_fail"})
	if !res.IsError || !strings.Contains(res.text(), "exit status 4") || !strings.Contains(res.text(), "the input is broken") {
		t.Errorf("failing tool: %+v", res)
	}

	res = c.call(map[string]any{"op": "callTool", "name": "demo_write"})
	if !res.IsError || !strings.Contains(res.text(), "exit status 3") || !deniedWrite(res.text()) {
		t.Errorf("sandbox denial: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "written.txt")); err == nil {
		t.Errorf("the sandbox let the tool write into the workspace")
	}

	// A client without elicitation: the refusal is a result, not an
	// error (Gemini CLI shows only a result's text to the person).
	res = c.call(map[string]any{"op": "callTool", "name": "gated_hello"})
	if res.IsError || !strings.HasPrefix(res.text(), "Not run: extension gated needs the person's consent") ||
		!strings.Contains(res.text(), "gemkit extensions consent gated --grant") || !strings.Contains(res.text(), "do not run that command yourself") {
		t.Errorf("missing consent: %+v", res)
	}
}

// checkDocs: an extension's docs and skills are read with read_doc and
// as resources.
func checkDocs(t *testing.T, c *sdkClient) {
	res := c.call(map[string]any{"op": "callTool", "name": "read_doc", "args": map[string]any{"extension": "demo", "name": "guide"}})
	if res.IsError || res.text() != guideText {
		t.Errorf("read_doc: %+v", res)
	}
	res = c.call(map[string]any{"op": "callTool", "name": "read_doc", "args": map[string]any{"extension": "demo", "name": "nope"}})
	if !res.IsError || !strings.Contains(res.text(), "its docs: guide; its skills: skill:triage") {
		t.Errorf("read_doc of a missing doc: %+v", res)
	}
	res = c.call(map[string]any{"op": "callTool", "name": "read_doc", "args": map[string]any{"extension": "demo", "name": "skill:triage"}})
	if res.IsError || res.text() != triageBody {
		t.Errorf("read_doc of a skill: %+v", res)
	}

	var resources []struct {
		URI      string `json:"uri"`
		Name     string `json:"name"`
		MIMEType string `json:"mimeType"`
	}
	c.do(map[string]any{"op": "listResources"}, &resources)
	if len(resources) != 2 || resources[0].URI != "gemkit-doc://demo/guide" || resources[0].MIMEType != "text/markdown" ||
		resources[1].URI != "gemkit-doc://demo/skill:triage" || resources[1].MIMEType != "text/markdown" {
		t.Fatalf("resources: %+v", resources)
	}
	for i, want := range []string{guideText, triageBody} {
		var read struct {
			Contents []struct {
				URI, Text string
			} `json:"contents"`
		}
		c.do(map[string]any{"op": "readResource", "uri": resources[i].URI}, &read)
		if len(read.Contents) != 1 || read.Contents[0].Text != want {
			t.Errorf("resource %s: %+v", resources[i].URI, read)
		}
	}
}

// checkCancel: a long call reports its progress to a client that sent
// a progressToken; cancelling a call kills the tool; the server goes on
// serving.
func checkCancel(t *testing.T, c *sdkClient) {
	var cancelled struct {
		Cancelled bool
		Progress  []struct {
			Progress float64
			Message  string
		}
	}
	seen := make(chan bool, 1)
	stop := make(chan struct{})
	go func() { // the tool must really have run for the kill to mean anything
		running := false
		for !running {
			select {
			case <-stop:
				seen <- false
				return
			case <-time.After(20 * time.Millisecond):
				running = sleepers() > 0
			}
		}
		seen <- true
	}()
	c.do(map[string]any{"op": "callToolCancel", "name": "demo_slow", "afterMs": 3000}, &cancelled)
	close(stop)
	if !<-seen {
		t.Errorf("the slow tool was never seen running")
	}
	if !cancelled.Cancelled {
		t.Errorf("the slow call was not cancelled: %+v", cancelled)
	}
	if p := cancelled.Progress; len(p) < 3 || p[0].Progress <= 0 || p[len(p)-1].Progress <= p[0].Progress ||
		!strings.Contains(p[len(p)-1].Message, "bytes of output so far") {
		t.Errorf("progress of the slow call (every 500ms for 3s): %+v", p)
	}
	// The sandboxed tool's processes are found only by reading /proc.
	gemkittest.Poll(20*time.Second, 50*time.Millisecond, func() bool { return sleepers() == 0 })
	if n := sleepers(); n > 0 {
		t.Errorf("%d processes of the cancelled tool are still running", n)
	}
	res := c.call(map[string]any{"op": "callTool", "name": "demo_count", "args": map[string]any{"word": "again", "times": 1}})
	if res.IsError {
		t.Errorf("call after a cancel: %+v", res)
	}
}

// checkInstall: an extension installed while the server runs appears,
// announced, and disabling it takes it away again.
func checkInstall(t *testing.T, f *fixture, c *sdkClient) {
	// An extension installed while the server runs appears, announced.
	f.link(t, "later", `{"name": "later", "version": "1.0.0",
	 "tools": [{"name": "ping", "description": "Answers pong.", "executable": "tools/ping.sh", "runtime": "shell"}]}`,
		map[string]string{"tools/ping.sh": "echo pong\n"})
	c.do(map[string]any{"op": "waitToolsChanged", "after": 0, "timeoutMs": 30000}, nil)
	var tools []listedTool
	c.do(map[string]any{"op": "listTools"}, &tools)
	found := false
	for _, tl := range tools {
		found = found || tl.Name == "later_ping"
	}
	if !found {
		t.Fatalf("later_ping is not listed after the install: %+v", tools)
	}
	res := c.call(map[string]any{"op": "callTool", "name": "later_ping"})
	if res.IsError || res.text() != "pong\n" {
		t.Errorf("new tool: %+v", res)
	}

	// Disabling it takes it away again.
	if out, err := f.gemkit("extensions", "disable", "later"); err != nil {
		t.Fatalf("disable: %v\n%s", err, out)
	}
	var changed struct{ Count int }
	c.do(map[string]any{"op": "waitToolsChanged", "after": 1, "timeoutMs": 30000}, &changed)
	c.do(map[string]any{"op": "listTools"}, &tools)
	for _, tl := range tools {
		if tl.Name == "later_ping" {
			t.Fatalf("later_ping still listed after disable")
		}
	}
}

// TestSDKClientOneExtension serves one extension folder, as an extension's
// own mcpServers entry does (`gemkit mcp --extension ${extensionPath}`):
// only its tools, the same sandbox and consent, and a tool added to its
// manifest appears with tools/list_changed.
func TestSDKClientOneExtension(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	src := filepath.Join(f.root, "src", "demo")
	c := startClient(t, f, nil, "stdio", f.bin, "mcp", "--extension", src, "--workspace", f.ws)
	var tools []listedTool
	c.do(map[string]any{"op": "listTools"}, &tools)
	if len(tools) != 5 || tools[0].Name != "demo_count" || tools[4].Name != "read_doc" {
		t.Fatalf("tools: %+v", tools)
	}
	if !strings.Contains(c.instructions, "**demo**") || strings.Contains(c.instructions, "gated") {
		t.Errorf("instructions:\n%s", c.instructions)
	}
	res := c.call(map[string]any{"op": "callTool", "name": "demo_count", "args": map[string]any{"word": "one", "times": 1}})
	if res.IsError || res.text() != `{"word":"one","times":1,"files":"a.txt"}` {
		t.Errorf("count: %+v", res)
	}

	manifest := strings.Replace(demoManifest, `"tools": [`, `"tools": [
  {"name": "extra", "description": "Added later.", "executable": "tools/count.sh", "runtime": "shell", "args": [{"name": "word", "type": "string"}, {"name": "times", "type": "integer"}]},`, 1)
	writeFile(t, filepath.Join(src, "gemini-extension.json"), manifest, 0o644)
	c.do(map[string]any{"op": "waitToolsChanged", "after": 0, "timeoutMs": 30000}, nil)
	c.do(map[string]any{"op": "listTools"}, &tools)
	if len(tools) != 6 || tools[1].Name != "demo_extra" {
		t.Fatalf("tools after the edit: %+v", tools)
	}
}

// deniedWrite reports whether a tool's error text is the kernel refusing a
// write: Landlock answers EACCES, the tool's read-only root EROFS.
func deniedWrite(text string) bool {
	text = strings.ToLower(text)
	return strings.Contains(text, "permission denied") || strings.Contains(text, "read-only file system")
}
