package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// session is one client's stdio session with a Server in process, on
// the SDK's own transport (without the fast tools/list of ServeStdio), for
// tests that read the wire.
type session struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	id  int
}

// connect starts a session with s; initialized sends initialize (of
// revision 2025-06-18) and notifications/initialized first.
func connect(t *testing.T, s *Server, initialized bool) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.mcp.Run(ctx, &mcp.IOTransport{Reader: inR, Writer: outW})
	}()
	t.Cleanup(func() {
		// The end of input ends the session, as a client's going away
		// does; the context only stops one that does not end.
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	c := &session{t: t, in: inW, out: bufio.NewReader(outR)}
	if initialized {
		c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return c
}

// send writes one line to the server.
func (c *session) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// answer reads lines until the answer to a request, which it returns.
func (c *session) answer() string {
	c.t.Helper()
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.t.Fatal(err)
		}
		if !strings.HasPrefix(line, `{"jsonrpc":"2.0","method":`) { // not a notification
			return line
		}
	}
}

// call sends one request and returns its result.
func (c *session) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	c.send(string(req))
	line := c.answer()
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.Error != nil {
		c.t.Fatalf("%s: %s %v", method, line, err)
	}
	return resp.Result
}

// rpc sends one JSON-RPC request to s in process, on a session of its
// own (initialized first unless the request starts one), and returns the
// result.
func rpc(t *testing.T, s *Server, method string, params any) json.RawMessage {
	t.Helper()
	return connect(t, s, method != "initialize" && method != "server/discover").call(method, params)
}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestToolListGolden checks the tools/list answer (schemas, descriptions,
// annotations, read_doc) and the instructions of a server of one
// extension folder (--extension).
func TestToolListGolden(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{
		"gemini-extension.json": `{"name": "code-analyzer", "version": "1.0.0", "description": "Lints code.",
		 "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}, "network": {"allowedHosts": ["https://rules.example.com"]}},
		 "tools": [{"name": "lintFile", "description": "Lints a file.", "executable": "lint.sh", "runtime": "shell", "output": "json",
		   "args": [{"name": "file", "type": "string", "description": "The file."}, {"name": "strict", "type": "boolean"}, {"name": "rules", "type": "array"}]}],
		 "docs": [{"name": "rules", "description": "The rules.", "file": "rules.md"}],
		 "examples": [{"prompt": "lint a.js", "tool_call": "lintFile(file=\"a.js\")"}]}`,
		"lint.sh":  "echo '{}'\n",
		"rules.md": "# Rules\n",
	})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		Instructions string `json:"instructions"`
	}
	json.Unmarshal(rpc(t, s, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}), &init)
	if init.Instructions != s.Set().Summary(0).Text || !strings.Contains(init.Instructions, "`code-analyzer_lintFile(file: string, strict?: boolean, rules?: string[])`") {
		t.Errorf("instructions:\n%s", init.Instructions)
	}
	var out any
	json.Unmarshal(rpc(t, s, "tools/list", map[string]any{}), &out)
	got, _ := json.MarshalIndent(out, "", "  ")
	got = append(got, '\n')
	golden.Check(t, filepath.Join("testdata", "tools-list.json"), got)

	var res struct {
		Contents []struct{ URI, MIMEType, Text string }
	}
	json.Unmarshal(rpc(t, s, "resources/read", map[string]any{"uri": "gemkit-doc://code-analyzer/rules"}), &res)
	if len(res.Contents) != 1 || res.Contents[0].Text != "# Rules\n" {
		t.Errorf("resource: %+v", res)
	}
}

