package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// everythingManifest starts the real server-everything (interop/mcp-servers,
// 2026.8.31) on stdio, shipped in the extension's folder.
const everythingManifest = `{"name": "realmcp", "version": "1.0.0",
 "mcpServers": {"everything": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"]}}}`

// remoteManifest names two loopback servers of the test's: one over
// Streamable HTTP (httpUrl) with a header made of a declared setting,
// and one over SSE (url, type sse).
const remoteManifest = `{"name": "remotemcp", "version": "1.0.0",
 "settings": [{"name": "Token", "description": "The token.", "envVar": "REMOTE_TOKEN"}],
 "mcpServers": {
  "http": {"httpUrl": "HTTPURL", "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Home": "[$HOME]"}},
  "sse": {"url": "SSEURL", "type": "sse"}}}`

// copyServers copies interop/mcp-servers' node_modules into dir, as a
// published extension ships its server.
func copyServers(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join(gemkittest.RepoRoot(t), "interop", "mcp-servers", "node_modules")
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-everything")); err != nil {
		t.Fatalf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%v)", err)
	}
	os.MkdirAll(dir, 0o755)
	if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// remoteServers starts the go-sdk's own servers on loopback: over
// Streamable HTTP a prompt and a resource, over SSE a tool. headers
// receives the headers of each Streamable HTTP request.
func remoteServers(t *testing.T) (httpURL, sseURL string, headers func() http.Header) {
	hs := mcp.NewServer(&mcp.Implementation{Name: "remote-http", Version: "1"}, nil)
	hs.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greets.", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	hs.AddResource(&mcp.Resource{URI: "note://remote/http", Name: "note", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "a remote note"}}}, nil
		})
	var mu sync.Mutex
	var last http.Header
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return hs }, nil)
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r.Header.Clone()
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hts.Close)

	ss := mcp.NewServer(&mcp.Implementation{Name: "remote-sse", Version: "1"}, nil)
	mcp.AddTool(ss, &mcp.Tool{Name: "ping", Description: "Answers pong."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong over sse"}}}, nil, nil
	})
	sts := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ss }, nil))
	t.Cleanup(sts.Close)
	return hts.URL + "/mcp", sts.URL + "/sse", func() http.Header { mu.Lock(); defer mu.Unlock(); return last }
}

// events records the notifications a client receives.
type events struct {
	mu  sync.Mutex
	got []string // method + " " + params
	ch  chan struct{}
}

func newEvents() *events { return &events{ch: make(chan struct{}, 1)} }

func (e *events) add(method string, params json.RawMessage) {
	e.mu.Lock()
	e.got = append(e.got, method+" "+string(params))
	e.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	default:
	}
}

// mark is where the notifications received so far end, for wait.
func (e *events) mark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.got)
}

// wait waits up to d for a notification of method whose params hold
// part, received after the mark from, and reports whether one came.
func (e *events) wait(d time.Duration, from int, method, part string) bool {
	deadline := time.After(d)
	for {
		e.mu.Lock()
		for _, g := range e.got[from:] {
			if strings.HasPrefix(g, method+" ") && strings.Contains(g, part) {
				e.mu.Unlock()
				return true
			}
		}
		e.mu.Unlock()
		select {
		case <-e.ch:
		case <-deadline:
			return false
		}
	}
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.got, "\n")
}

// TestExtensionServersPassThrough: through `gemkit mcp`, as the go-sdk
// client sees it, the extensions' servers' prompts, resources and
// resource templates are listed and used (the real server-everything on
// stdio in the sandbox; two remote servers, Streamable HTTP and SSE, on
// loopback, reached with the manifest's headers and not the person's
// environment); their log, list_changed and resources/updated reach the
// client, and the first listing sends no list_changed.
func TestExtensionServersPassThrough(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the real server-everything (node) through gemkit mcp: runs without -short, as in CI")
	}
	f := newFixture(t)
	copyServers(t, filepath.Join(f.root, "src", "realmcp"))
	f.link(t, "realmcp", everythingManifest, nil)
	httpURL, sseURL, headers := remoteServers(t)
	f.link(t, "remotemcp", strings.NewReplacer("HTTPURL", httpURL, "SSEURL", sseURL).Replace(remoteManifest), nil)
	// The setting's value where Gemini CLI 0.61 keeps a linked
	// extension's (gemini extensions config writes it there): the entry's
	// .env, not the linked folder's.
	writeFile(t, filepath.Join(f.home, ".gemini", "extensions", "remotemcp", ".env"), "REMOTE_TOKEN=t0k3n\n", 0o600)
	f.allowHosts(t, "remotemcp", httpURL, sseURL)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ev := newEvents()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1", ProtocolVersion: "2025-06-18", Events: ev.add}, "--extension-servers")
	c, in, cmd := run.c, run.stdin, run.cmd
	if caps := c.Capabilities(); !caps.Prompts || !caps.Resources || !caps.Subscribe || !caps.Logging {
		t.Errorf("capabilities %+v, want prompts, resources with subscribe, logging", caps)
	}

	passedFirstListing(t, ctx, run, ev, headers)
	passedPrompts(t, ctx, c)
	passedResources(t, ctx, c)
	passedLog(t, ctx, c, ev)
	passedListChanged(t, ctx, c, ev)

	c.Close()
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("gemkit mcp did not end when its client went")
	}
}

