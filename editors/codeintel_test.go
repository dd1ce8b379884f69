package editors_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/lspsource"
)

// The editor's language clients as the source of gemkit's
// code-intelligence tools: the real editor runs the real gopls as its own
// language client, with gemkit's plugin; the tools, as `gemkit mcp` builds
// them (internal/lspsource's Source over the editor, found through the
// discovery file and its token, and over gemkit's own servers), ask the
// editor. Gemkit's
// own servers are a spy here: the editor answers everything it has a
// client for, so no second gopls starts.

// goFixture puts the Go fixture project (example.com/shop) into the
// harness's workspace, in place of its a.go (a second package main), and
// turns Go telemetry off in its home, so that gopls starts no telemetry
// process of its own.
func goFixture(t *testing.T, h *harness) {
	t.Helper()
	src := codeinteltest.Fixture(t, "go")
	if err := os.CopyFS(h.ws, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(h.path("a.go")); err != nil {
		t.Fatal(err)
	}
	mode := filepath.Join(h.home, ".config", "go", "telemetry", "mode")
	if err := os.MkdirAll(filepath.Dir(mode), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mode, []byte("off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// quitWithServers quits Neovim at the end of the test (on failure too)
// and waits for the language servers it ran to end, so that none outlives
// the test or writes into its folders while they are removed.
func quitWithServers(t *testing.T, d *nvimDriver) {
	t.Cleanup(func() {
		tree := gemkittest.ProcessTree(d.PID())
		_, _ = d.rpc.call("nvim_command", "qa!")
		select {
		case <-d.Exited():
		case <-time.After(waitTimeout):
			t.Errorf("Neovim did not quit within %v", waitTimeout)
		}
		for _, p := range gemkittest.WaitExit(tree[1:], waitTimeout) {
			t.Errorf("process %d Neovim started still runs after it quit", p)
			if proc, err := os.FindProcess(p); err == nil {
				_ = proc.Kill()
			}
		}
	})
}

// ownSpy stands for gemkit's own language servers: it records what it is
// asked and answers that it has no server.
type ownSpy struct {
	mu    sync.Mutex
	asked []string
}

func (o *ownSpy) note(what string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.asked = append(o.asked, what)
	return &codeintel.NoServerError{Reason: "gemkit's own servers are off in this test"}
}

func (o *ownSpy) calls() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.asked...)
}

// Call implements lspsource.Conn: every question is noted with the
// file it is about, and answered with no server; lsp/changed, which
// gemkit's own servers hear of every file, is not noted.
func (o *ownSpy) Call(_ context.Context, method string, params, _ any) error {
	if method == ide.MethodLSPChanged {
		return nil
	}
	raw, _ := json.Marshal(params)
	var p struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(raw, &p)
	return o.note(method + " " + p.Path)
}

// editorTools are the code-intelligence tools of the harness's workspace,
// as `gemkit mcp` started there (outside the editor's terminal) builds
// them: the editor's clients first, gemkit's own servers (the spy) when
// the editor has none for a file.
func editorTools(t *testing.T, h *harness) (*codeintel.Tools, *ownSpy) {
	t.Helper()
	env := map[string]string{"TMPDIR": h.tmp, "HOME": h.home}
	f := lspsource.NewFinder(h.ws, lspsource.Options{
		Discovery: client.Options{
			Dir:       h.discoveryDir,
			Getenv:    func(k string) string { return env[k] },
			LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
			// The companion is on this machine, whatever /.dockerenv says:
			// no lookup of host.docker.internal leaves it.
			InContainer: func() bool { return false },
		},
		Recheck: 100 * time.Millisecond,
	})
	t.Cleanup(f.Close)
	own := &ownSpy{}
	tools, err := codeintel.NewTools(lspsource.New(f.Find, &lspsource.Clients{Conn: own, Confined: true}), h.ws, codeintel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tools.Close() })
	return tools, own
}

// callTool runs one tool with JSON arguments and returns its text, failing
// the test when the tool says it could not answer.
func callTool(t *testing.T, tools *codeintel.Tools, name, args string) string {
	t.Helper()
	text, isErr := tools.Call(context.Background(), name, json.RawMessage(args))
	if isErr {
		t.Fatalf("%s %s: %s", name, args, text)
	}
	return text
}

// waitTool calls a tool until its answer holds want (the editor's server
// may still be loading the workspace), within a generous bound.
func waitTool(t *testing.T, tools *codeintel.Tools, name, args string, want ...string) string {
	t.Helper()
	// The real language server answers fully only once it has indexed,
	// and says nothing when.
	var text string
	if !gemkittest.Poll(90*time.Second, 200*time.Millisecond, func() bool {
		var isErr bool
		text, isErr = tools.Call(context.Background(), name, json.RawMessage(args))
		ok := !isErr
		for _, w := range want {
			ok = ok && strings.Contains(text, w)
		}
		return ok
	}) {
		t.Fatalf("%s %s never answered with %q; last answer:\n%s", name, args, want, text)
	}
	return text
}

// nvimGoplsLua starts gopls as Neovim's own client for Go files: with
// vim.lsp.start where it exists (0.8+), else with start_client and
// buf_attach_client (0.7), as people configure it without plugins.
const nvimGoplsLua = `
local gopls, root = %q, %q
vim.api.nvim_create_autocmd('FileType', {
  pattern = 'go',
  callback = function(args)
    if vim.lsp.start then
      vim.lsp.start({ name = 'gopls', cmd = { gopls }, root_dir = root })
    else
      _G.gopls_client = _G.gopls_client or vim.lsp.start_client({ name = 'gopls', cmd = { gopls }, root_dir = root })
      vim.lsp.buf_attach_client(args.buf, _G.gopls_client)
    end
  end,
})
`

// TestNeovimCodeIntel: Neovim 0.7 and 0.10 with their built-in client
// running gopls and gemkit's plugin answer the tools. An error typed into
// a buffer and not saved is what code_diagnostics reports; a function
// added and not saved is found by name, its line shown as in the buffer;
// a file the editor has not open is opened hidden for the client; a file
// no client serves goes to gemkit's own servers; gopls runs once.
func TestNeovimCodeIntel(t *testing.T) {
	gopls := codeinteltest.Gopls(t)
	for _, v := range neovims {
		t.Run(v.version, func(t *testing.T) {
			h := newHarness(t)
			d := startNvimGopls(t, h, v.require(t), gopls)
			main := h.path("main.go")
			tools, own := editorTools(t, h)

			// A definition from a use, through the editor's gopls.
			text := waitTool(t, tools, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`, "greet/greet.go:16:6")
			t.Logf("definition:\n%s", text)

			// An error typed into main.go and not saved.
			d.lua(t, `vim.api.nvim_buf_set_lines(0, 13, 13, false, { '\tundefinedThing()' })`)
			text = callTool(t, tools, codeintel.ToolDiagnostics, `{"file":"main.go"}`)
			if !strings.Contains(text, "main.go:14:2: error: undefined: undefinedThing") {
				t.Errorf("diagnostics of the unsaved buffer:\n%s", text)
			}
			if b, _ := os.ReadFile(main); strings.Contains(string(b), "undefinedThing") {
				t.Fatalf("main.go was written: %s", b)
			}
			text = callTool(t, tools, codeintel.ToolDiagnostics, `{}`)
			if !strings.Contains(text, "undefined: undefinedThing") {
				t.Errorf("diagnostics of the workspace:\n%s", text)
			}

			// A function added to greet.go and not saved is found by name,
			// its line as in the buffer.
			d.Open(t, h.path("greet/greet.go"), 1, 1)
			d.lua(t, `vim.api.nvim_buf_set_lines(0, -1, -1, false, { '', '// Farewell says goodbye.', 'func Farewell(name string) string { return "Bye, " + name }' })`)
			text = callTool(t, tools, codeintel.ToolDefinition, `{"symbol":"Farewell"}`)
			if !strings.Contains(text, "greet/greet.go:24:6") || !strings.Contains(text, `func Farewell(name string) string { return "Bye, " + name }`) {
				t.Errorf("definition of the unsaved function:\n%s", text)
			}

			checkNeovimCodeQuestions(t, h, d, tools)

			// A file an agent writes itself, not open in Neovim: Neovim's
			// gopls hears of it (the plugin sends didChangeWatchedFiles).
			h.write(t, "store/extra.go", "package store\n\n// Discount is a price off.\nfunc Discount(p int) int { return p - 1 }\n")
			waitTool(t, tools, codeintel.ToolDefinition, `{"symbol":"Discount"}`, "store/extra.go:4:6")

			// No client serves b.txt: gemkit's own servers are asked.
			before := len(own.calls())
			if text, _ := tools.Call(context.Background(), codeintel.ToolDiagnostics, json.RawMessage(`{"file":"b.txt"}`)); !strings.Contains(text, "gemkit's own servers are off") {
				t.Errorf("diagnostics of b.txt: %s", text)
			}
			if calls := own.calls(); len(calls) == before {
				t.Errorf("gemkit's own servers were not asked about b.txt: %v", calls)
			}
			for _, c := range own.calls() {
				if strings.Contains(c, ".go") {
					t.Errorf("gemkit's own servers were asked about a Go file: %s", c)
				}
			}
			if n := countGopls(d.PID()); n != 1 {
				t.Errorf("%d gopls run under Neovim, want 1", n)
			}

			checkGemkitMCPUsesNeovim(t, h)
			noDeprecations(t, h)
		})
	}
}

// checkNeovimCodeQuestions asks the code questions about a file not
// open in Neovim, which is opened hidden, and about the use in main.go
// under the line typed there.
func checkNeovimCodeQuestions(t *testing.T, h *harness, d *nvimDriver, tools *codeintel.Tools) {
	t.Helper()
	// store.go is not open in Neovim: it is opened hidden, unlisted,
	// and gopls answers for it; the use in main.go is on the line
	// it has in the buffer, under the line typed there.
	text := callTool(t, tools, codeintel.ToolReferences, `{"symbol":"Store.Total"}`)
	if !strings.Contains(text, "16:38: fmt.Println(greet.Greet(\"world\"), s.Total())") || !strings.Contains(text, "30:17: func (s *Store) Total() int {") {
		t.Errorf("references of Total:\n%s", text)
	}
	text = callTool(t, tools, codeintel.ToolSymbols, `{"file":"store/store.go"}`)
	if !strings.Contains(text, "method") || !strings.Contains(text, "Add") {
		t.Errorf("outline of store.go:\n%s", text)
	}
	hidden := d.lua(t, `local b = vim.fn.bufnr(...)
return vim.json.encode({ loaded = vim.api.nvim_buf_is_loaded(b), listed = vim.bo[b].buflisted, windows = #vim.fn.win_findbuf(b) })`, h.path("store/store.go"))
	if m, _ := hidden.(map[string]any); m["loaded"] != true || m["listed"] != false || m["windows"] != float64(0) {
		t.Errorf("store.go in Neovim: %v, want loaded, unlisted, in no window", hidden)
	}
	text = callTool(t, tools, codeintel.ToolHover, `{"symbol":"Store"}`)
	if !strings.Contains(text, "Store holds items") {
		t.Errorf("hover of Store:\n%s", text)
	}
	text = callTool(t, tools, codeintel.ToolCalls, `{"symbol":"Greet","direction":"incoming"}`)
	if !strings.Contains(text, "function main at main.go:10:6") || !strings.Contains(text, `call at main.go:16:20: fmt.Println(greet.Greet("world"), s.Total())`) {
		t.Errorf("callers of Greet:\n%s", text)
	}
	t.Logf("callers:\n%s", text)
	text = callTool(t, tools, codeintel.ToolImplementations, `{"symbol":"Greeter"}`)
	if !strings.Contains(text, "English") {
		t.Errorf("implementations of Greeter:\n%s", text)
	}
	text = callTool(t, tools, codeintel.ToolTypeDefinition, `{"symbol":"Store.items"}`)
	if !strings.Contains(text, "store/store.go:7:6: type Item struct") {
		t.Errorf("type definition of Store.items:\n%s", text)
	}
}

// checkGemkitMCPUsesNeovim starts the real gemkit mcp in the workspace,
// as an agent starts it, and checks it reports what Neovim's gopls
// knows, starts no server of its own, and says so in codeintel status.
func checkGemkitMCPUsesNeovim(t *testing.T, h *harness) {
	t.Helper()
	// The real gemkit mcp, started in the workspace as an agent
	// starts it, reports the same, and starts no server of its own.
	mcp := startMCP(t, h)
	text := mcp.tool(t, codeintel.ToolDiagnostics, `{"file":"main.go"}`)
	if !strings.Contains(text, "main.go:14:2: error: undefined: undefinedThing") {
		t.Errorf("gemkit mcp's diagnostics of the unsaved buffer:\n%s", text)
	}
	text = mcp.tool(t, codeintel.ToolDefinition, `{"symbol":"Farewell"}`)
	if !strings.Contains(text, `greet/greet.go:24:6: func Farewell(name string) string { return "Bye, " + name }`) {
		t.Errorf("gemkit mcp's definition of the unsaved function:\n%s", text)
	}
	if n := codeinteltest.Procs("gopls", h.ws); len(n) != 1 {
		t.Errorf("%d gopls run in the workspace, want Neovim's alone", len(n))
	}
	if n := codeinteltest.Brokers(h.ws); len(n) != 0 {
		t.Errorf("gemkit mcp started a broker of its own servers: %v", n)
	}
	// gemkit codeintel status says who answers.
	status := exec.Command(gemkittest.Gemkit(t), "codeintel", "status")
	status.Dir, status.Env = h.ws, h.env()
	if out, err := status.CombinedOutput(); err != nil || !strings.Contains(string(out), "Neovim answers code questions first, with its language clients (gopls)") {
		t.Errorf("gemkit codeintel status: %v\n%s", err, out)
	}
}

// startNvimGopls runs Neovim (bin) on the Go fixture with gopls as its
// client and gemkit's plugin, main.go open and gopls attached to it, as a
// person has it when an agent comes; Neovim and gopls are gone when the
// test ends.
func startNvimGopls(t *testing.T, h *harness, bin, gopls string) *nvimDriver {
	t.Helper()
	goFixture(t, h)
	plugin, err := filepath.Abs("nvim")
	if err != nil {
		t.Fatal(err)
	}
	d := startNvimWith(t, h, bin, fmt.Sprintf(nvimGoplsLua, gopls, h.ws)+fmt.Sprintf(`vim.opt.runtimepath:prepend(%q)
vim.cmd('runtime plugin/gemkit.lua')
require('gemkit').setup({ cmd = %q, args = { '-v' } })
`, plugin, gemkittest.Gemkit(t)))
	quitWithServers(t, d)
	discoveryFile(t, h, d.PID())
	d.Open(t, h.path("main.go"), 12, 1)
	waitFor(t, "gopls attached to main.go", func() bool {
		return d.lua(t, `local get = vim.lsp.get_clients or vim.lsp.buf_get_clients
return vim.json.encode(next(vim.lsp.get_clients and get({ bufnr = 0 }) or get(0)) ~= nil)`) == true
	})
	return d
}

// TestNeovimGeminiCLICodeIntel: the real Gemini CLI 0.61 (offline, a
// scripted model) calls code_definition through gemkit mcp for a function
// added in Neovim and not saved; the answer, from Neovim's gopls with the
// buffer's line, reaches the model, and gemkit mcp started no server.
func TestNeovimGeminiCLICodeIntel(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	gopls := codeinteltest.Gopls(t)
	h := newHarness(t)
	d := startNvimGopls(t, h, neovims[1].require(t), gopls)
	d.Open(t, h.path("greet/greet.go"), 1, 1)
	d.lua(t, `vim.api.nvim_buf_set_lines(0, -1, -1, false, { '', '// Farewell says goodbye.', 'func Farewell(name string) string { return "Bye, " + name }' })`)

	model, err := fakemodel.Start(
		fakemodel.Call("mcp_gemkit_code_definition", map[string]any{"symbol": "Farewell"}),
		fakemodel.Text("Found it."),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	writeGeminiSettings(t, h.home)
	settings := filepath.Join(h.home, ".gemini", "settings.json")
	var s map[string]any
	b, _ := os.ReadFile(settings)
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s["mcpServers"] = map[string]any{"gemkit": map[string]any{"command": gemkittest.Gemkit(t), "args": []string{"mcp"}}}
	b, _ = json.Marshal(s)
	if err := os.WriteFile(settings, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"), "-p", "Where is Farewell defined?", "--yolo")
	cmd.Dir = h.ws
	cmd.Env = append(h.env(), "GOOGLE_GEMINI_BASE_URL="+model.URL, "GEMINI_API_KEY=test-key", "NO_COLOR=1", "CI=1", geminiOneProcess)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini: %v\n%s", err, out)
	}
	turns := model.Turns()
	if len(turns) != 2 {
		t.Fatalf("%d model turns, want 2\n%s", len(turns), out)
	}
	second, _ := turns[1].Generate()
	want := `greet/greet.go:24:6: func Farewell(name string) string { return \"Bye, \" + name }`
	found := false
	for _, r := range second.FunctionResponses() {
		b, _ := json.Marshal(r.Response)
		found = found || (r.Name == "mcp_gemkit_code_definition" && strings.Contains(string(b), want))
	}
	if !found {
		t.Errorf("the definition from Neovim's buffer did not reach the model: %+v\n%s", second.FunctionResponses(), out)
	}
	if n := codeinteltest.Brokers(h.ws); len(n) != 0 {
		t.Errorf("gemkit mcp started a broker of its own servers: %v", n)
	}
	if n := codeinteltest.Procs("gopls", h.ws); len(n) != 1 {
		t.Errorf("%d gopls run in the workspace, want Neovim's alone", len(n))
	}
}

// countGopls counts the gopls servers under pid (codeinteltest.Server:
// a gopls forked by a gopls to run go list is not one).
func countGopls(pid int) int {
	n := 0
	for _, p := range gemkittest.ProcessTree(pid) {
		if codeinteltest.Server(p, "gopls") {
			n++
		}
	}
	return n
}

// mcpClient is the real `gemkit mcp` on stdio, driven with newline-
// delimited JSON-RPC as an agent drives it.
type mcpClient struct {
	in  io.WriteCloser
	out *bufio.Scanner
	id  int
}

// startMCP starts gemkit mcp in the harness's workspace, outside the
// editor (no GEMINI_CLI_IDE_* variables: the companion is found through
// its discovery file), and initializes it.
func startMCP(t *testing.T, h *harness) *mcpClient {
	t.Helper()
	cmd := exec.Command(gemkittest.Gemkit(t), "mcp", "--workspace", h.ws)
	cmd.Dir = h.ws
	cmd.Env = h.env()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	exited := startProcess(t, cmd)
	t.Cleanup(func() {
		in.Close()
		select {
		case <-exited:
		case <-time.After(waitTimeout):
			t.Errorf("gemkit mcp did not exit within %v of its stdin closing", waitTimeout)
		}
	})
	c := &mcpClient{in: in, out: bufio.NewScanner(out)}
	c.out.Buffer(nil, 4<<20)
	c.call(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"editors-test","version":"1"}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// call sends a request and returns its result.
func (c *mcpClient) call(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	c.id++
	if _, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.id, method, params); err != nil {
		t.Fatal(err)
	}
	for c.out.Scan() {
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(c.out.Bytes(), &m) != nil || m.ID == nil || *m.ID != c.id {
			continue
		}
		if m.Error != nil {
			t.Fatalf("gemkit mcp %s: %s", method, m.Error)
		}
		return m.Result
	}
	t.Fatalf("gemkit mcp ended before answering %s", method)
	return nil
}

// tool calls a tool and returns its text, failing on an error result.
func (c *mcpClient) tool(t *testing.T, name, args string) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(c.call(t, "tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)), &res); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, p := range res.Content {
		text.WriteString(p.Text)
	}
	if res.IsError {
		t.Fatalf("gemkit mcp %s %s: %s", name, args, text.String())
	}
	return text.String()
}

// emacsEglotInit loads gemkit's plugin and eglot with gopls for go-mode
// (Debian's elpa-go-mode), as a person sets them up, with a server for
// emacsclient and the test's JSON helper.
const emacsEglotInit = `(require 'server)
(setq server-socket-dir %s
      server-name "gemkit-test"
      inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil
      create-lockfiles nil)
(server-start)
(defun gemkit-test-json (file value)
  (let ((coding-system-for-write 'utf-8-unix))
    (with-temp-file file (insert (json-serialize value))))
  t)

;; -Q skips Debian's site start-up, which activates the elpa packages.
(setq package-directory-list '("/usr/share/emacs/site-lisp/elpa"))
(package-initialize)
(require 'go-mode)
(require 'eglot)
(add-to-list 'eglot-server-programs '(go-mode . (%s)))
(add-hook 'go-mode-hook #'eglot-ensure)

(add-to-list 'load-path %s)
(require 'gemkit)
(setq gemkit-program %s gemkit-args '("-v"))
(gemkit-mode 1)
`

// TestEmacsCodeIntel: Emacs 28 with eglot 1.9 running gopls and gemkit's
// plugin answers the tools through gemkit mcp: a definition found from
// a use, a function added to a buffer and not saved found by name, the
// references of a method in a file Emacs has not open; gopls runs once.
func TestEmacsCodeIntel(t *testing.T) {
	gopls := codeinteltest.Gopls(t)
	if _, err := os.Stat("/usr/share/emacs/site-lisp/elpa/go-mode-1.6.0"); err != nil {
		t.Fatal("go-mode for Emacs is not installed: run scripts/setup-and-test, or apt-get install -y --no-install-recommends elpa-go-mode")
	}
	h := newHarness(t)
	goFixture(t, h)
	// A repository, as a project is: Emacs's project.el finds the files
	// of the workspace one project by it, so that eglot's server for
	// main.go serves every Go file there.
	gemkittest.Git(t, h.ws, "init", "-q")
	plugin, err := filepath.Abs("emacs")
	if err != nil {
		t.Fatal(err)
	}
	d := startEmacsLSP(t, h, func(serverDir string) string {
		return fmt.Sprintf(emacsEglotInit, elispString(serverDir), elispString(gopls), elispString(plugin), elispString(gemkittest.Gemkit(t)))
	})
	t.Cleanup(func() {
		_ = exec.Command(d.client, "-s", d.esock, "--eval", "(kill-emacs)").Run()
		codeinteltest.WaitGone(t, h.ws, "gopls")
	})
	discoveryFile(t, h, d.PID())
	d.keys(t, "", "C-x", "C-f")
	d.minibuffer(t, h.path("main.go"))
	waitFor(t, "eglot managing main.go", func() bool {
		return string(d.eval(t, `(if-let ((b (get-file-buffer `+elispString(h.path("main.go"))+`))) (if (buffer-local-value 'eglot--managed-mode b) t :false) :false)`)) == "true"
	})

	mcp := startMCP(t, h)
	text := mcp.tool(t, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`)
	if !strings.Contains(text, "greet/greet.go:16:6: func Greet(name string) string {") {
		t.Errorf("definition of Greet:\n%s", text)
	}

	// A function added to greet.go's buffer, not saved.
	d.eval(t, `(with-current-buffer (find-file-noselect `+elispString(h.path("greet/greet.go"))+`)
  (goto-char (point-max))
  (insert "\n// Farewell says goodbye.\nfunc Farewell(name string) string { return \"Bye, \" + name }\n")
  t)`)
	text = mcp.tool(t, codeintel.ToolDefinition, `{"symbol":"Farewell"}`)
	if !strings.Contains(text, `greet/greet.go:24:6: func Farewell(name string) string { return "Bye, " + name }`) {
		t.Errorf("definition of the unsaved function:\n%s", text)
	}
	if b, _ := os.ReadFile(h.path("greet/greet.go")); strings.Contains(string(b), "Farewell") {
		t.Fatal("greet.go was saved")
	}

	// store.go is not open: Emacs visits it unseen for eglot.
	text = mcp.tool(t, codeintel.ToolReferences, `{"symbol":"Store.Total"}`)
	if !strings.Contains(text, "2 references to Store.Total") || !strings.Contains(text, "30:17: func (s *Store) Total() int {") {
		t.Errorf("references of Total:\n%s", text)
	}
	if shown := string(d.eval(t, `(if (get-buffer-window (get-file-buffer `+elispString(h.path("store/store.go"))+`) t) t :false)`)); shown != "false" {
		t.Errorf("store.go is shown in a window: %s", shown)
	}
	askMore(t, mcp)
	// An error typed into main.go, not saved: Flymake has eglot's report
	// on the buffer as it is.
	d.eval(t, `(with-current-buffer (get-file-buffer `+elispString(h.path("main.go"))+`)
  (goto-char (point-min)) (forward-line 13)
  (insert "\tundefinedThing()\n")
  t)`)
	text = mcp.tool(t, codeintel.ToolDiagnostics, `{"file":"main.go"}`)
	if !strings.Contains(text, "main.go:14:2: error:") || !strings.Contains(text, "undefined: undefinedThing") {
		t.Errorf("diagnostics of the unsaved buffer:\n%s", text)
	}
	if n := codeinteltest.Procs("gopls", h.ws); len(n) != 1 {
		t.Errorf("%d gopls run in the workspace, want Emacs's alone", len(n))
	}
	if n := codeinteltest.Brokers(h.ws); len(n) != 0 {
		t.Errorf("gemkit mcp started a broker of its own servers: %v", n)
	}
}

// emacsLSPModeInit is emacsEglotInit's set-up with lsp-mode in place of
// eglot: gopls for go-mode, the project root taken without asking.
const emacsLSPModeInit = `(require 'server)
(setq server-socket-dir %s
      server-name "gemkit-test"
      inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil
      create-lockfiles nil)
(server-start)
(defun gemkit-test-json (file value)
  (let ((coding-system-for-write 'utf-8-unix))
    (with-temp-file file (insert (json-serialize value))))
  t)
(setq package-directory-list '("/usr/share/emacs/site-lisp/elpa"))
(package-initialize)
(require 'go-mode)
(require 'lsp-mode)
(setq lsp-auto-guess-root t
      lsp-go-gopls-server-path %s
      lsp-enable-file-watchers nil
      lsp-session-file (expand-file-name "lsp-session" temporary-file-directory))
(add-hook 'go-mode-hook #'lsp-deferred)

(add-to-list 'load-path %s)
(require 'gemkit)
(setq gemkit-program %s gemkit-args '("-v"))
(gemkit-mode 1)
`

// TestEmacsLSPModeCodeIntel: Emacs 28 with lsp-mode 8.0.0 running gopls
// answers a definition through gemkit mcp, and gopls runs once.
func TestEmacsLSPModeCodeIntel(t *testing.T) {
	gopls := codeinteltest.Gopls(t)
	if _, err := os.Stat("/usr/share/emacs/site-lisp/elpa/go-mode-1.6.0"); err != nil {
		t.Fatal("go-mode for Emacs is not installed: run scripts/setup-and-test, or apt-get install -y --no-install-recommends elpa-go-mode")
	}
	h := newHarness(t)
	goFixture(t, h)
	gemkittest.Git(t, h.ws, "init", "-q")
	plugin, err := filepath.Abs("emacs")
	if err != nil {
		t.Fatal(err)
	}
	d := startEmacsLSP(t, h, func(serverDir string) string {
		return fmt.Sprintf(emacsLSPModeInit, elispString(serverDir), elispString(gopls), elispString(plugin), elispString(gemkittest.Gemkit(t)))
	})
	t.Cleanup(func() {
		_ = exec.Command(d.client, "-s", d.esock, "--eval", "(kill-emacs)").Run()
		codeinteltest.WaitGone(t, h.ws, "gopls")
	})
	discoveryFile(t, h, d.PID())
	d.keys(t, "", "C-x", "C-f")
	d.minibuffer(t, h.path("main.go"))
	waitFor(t, "lsp-mode's gopls serving main.go", func() bool {
		return string(d.eval(t, `(if-let ((b (get-file-buffer `+elispString(h.path("main.go"))+`)))
  (with-current-buffer b (if (and (bound-and-true-p lsp-mode) (lsp-workspaces) (eq (lsp--workspace-status (car (lsp-workspaces))) 'initialized)) t :false)) :false)`)) == "true"
	})
	mcp := startMCP(t, h)
	text := mcp.tool(t, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`)
	if !strings.Contains(text, "greet/greet.go:16:6: func Greet(name string) string {") {
		t.Errorf("definition of Greet:\n%s", text)
	}
	text = mcp.tool(t, codeintel.ToolReferences, `{"symbol":"Store.Total"}`)
	if !strings.Contains(text, "2 references to Store.Total") {
		t.Errorf("references of Total:\n%s", text)
	}
	askMore(t, mcp)
	if n := codeinteltest.Procs("gopls", h.ws); len(n) != 1 {
		t.Errorf("%d gopls run in the workspace, want Emacs's alone", len(n))
	}
	if n := codeinteltest.Brokers(h.ws); len(n) != 0 {
		t.Errorf("gemkit mcp started a broker of its own servers: %v", n)
	}
}

// vimALERC is a ~/.vimrc with ALE running gopls for Go files, as its
// documentation sets it up, and gemkit's plugin.
const vimALERC = `set nocompatible hidden
filetype plugin on
packadd! ale
let g:ale_linters = {'go': ['gopls']}
let g:ale_go_gopls_executable = %s
let &runtimepath = %s . ',' . &runtimepath
let g:gemkit_cmd = %s
let g:gemkit_args = ['-v']
`

// TestVimALECodeIntel: Vim 9 with ALE 3.3 running gopls and gemkit's
// plugin answers through gemkit mcp: a definition found from a use, a
// function added and not saved found by name, the references of a method
// in a file Vim has not open; gopls runs once, ALE's.
func TestVimALECodeIntel(t *testing.T) {
	gopls := codeinteltest.Gopls(t)
	bin := requireEditor(t, "vim", "vim-nox")
	tmux := requireEditor(t, "tmux", "tmux")
	if _, err := os.Stat("/usr/share/vim-ale"); err != nil {
		t.Fatal("ALE is not installed: run scripts/setup-and-test, or apt-get install -y vim-ale")
	}
	h := newHarness(t)
	goFixture(t, h)
	plugin, err := filepath.Abs("vim")
	if err != nil {
		t.Fatal(err)
	}
	rc := fmt.Sprintf(vimALERC, vimString(gopls), vimString(plugin), vimString(gemkittest.Gemkit(t)))
	if err := os.WriteFile(filepath.Join(h.home, ".vimrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := fmt.Sprintf("let g:gemkit_test_channel = ch_open('127.0.0.1:%d', {'mode': 'json', 'waittime': 5000})", ln.Addr().(*net.TCPAddr).Port)
	d := &vimDriver{tmuxPane: startTmux(t, h, tmux, "vim", bin, "-i", "NONE", "-n", "-c", open, h.path("main.go"))}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	select {
	case c := <-accepted:
		d.ch = &vimChannel{conn: c, dec: json.NewDecoder(c)}
		t.Cleanup(func() { c.Close() })
	case <-time.After(waitTimeout):
		t.Fatal("vim did not open the test channel")
	}
	if err := json.Unmarshal(d.eval(t, "getpid()"), &d.pid); err != nil {
		t.Fatal(err)
	}
	d.exited = watchExit(d.pid)
	t.Cleanup(func() {
		d.keys(t, "", "Escape")
		d.keys(t, ":qa!", "Enter")
		select {
		case <-d.exited:
		case <-time.After(waitTimeout):
			t.Errorf("vim did not quit")
		}
		codeinteltest.WaitGone(t, h.ws, "gopls")
	})
	discoveryFile(t, h, d.PID())
	waitFor(t, "ALE's gopls for main.go", func() bool {
		return len(codeinteltest.Procs("gopls", h.ws)) == 1
	})

	mcp := startMCP(t, h)
	text := mcp.tool(t, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`)
	if !strings.Contains(text, "greet/greet.go:16:6: func Greet(name string) string {") {
		t.Errorf("definition of Greet:\n%s", text)
	}
	// A function added to greet.go's buffer (loaded, not saved).
	d.eval(t, `[bufadd(`+vimString(h.path("greet/greet.go"))+`), bufload(bufnr(`+vimString(h.path("greet/greet.go"))+`)), appendbufline(bufnr(`+vimString(h.path("greet/greet.go"))+`), '$', ['', '// Farewell says goodbye.', 'func Farewell(name string) string { return "Bye, " + name }'])]`)
	text = mcp.tool(t, codeintel.ToolDefinition, `{"symbol":"Farewell"}`)
	if !strings.Contains(text, `greet/greet.go:24:6: func Farewell(name string) string { return "Bye, " + name }`) {
		t.Errorf("definition of the unsaved function:\n%s", text)
	}
	text = mcp.tool(t, codeintel.ToolReferences, `{"symbol":"Store.Total"}`)
	if !strings.Contains(text, "2 references to Store.Total") {
		t.Errorf("references of Total:\n%s", text)
	}
	askMore(t, mcp)
	if n := codeinteltest.Procs("gopls", h.ws); len(n) != 1 {
		t.Errorf("%d gopls run in the workspace, want ALE's alone", len(n))
	}
	if n := codeinteltest.Brokers(h.ws); len(n) != 0 {
		t.Errorf("gemkit mcp started a broker of its own servers: %v", n)
	}
}

// askMore asks gemkit mcp the other questions of the tools (hover, an
// outline, implementations, a type definition, callers), which every editor passes on as it
// passes a definition.
func askMore(t *testing.T, mcp *mcpClient) {
	t.Helper()
	for _, q := range []struct{ tool, args, want string }{
		{codeintel.ToolHover, `{"symbol":"Store"}`, "Store holds items"},
		{codeintel.ToolSymbols, `{"file":"store/store.go"}`, "method"},
		{codeintel.ToolImplementations, `{"symbol":"Greeter"}`, "English"},
		{codeintel.ToolTypeDefinition, `{"symbol":"Store.items"}`, "store/store.go:7:6: type Item struct"},
		{codeintel.ToolCalls, `{"symbol":"Store.Add"}`, "function main at main.go"},
	} {
		if text := mcp.tool(t, q.tool, q.args); !strings.Contains(text, q.want) {
			t.Errorf("%s %s:\n%s", q.tool, q.args, text)
		}
	}
}