// TestSkills checks a served extension's agent skills: listed in the
// instructions, offered as resources beside the docs, and their
// instructions read with read_doc and as a resource; a SKILL.md that is
// not a skill is reported in words.
func TestSkills(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{
		"gemini-extension.json":  `{"name": "reviewer", "version": "1.0.0", "description": "Review workflows."}`,
		"skills/review/SKILL.md": "---\nname: review\ndescription: Review a diff for bugs.\n---\n# Review\nRead the tests first.\n",
		"skills/draft/SKILL.md":  "---\nname: draft\n---\nno description\n",
	})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Instructions(), "  - **Skills**:\n    - `review`: Review a diff for bugs.\n") || strings.Contains(s.Instructions(), "draft") {
		t.Errorf("instructions:\n%s", s.Instructions())
	}
	var list struct {
		Resources []struct{ URI, Name, Description, MIMEType string }
	}
	json.Unmarshal(rpc(t, s, "resources/list", map[string]any{}), &list)
	if len(list.Resources) != 1 || list.Resources[0].URI != "gemkit-doc://reviewer/skill:review" || list.Resources[0].Description != "Review a diff for bugs." {
		t.Fatalf("resources: %+v", list)
	}
	var read struct {
		Contents []struct{ URI, MIMEType, Text string }
	}
	json.Unmarshal(rpc(t, s, "resources/read", map[string]any{"uri": list.Resources[0].URI}), &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != "# Review\nRead the tests first." || read.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("resource: %+v", read)
	}
	for _, c := range []struct {
		name    string
		isError bool
		want    string
	}{
		{"skill:review", false, "# Review\nRead the tests first."},
		{"skill:draft", true, "skills/draft/SKILL.md is not a skill because its front matter has no description"},
	} {
		var res struct {
			Content []struct{ Text string }
			IsError bool
		}
		json.Unmarshal(rpc(t, s, "tools/call", map[string]any{"name": disclosure.ReadDocTool, "arguments": map[string]any{"extension": "reviewer", "name": c.name}}), &res)
		if len(res.Content) != 1 || res.IsError != c.isError || !strings.Contains(res.Content[0].Text, c.want) {
			t.Errorf("read_doc %s: %+v, want isError %v and %q", c.name, res, c.isError, c.want)
		}
	}
}

func TestDocURI(t *testing.T) {
	for _, c := range [][2]string{{"code-analyzer", "rules"}, {"a", "with space/and slash"}, {"reviewer", "skill:review"}} {
		uri := DocURI(c[0], c[1])
		e, n, err := parseDocURI(uri)
		if err != nil || e != c[0] || n != c[1] {
			t.Errorf("%q -> %q, %q, %v", uri, e, n, err)
		}
	}
	if _, _, err := parseDocURI("file:///etc/passwd"); err == nil {
		t.Error("a foreign URI was accepted")
	}
}

// TestFastList checks that the cached tools/list answer on stdio is what
// the SDK itself answers, byte for byte, for a request of each revision
// up to 2025-11-25 (HTML characters, quotes, control characters and
// non-ASCII in descriptions and schemas included), and that requests it
// must not answer (a cursor, a notification, another method, any request
// of 2026-07-28 or later, which carries its revision in _meta) go on to
// the SDK.
func TestFastList(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{
		"gemini-extension.json": `{"name": "e", "version": "1.0.0", "description": "<b>bold</b> & more",
		 "permissions": {"filesystem": {"read": "workspace", "write": "workspace"}, "network": {"allowedHosts": ["example.com"]}},
		 "tools": [{"name": "t", "description": "Uses <html> & \"quotes\", tabs\there, ünïcode, \u2028 and emoji 🎉.", "executable": "t.sh", "runtime": "shell", "output": "json",
		            "args": [{"name": "x", "type": "string", "description": "<x>"}, {"name": "n", "type": "number"}, {"name": "l", "type": "array"}]},
		           {"name": "a.b", "description": "Second.", "executable": "t.sh", "runtime": "shell"},
		           {"name": "s", "description": "Declares its output.", "executable": "t.sh", "runtime": "shell", "output": "json",
		            "outputSchema": {"type": "object",   "properties": {"html": {"type": "string", "description": "<b> & more"}}}}],
		 "examples": [{"prompt": "use <t>", "tool_call": "t(x=\"<1>\")"}]}`,
		"t.sh": "echo\n",
	})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Version: "v1.2.3 <dev>"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"} {
		c := connect(t, s, false)
		c.call("initialize", map[string]any{"protocolVersion": v, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, p := range []string{``, `,"params":{}`, `,"params":{"_meta":{"progressToken":1}}`} {
			for _, id := range []string{`7`, `"abc"`, `1.0`} {
				line := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"` + p + `}`
				var fast strings.Builder
				if !s.fastList([]byte(line+"\n"), &fast) {
					t.Fatalf("%s was not answered from the cache", line)
				}
				c.send(line)
				if slow := c.answer(); fast.String() != slow {
					t.Errorf("%s %s: cached answer differs from the SDK's:\n%s\n%s", v, line, fast.String(), slow)
				}
			}
		}
	}
	// A declared output schema is served as written.
	if !strings.Contains(string(*s.toolsList.Load()), `"outputSchema":{"type":"object","properties":{"html":{"type":"string","description":"<b> & more"}}}`) {
		t.Errorf("the declared output schema is not in the list:\n%s", *s.toolsList.Load())
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tools/list"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	} {
		if s.fastList([]byte(line), io.Discard) {
			t.Errorf("%s was answered from the cache", line)
		}
	}
}