// passedFirstListing: the servers' tools are listed and called (the
// remote one with its setting in a header, and no more of the
// environment).
func passedFirstListing(t *testing.T, ctx context.Context, run *mcpRun, ev *events, headers func() http.Header) {
	c, stderr := run.c, run.stderr
	// The first listing, made while tools/list waits, tells the client
	// nothing it does not have: no list_changed follows it, nor a call,
	// nor the reload of the first poll (gemkit mcp polls every second).
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"realmcp_echo", "remotemcp_ping"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s: %v\n%s", want, names, stderr.String())
		}
	}
	if res, err := c.CallTool(ctx, "remotemcp_ping", nil); err != nil || res.Text("") != "pong over sse" {
		t.Errorf("remotemcp_ping (SSE): %+v %v", res, err)
	}
	if got := headers().Get("Authorization"); got != "Bearer t0k3n" {
		t.Errorf("the Streamable HTTP server got Authorization %q, want the declared setting's value", got)
	}
	if got := headers().Get("X-Home"); got != "[]" {
		t.Errorf("the Streamable HTTP server got X-Home %q: the person's environment reached a header", got)
	}
	// Waits for something that must not come: as long as a reload takes.
	if ev.wait(2500*time.Millisecond, 0, "notifications/tools/list_changed", "") {
		t.Errorf("a list_changed followed the first listing:\n%s", ev)
	}
}

// passedPrompts: the servers' prompts are listed, named as tools are,
// and got from their servers.
func passedPrompts(t *testing.T, ctx context.Context, c *mcpclient.Client) {
	prompts, err := c.ListPrompts(ctx)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	pnames := map[string]bool{}
	for _, p := range prompts {
		pnames[p.ID] = true
	}
	for _, want := range []string{"realmcp_simple-prompt", "realmcp_args-prompt", "remotemcp_greet"} {
		if !pnames[want] {
			t.Errorf("prompts/list lacks %s: %v", want, pnames)
		}
	}
	if raw, err := c.GetPromptRaw(ctx, "realmcp_args-prompt", map[string]string{"city": "Lyon"}); err != nil || !strings.Contains(string(raw), "Lyon") {
		t.Errorf("prompts/get realmcp_args-prompt: %s %v", raw, err)
	}
	if raw, err := c.GetPromptRaw(ctx, "remotemcp_greet", map[string]string{"who": "Ada"}); err != nil || !strings.Contains(string(raw), "hello Ada") {
		t.Errorf("prompts/get remotemcp_greet: %s %v", raw, err)
	}
}

// passedResources: resources keep their URIs; templates too, and a URI
// they match is read from their server.
func passedResources(t *testing.T, ctx context.Context, c *mcpclient.Client) {
	resources, err := c.ListResources(ctx)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	uris := map[string]bool{}
	for _, r := range resources {
		uris[r.ID] = true
	}
	if !uris["note://remote/http"] || !uris["demo://resource/static/document/features.md"] {
		t.Errorf("resources/list: %v", uris)
	}
	templates, err := c.ListResourceTemplates(ctx)
	if err != nil || len(templates) == 0 {
		t.Fatalf("resources/templates/list: %v %v", templates, err)
	}
	for uri, want := range map[string]string{
		"note://remote/http":             "a remote note",
		"demo://resource/dynamic/text/3": "Resource 3",
		"gemkit-mcp://realmcp/everything/demo://resource/dynamic/text/4": "Resource 4",
	} {
		if raw, err := c.ReadResourceRaw(ctx, uri); err != nil || !strings.Contains(string(raw), want) {
			t.Errorf("resources/read %s: %s %v", uri, raw, err)
		}
	}
}

