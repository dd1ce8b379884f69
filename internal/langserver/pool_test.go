package langserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/lspsource"
)

// tools is the code-intelligence tools over a Pool of the fixture of
// lang, with its servers found on path.
func tools(t *testing.T, lang, path string) (*codeintel.Tools, *Pool, string) {
	t.Helper()
	ws := codeinteltest.Fixture(t, lang)
	p, err := New(Options{Workspace: ws, Env: append(os.Environ(), "PATH="+path), LookPath: lookIn(path), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	// Answers quote what the servers' profiles read, as gemkit's own
	// tools do (internal/cli).
	env := append(os.Environ(), "PATH="+path)
	quoting := codeintel.Quoting{Roots: func() []string { return ReadRoots(Builtin(), ws, env) }}
	tl, err := codeintel.NewTools(source(p), ws, codeintel.Options{Timeout: 2 * time.Minute, Quoting: quoting})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl, p, ws
}

// lookIn finds commands in the folders of a PATH value.
func lookIn(path string) LookPath {
	return func(file string) (string, error) {
		for _, d := range filepath.SplitList(path) {
			p := filepath.Join(d, file)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", errors.New("not found")
	}
}

func ask(t *testing.T, tl *codeintel.Tools, tool, args string, want ...string) string {
	t.Helper()
	got, isErr := tl.Call(context.Background(), tool, json.RawMessage(args))
	t.Logf("%s %s (isError %v):\n%s", tool, args, isErr, got)
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s %s (isError %v):\n%s\nlacks (in order) %q", tool, args, isErr, got, w)
		}
		rest = rest[i+len(w):]
	}
	return got
}

// warm asks the first question of a server just started until it
// answers as want says, for up to two minutes: on a loaded machine a
// server can take longer to start and read the workspace than its Warmup
// or one question's bound (pyright took 6 s to start under load, and
// found nothing at 10 s; typescript-language-server let a workspace/symbol
// wait 20 s). The answers after it are asked once.
func warm(t *testing.T, tl *codeintel.Tools, tool, args string, want ...string) {
	t.Helper()
	// The real language server answers fully only once it has indexed,
	// and says nothing when.
	var got string
	var isErr bool
	if !gemkittest.Poll(2*time.Minute, 500*time.Millisecond, func() bool {
		got, isErr = tl.Call(context.Background(), tool, json.RawMessage(args))
		ok := !isErr
		for _, w := range want {
			ok = ok && strings.Contains(got, w)
		}
		if !ok {
			t.Logf("%s %s, not yet (isError %v): %s", tool, args, isErr, got)
		}
		return ok
	}) {
		t.Fatalf("%s %s (isError %v) never answered %q:\n%s", tool, args, isErr, want, got)
	}
}

// The real gopls behind the tools: names, call sites, positions, files
// outside the workspace, and diagnostics that follow files changed on
// disk.
func TestPoolGopls(t *testing.T) {
	codeinteltest.Gopls(t)
	tl, p, ws := tools(t, "go", os.Getenv("PATH"))
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet"}`,
		"Greet (function, greet/greet.go:16:6) is defined at:",
		"(the same name also names English.Greet (method, greet/greet.go:13:16), Greeter.Greet (method, greet/greet.go:6:2)",
		"greet/greet.go:16:6: func Greet(name string) string {")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`,
		"Greet (used at main.go:15:20) is defined at:", "greet/greet.go:16:6: func Greet(name string) string {")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"New"}`, "New names 2 declarations")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"store.New"}`, "store/store.go:18:6: func New() *Store { return &Store{} }")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Println","file":"main.go"}`, "src/fmt/print.go:", "[outside the workspace: the Go standard library]")
	ask(t, tl, codeintel.ToolReferences, `{"symbol":"Store.Add"}`,
		"2 references to Store.Add (method, store/store.go:21:17)", "main.go\n  12:14: if err := s.Add(", "store/store.go\n  21:17: func (s *Store) Add(it Item) error {")
	ask(t, tl, codeintel.ToolHover, `{"symbol":"Greet"}`, "Greet(name string) string", "Greet greets name in English.")
	ask(t, tl, codeintel.ToolImplementations, `{"symbol":"Greeter"}`, "1 implementation of Greeter", "greet/greet.go:10:6: type English struct{}")
	// Type definitions: a local variable's by position, a slice field's
	// element type, a function's result type, a method's result type in
	// the standard library.
	ask(t, tl, codeintel.ToolTypeDefinition, `{"file":"main.go","line":11,"column":2}`, "1 type definition of main.go:11:2:", "store/store.go:13:6: type Store struct {")
	ask(t, tl, codeintel.ToolTypeDefinition, `{"symbol":"Store.items"}`, "1 type definition of Store.items (field, store/store.go:14:2):", "store/store.go:7:6: type Item struct {")
	ask(t, tl, codeintel.ToolTypeDefinition, `{"symbol":"greet.New"}`, "greet/greet.go:5:6: type Greeter interface {")
	ask(t, tl, codeintel.ToolTypeDefinition, `{"symbol":"Store.Add"}`, "src/builtin/builtin.go:", "type error interface {", "[outside the workspace: the Go standard library]")
	ask(t, tl, codeintel.ToolCalls, `{"symbol":"Greet"}`, "Greet (function, greet/greet.go:16:6) is called by 1 function:", "function main", "call at main.go:15:20")
	ask(t, tl, codeintel.ToolCalls, `{"symbol":"main","direction":"outgoing"}`, "main (function, main.go:10:6) calls", "Println")
	ask(t, tl, codeintel.ToolSymbols, `{"file":"store/store.go"}`, "store/store.go: 8 declarations", "21:17 method (*Store).Add func(it Item) error")
	ask(t, tl, codeintel.ToolSymbols, `{"query":"Total"}`, "store/store.go:30:17 method Store.Total")
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"main.go"}`, "No problems reported in main.go.")

	// An agent writes an error into a file on disk, as Gemini CLI's
	// write_file does: the next answer reads it again.
	main := filepath.Join(ws, "main.go")
	text, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(text), "greet.Greet(", "greet.Gret(", 1)), 0o644)
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"main.go"}`, "1 problem in main.go: 1 error", "main.go:15:20: error: undefined: greet.Gret", "fmt.Println(greet.Gret(\"world\"), s.Total())")
	ask(t, tl, codeintel.ToolDiagnostics, `{}`, "1 problem in the workspace: 1 error", "main.go:15:20: error: undefined: greet.Gret")
	os.WriteFile(main, text, 0o644)
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"main.go"}`, "No problems reported in main.go.")

	// A file the servers never opened, changed on disk: its new
	// declaration is found (the watcher told gopls).
	os.WriteFile(filepath.Join(ws, "greet", "bye.go"), []byte("package greet\n\n// Bye says goodbye.\nfunc Bye() string { return \"bye\" }\n"), 0o644)
	// The real gopls finds a new file once it has read it, and says
	// nothing when.
	var got string
	if !gemkittest.Poll(time.Minute, 100*time.Millisecond, func() bool {
		var isErr bool
		got, isErr = tl.Call(context.Background(), codeintel.ToolDefinition, json.RawMessage(`{"symbol":"Bye"}`))
		return !isErr && strings.Contains(got, "greet/bye.go:4:6: func Bye() string")
	}) {
		t.Fatalf("a new file's declaration is not found: %s", got)
	}
	if s := p.Servers(); len(s) != 1 || s[0].Name != "gopls" || !s[0].Running {
		t.Fatalf("servers: %+v", s)
	}
}

// The real typescript-language-server with typescript 5, headless.
func TestPoolTypeScript(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "typescript-language-server")
	tl, _, ws := tools(t, "ts", codeinteltest.PathWith(bin))
	warm(t, tl, codeintel.ToolDefinition, `{"symbol":"greet"}`, "src/greet.ts:14:17")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"greet"}`, "greet (function, src/greet.ts:14:17) is defined at:", "src/greet.ts:14:17: export function greet(name: string): string {")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"greet","file":"src/main.ts"}`, "src/greet.ts:14:17")
	ask(t, tl, codeintel.ToolReferences, `{"symbol":"Store"}`, "references to Store", "src/main.ts", "src/store.ts")
	ask(t, tl, codeintel.ToolHover, `{"symbol":"total","file":"src/store.ts"}`, "total(): number", "The sum of the prices.")
	ask(t, tl, codeintel.ToolSymbols, `{"file":"src/store.ts"}`, "class Store", "method add")
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"src/main.ts"}`, "No problems reported in src/main.ts.")
	main := filepath.Join(ws, "src", "main.ts")
	text, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(text), "s.total()", "s.totl()", 1)), 0o644)
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"src/main.ts"}`, "1 problem in src/main.ts: 1 error", "Property 'totl' does not exist on type 'Store'")
	os.WriteFile(main, text, 0o644)
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"src/main.ts"}`, "No problems reported in src/main.ts.")
}