// TestInstructionsEitherWay checks that a client gets the summary as the
// server's instructions whether it starts with initialize (up to
// 2025-11-25) or with server/discover (2026-07-28, as Claude Code does).
func TestInstructionsEitherWay(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "e", "version": "1.0.0", "description": "Says things."}`})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	modern := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "claude-code", "version": "2.1.330"},
	}}
	for method, params := range map[string]any{
		"initialize":      map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}},
		"server/discover": modern,
	} {
		var res struct {
			Instructions string `json:"instructions"`
		}
		json.Unmarshal(rpc(t, s, method, params), &res)
		if res.Instructions == "" || res.Instructions != s.Instructions() {
			t.Errorf("%s: instructions %q, want the summary %q", method, res.Instructions, s.Instructions())
		}
	}
}

// TestHTTPGuard checks that the Streamable HTTP endpoint refuses a
// browser, a foreign Host and a missing or wrong token before MCP sees the
// request, and serves a correct one.
func TestHTTPGuard(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "e", "version": "1.0.0"}`})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := httpguard.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	token := "0123456789abcdef0123"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeHTTP(ctx, ln, token) }()
	defer func() { cancel(); <-done }()

	url := "http://" + ln.Addr().String() + Path
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"no token", nil, "", http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, "", http.StatusUnauthorized},
		{"origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, "", http.StatusForbidden},
		{"foreign host", map[string]string{"Authorization": "Bearer " + token}, "evil.example", http.StatusForbidden},
		{"ok", map[string]string{"Authorization": "Bearer " + token}, "", http.StatusOK},
		{"ok via localhost", map[string]string{"Authorization": "Bearer " + token}, "localhost:" + strings.Split(ln.Addr().String(), ":")[1], http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
		// RFC 9110 §11.6.1 (and RFC 6750 §3 for its form): every 401 says
		// how to authenticate.
		if ch := resp.Header.Get("WWW-Authenticate"); c.want == http.StatusUnauthorized &&
			!regexp.MustCompile(`^Bearer error="invalid_token", error_description="[^"\\]+"$`).MatchString(ch) {
			t.Errorf("%s: WWW-Authenticate %q", c.name, ch)
		}
	}
	// Nothing but the endpoint is served, and no other path asks for
	// authentication: a client looking for OAuth metadata finds none.
	resp, err := http.Get("http://" + ln.Addr().String() + "/.well-known/oauth-protected-resource" + Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("OAuth metadata: status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if _, err := httpguard.Listen("0.0.0.0:0"); err == nil {
		t.Error("a non-loopback address was accepted")
	}
	// A connection from the sandbox proxy's own address is refused,
	// token and all: it came from inside an extension tool's sandbox.
	// IPv6 loopback, where the proxy cannot be told apart, and the
	// proxy's address itself are not addresses to listen on.
	proxied := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IP(permission.ProxySource.AsSlice())}}).DialContext}}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(init))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = proxied.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "sandbox") {
		t.Errorf("from the sandbox proxy's address: status %d %s", resp.StatusCode, body)
	}
	for _, addr := range []string{"[::1]:0", permission.ProxySource.String() + ":0"} {
		if ln, err := httpguard.Listen(addr); err == nil {
			ln.Close()
			t.Errorf("%s was accepted as an address to listen on", addr)
		}
	}
}