// passedLog: a level set goes on to the server, whose log comes back
// named after the extension and server; a subscription gets
// resources/updated of its URI.
func passedLog(t *testing.T, ctx context.Context, c *mcpclient.Client, ev *events) {
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	const sub = "demo://resource/dynamic/text/1"
	if err := c.Subscribe(ctx, sub); err != nil {
		t.Fatalf("resources/subscribe: %v", err)
	}
	if !ev.wait(10*time.Second, 0, "notifications/message", `"logger":"realmcp/everything"`) {
		t.Errorf("no log line of server-everything reached the client:\n%s", ev)
	}
	// resources/updated, of the URI subscribed to.
	if res, err := c.CallTool(ctx, "realmcp_toggle-subscriber-updates", nil); err != nil || res.IsError {
		t.Fatalf("realmcp_toggle-subscriber-updates: %+v %v", res, err)
	}
	if !ev.wait(15*time.Second, 0, "notifications/resources/updated", sub) {
		t.Errorf("no notifications/resources/updated of %s:\n%s", sub, ev)
	}
	if err := c.Unsubscribe(ctx, sub); err != nil {
		t.Errorf("resources/unsubscribe: %v", err)
	}
}

// passedListChanged: server-everything adds a resource; gemkit lists it
// again and tells the client (list_changed), which finds the new one.
func passedListChanged(t *testing.T, ctx context.Context, c *mcpclient.Client, ev *events) {
	from := ev.mark()
	if res, err := c.CallTool(ctx, "realmcp_gzip-file-as-resource", map[string]any{"name": "hello.txt", "data": "data:text/plain;base64,aGVsbG8="}); err != nil || res.IsError {
		t.Fatalf("realmcp_gzip-file-as-resource: %+v %v", res, err)
	}
	if !ev.wait(15*time.Second, from, "notifications/resources/list_changed", "") {
		t.Fatalf("no resources/list_changed after server-everything added a resource:\n%s", ev)
	}
	resources, err := c.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]bool{}
	for _, r := range resources {
		uris[r.ID] = true
	}
	if !uris["demo://resource/session/hello.txt"] {
		t.Errorf("the added resource is not listed: %v", uris)
	}
}

// TestInspectorCLIServers: the real MCP Inspector CLI (2.12.0, --cli),
// as a client of `gemkit mcp --extension-servers` over stdio in both
// protocol eras, lists the prompts, resources and resource templates of
// the real server-everything in gemkit's sandbox, gets a prompt, reads a
// resource a template matches and one by its gemkit-mcp:// form.
func TestInspectorCLIServers(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/inspector/package.json")
	if testing.Short() {
		t.Skip("runs the MCP Inspector CLI and server-everything (node): runs without -short, as in CI")
	}
	f := newFixture(t)
	copyServers(t, filepath.Join(f.root, "src", "realmcp"))
	f.link(t, "realmcp", everythingManifest, nil)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--method", "prompts/list"}, []string{`"realmcp_simple-prompt"`, `"realmcp_args-prompt"`, "From the extension realmcp (its MCP server everything)."}},
		{[]string{"--method", "prompts/get", "--prompt-name", "realmcp_args-prompt", "--prompt-args", "city=Lyon"}, []string{"Lyon"}},
		{[]string{"--method", "resources/list"}, []string{`"demo://resource/static/document/features.md"`, `"gemkit-doc://demo/guide"`}},
		{[]string{"--method", "resources/templates/list"}, []string{`"demo://resource/dynamic/text/{resourceId}"`}},
		{[]string{"--method", "resources/read", "--uri", "demo://resource/dynamic/text/2"}, []string{"Resource 2"}},
		// Not listed as such: gemkit, not the SDK, answers it.
		{[]string{"--method", "resources/read", "--uri", "gemkit-mcp://realmcp/everything/demo://resource/dynamic/text/5"}, []string{"Resource 5"}},
	}
	// All the calls, of both eras, in one node process (inspectorRuns).
	eras := []string{"legacy", "modern"}
	var runs [][]string
	for _, era := range eras {
		for _, tc := range cases {
			runs = append(runs, append(append([]string{"--format", "json", "--protocol-era", era}, tc.args...),
				"--cwd", f.ws, f.bin, "mcp", "--code-intel=false", "--extension-servers", "--workspace", f.ws))
		}
	}
	outs := inspectorRuns(t, node, interop, f.ws, f.env(), runs)
	for i, era := range eras {
		t.Run(era, func(t *testing.T) {
			for j, tc := range cases {
				out := outs[i*len(cases)+j]
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("inspector %v: no %s in\n%s", tc.args, w, out)
					}
				}
			}
		})
	}
}