// The real pyright, headless.
func TestPoolPyright(t *testing.T) {
	bin := codeinteltest.NodeBin(t, "pyright-langserver")
	tl, _, _ := tools(t, "py", codeinteltest.PathWith(bin))
	warm(t, tl, codeintel.ToolDefinition, `{"symbol":"greet"}`, "shop/greet.py:11:5")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"greet"}`, "greet (function, shop/greet.py:11:5) is defined at:")
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"English.greet"}`, "shop/greet.py:7:9: def greet(self, name: str) -> str:")
	ask(t, tl, codeintel.ToolReferences, `{"symbol":"Store.total"}`, "2 references", "main.py", "shop/store.py")
	ask(t, tl, codeintel.ToolCalls, `{"symbol":"greet"}`, "called by")
}

// A language with no server installed, and one gemkit knows nothing of,
// are said with what to do.
func TestPoolNoServer(t *testing.T) {
	tl, _, ws := tools(t, "go", t.TempDir())
	got := ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`)
	if got != "no language server for Go files is installed (gemkit looks for it on PATH): gopls — install it with: go install golang.org/x/tools/gopls@latest (with Go 1.26, golang.org/x/tools/gopls@v0.23.0)" {
		t.Errorf("missing gopls: %s", got)
	}
	os.WriteFile(filepath.Join(ws, "notes.zig"), []byte("const x = 1;\n"), 0o644)
	got = ask(t, tl, codeintel.ToolSymbols, `{"file":"notes.zig"}`)
	if got != "gemkit knows no language server for .zig files; add one under the codeIntel object of gemkit's config file" {
		t.Errorf("unknown language: %s", got)
	}
}

// After an edit, the problems it brought, in the edited file and in the
// files that use it, and none that were there before.
func TestPoolAfterEdit(t *testing.T) {
	codeinteltest.Gopls(t)
	tl, _, ws := tools(t, "go", os.Getenv("PATH"))
	g := filepath.Join(ws, "greet", "greet.go")
	b, _ := os.ReadFile(g)
	old := string(b)
	// Something already wrong, before the edit: not reported.
	main := filepath.Join(ws, "main.go")
	mb, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(mb), "s.Total())", "s.Totl())", 1)), 0o644)
	ask(t, tl, codeintel.ToolDiagnostics, `{"file":"main.go"}`, "s.Totl undefined")
	edited := strings.Replace(old, "func Greet(name string) string {", "func Greet(name, lang string) string {", 1)
	os.WriteFile(g, []byte(edited), 0o644)
	got := tl.AfterEdit(context.Background(), g, &old, nil)
	t.Logf("after the edit:\n%s", got)
	for _, w := range []string{"gopls reports 1 new problem after this edit of greet/greet.go:", "main.go:15:33: error: not enough arguments in call to greet.Greet have (string) want (string, string) (compiler WrongArgCount)"} {
		if !strings.Contains(got, w) {
			t.Fatalf("lacks %q", w)
		}
	}
	if strings.Contains(got, "Totl undefined") {
		t.Fatal("an old problem is reported as new")
	}
	// A new file with an error.
	nf := filepath.Join(ws, "greet", "new.go")
	os.WriteFile(nf, []byte("package greet\n\nfunc broken() int { return \"x\" }\n"), 0o644)
	got = tl.AfterEdit(context.Background(), nf, nil, nil)
	if !strings.Contains(got, "gopls reports 1 new problem after this edit of greet/new.go:\ngreet/new.go:3:28: error: cannot use \"x\"") {
		t.Fatalf("new file:\n%s", got)
	}
}

// TestPoolAfterEditStarting: gemkit's own server says it is starting
// until a question starts it (lsp/clients' starting), so the first
// check after an edit tells its Starting, with gopls's name, and calls
// what it returned when done; the next check, gopls running, tells
// nothing.
func TestPoolAfterEditStarting(t *testing.T) {
	codeinteltest.Gopls(t)
	tl, p, ws := tools(t, "go", os.Getenv("PATH"))
	g := filepath.Join(ws, "greet", "greet.go")
	b, _ := os.ReadFile(g)
	old := string(b)
	if got := p.clients(g); len(got.Clients) != 1 || !got.Clients[0].Starting {
		t.Fatalf("lsp/clients before the first question: %+v", got)
	}
	var told []string
	starting := func(rel, server string) func() {
		told = append(told, "start "+rel+" "+server)
		return func() { told = append(told, "done") }
	}
	edited := strings.Replace(old, "func Greet(name string) string {", "func Greet(name, lang string) string {", 1)
	os.WriteFile(g, []byte(edited), 0o644)
	if got := tl.AfterEdit(context.Background(), g, &old, starting); !strings.Contains(got, "not enough arguments in call to greet.Greet") {
		t.Errorf("the check: %q", got)
	}
	if strings.Join(told, ", ") != "start greet/greet.go gopls, done" {
		t.Errorf("told %q", told)
	}
	if got := p.clients(g); len(got.Clients) != 1 || got.Clients[0].Starting {
		t.Errorf("lsp/clients with gopls running: %+v", got)
	}
	told = nil
	os.WriteFile(g, []byte(old), 0o644)
	tl.AfterEdit(context.Background(), g, &edited, starting)
	if len(told) != 0 {
		t.Errorf("gopls running, yet told %q", told)
	}
}

// A server that crashes is started again at the next question, once; a
// second crash leaves it stopped, and the tools say why.
func TestPoolCrashRestartsOnce(t *testing.T) {
	codeinteltest.Gopls(t)
	tl, p, _ := tools(t, "go", os.Getenv("PATH"))
	kill := func() {
		t.Helper()
		s := p.Servers()
		if len(s) != 1 || !s[0].Running {
			t.Fatalf("servers: %+v", s)
		}
		proc, _ := os.FindProcess(s[0].Pid)
		proc.Kill()
		// The pool notices the killed server on its own time.
		if !gemkittest.Poll(time.Minute, 10*time.Millisecond, func() bool { return !p.Servers()[0].Running }) {
			t.Fatal("the killed server is still counted as running")
		}
	}
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`, "greet/greet.go:16:6")
	kill()
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`, "greet/greet.go:16:6")
	if s := p.Servers(); s[0].Crashes != 1 || !s[0].Running {
		t.Fatalf("after one crash: %+v", s)
	}
	kill()
	got := ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`)
	if !strings.HasPrefix(got, "gopls: it crashed twice and is not started again until gemkit's language servers restart (when the last agent of this workspace goes); last: it exited (signal: killed)") {
		t.Fatalf("after two crashes: %s", got)
	}
}