// TestEmpty checks that a server of no extension still offers read_doc
// and says that nothing is enabled.
func TestEmpty(t *testing.T) {
	home := t.TempDir()
	s, err := New(Config{Source: disclosure.StoreSource(extension.OpenStore(home)), Runner: &toolrun.Runner{}})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	json.Unmarshal(rpc(t, s, "tools/list", map[string]any{}), &list)
	if len(list.Tools) != 1 || list.Tools[0].Name != disclosure.ReadDocTool {
		t.Errorf("tools: %+v", list.Tools)
	}
	var fast strings.Builder
	if !s.fastList([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), &fast) || !strings.Contains(fast.String(), `"read_doc"`) {
		t.Errorf("cached list: %s", fast.String())
	}
	if s.Instructions() != "No gemkit extensions are enabled in this workspace." {
		t.Errorf("instructions: %q", s.Instructions())
	}
}

// TestReloadReplaces checks a reload on the SDK's tool set: a tool added,
// one whose description changed and one removed show in the next
// tools/list, a client of an initialized session is told with
// notifications/tools/list_changed, and a reload that changes nothing
// tells nobody.
func TestReloadReplaces(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	manifest := func(tools string) map[string]string {
		return map[string]string{"gemini-extension.json": `{"name": "e", "version": "1.0.0", "tools": [` + tools + `]}`, "t.sh": "echo\n"}
	}
	const keep = `{"name": "keep", "description": "Stays.", "executable": "t.sh", "runtime": "shell"}`
	writeTree(t, dir, manifest(keep+`,{"name": "change", "description": "Before.", "executable": "t.sh", "runtime": "shell"},{"name": "gone", "description": "Goes.", "executable": "t.sh", "runtime": "shell"}`))
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, s, true)
	list := func() map[string]string {
		var res struct {
			Tools []struct{ Name, Description string }
		}
		json.Unmarshal(c.call("tools/list", map[string]any{}), &res)
		out := map[string]string{}
		for _, tl := range res.Tools {
			out[tl.Name] = tl.Description
		}
		return out
	}
	before := list()
	writeTree(t, dir, manifest(keep+`,{"name": "change", "description": "After.", "executable": "t.sh", "runtime": "shell"},{"name": "new", "description": "Comes.", "executable": "t.sh", "runtime": "shell"}`))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil || !strings.Contains(line, `"notifications/tools/list_changed"`) {
		t.Fatalf("after a reload: %q %v", line, err)
	}
	after := list()
	if _, ok := after["e_gone"]; ok || after["e_new"] == "" || after["e_keep"] != before["e_keep"] ||
		!strings.HasPrefix(after["e_change"], "After.") || len(after) != 4 {
		t.Errorf("tools after the reload: %v (before: %v)", after, before)
	}
	// A reload that changes nothing says nothing: the next line is the
	// answer to the ping, not a notification.
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	c.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	if line, _ := c.out.ReadString('\n'); !strings.Contains(line, `"id":99`) {
		t.Errorf("after a reload that changed nothing: %q", line)
	}
}

// TestHTTPSessionSweep checks how Streamable HTTP sessions end without a
// DELETE (the real clients send none): one with its event stream open is
// kept however long it sends nothing, and one with nothing open past the
// idle time is closed, after which its id is not found (404).
func TestHTTPSessionSweep(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "e", "version": "1.0.0"}`})
	s, err := New(Config{Source: disclosure.DirSource(dir, ws), Runner: &toolrun.Runner{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.streamable())
	defer srv.Close()
	post := func(sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("no session: %v", resp.Status)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", stream, err)
	}
	later := time.Now().Add(2 * time.Hour)
	s.sweep(later, time.Hour)
	if r := post(sid, ping); r.StatusCode != http.StatusOK {
		t.Errorf("with its event stream open, the session was swept: %s", r.Status)
	}
	cancel()
	stream.Body.Close()
	// The server notices the closed stream on its own goroutine, which
	// tells no one.
	if !gemkittest.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		s.active.mu.Lock()
		defer s.active.mu.Unlock()
		return s.active.get(sid, time.Now()).open == 0
	}) {
		t.Fatal("the closed stream still counts as open")
	}
	s.sweep(time.Now().Add(time.Minute), time.Hour)
	if r := post(sid, ping); r.StatusCode != http.StatusOK {
		t.Errorf("a session idle for less than the idle time was swept: %s", r.Status)
	}
	s.sweep(time.Now().Add(2*time.Hour), time.Hour)
	if r := post(sid, ping); r.StatusCode != http.StatusNotFound {
		t.Errorf("an idle session answered %s after the sweep, want 404", r.Status)
	}
}