// A server nobody asks for stops after the idle timeout, and starts
// again at the next question; stopping it is not a crash.
func TestPoolIdleStop(t *testing.T) {
	gopls := codeinteltest.Gopls(t)
	ws := codeinteltest.Fixture(t, "go")
	p, err := New(Options{Workspace: ws, Config: Config{IdleTimeout: "300ms"}, LookPath: lookIn(filepath.Dir(gopls))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tl, _ := codeintel.NewTools(source(p), ws, codeintel.Options{})
	defer tl.Close()
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`, "greet/greet.go:16:6")
	pid := p.Servers()[0].Pid
	// The idle stop is inside the pool, with a real gopls that synctest
	// cannot hold.
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return !p.Servers()[0].Running }) {
		t.Fatal("the idle server was not stopped")
	}
	if len(codeinteltest.Procs("gopls", ws)) != 0 {
		t.Fatal("gopls still runs after its idle stop")
	}
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet","file":"main.go"}`, "greet/greet.go:16:6")
	if s := p.Servers()[0]; !s.Running || s.Pid == pid || s.Crashes != 0 {
		t.Fatalf("after the idle stop: %+v", s)
	}
}

// Close stops every server: none is left running.
func TestPoolCloseLeavesNothing(t *testing.T) {
	codeinteltest.Gopls(t)
	tl, p, ws := tools(t, "go", os.Getenv("PATH"))
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet"}`, "greet/greet.go:16:6")
	if len(codeinteltest.Procs("gopls", ws)) != 1 {
		t.Fatal("gopls is not running")
	}
	p.Close()
	if n := codeinteltest.Procs("gopls", ws); len(n) != 0 {
		t.Fatalf("gopls left running: %v", n)
	}
}

// source is the Source of gemkit's own servers over p, in this process.
// poolTools are the code tools of p, a Pool made with opts (its
// Workspace the tools' too), both closed when the test ends.
func poolTools(t *testing.T, opts Options) (*codeintel.Tools, *Pool) {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	tl, err := codeintel.NewTools(source(p), opts.Workspace, codeintel.Options{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl, p
}

func source(p *Pool) codeintel.Source {
	return lspsource.New(nil, &lspsource.Clients{Conn: p, Confined: true})
}

// A function in a file written just before the question, which the
// watcher has seen but not reported yet (it lets a file settle), is found
// by name at once: the changes it has seen are reported first, as for
// diagnostics.
func TestPoolNameInFileJustWritten(t *testing.T) {
	codeinteltest.Gopls(t)
	tl, p, ws := tools(t, "go", os.Getenv("PATH"))
	ask(t, tl, codeintel.ToolDefinition, `{"symbol":"Greet"}`, "greet/greet.go:16:6")
	for _, c := range []struct{ file, name, want string }{
		{"greet/farewell.go", "Farewell", "greet/farewell.go:3:6"},
		{"store/audit.go", "Audit", "store/audit.go:3:6"},
	} {
		body := "package " + filepath.Dir(c.file) + "\n\nfunc " + c.name + "() string { return \"\" }\n"
		if err := os.WriteFile(filepath.Join(ws, c.file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// As after an agent's turn: the watcher has seen the write (a
		// loaded machine may run its goroutine late).
		if !gemkittest.Poll(time.Minute, time.Millisecond, p.watcher.Waiting) {
			t.Fatal("the watcher never saw the write")
		}
		ask(t, tl, codeintel.ToolDefinition, `{"symbol":"`+c.name+`"}`, c.want)
	}
}
