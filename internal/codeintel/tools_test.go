package codeintel

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
)

func rng(line, char, endChar int) Range {
	return Range{Start: Position{Line: line, Character: char}, End: Position{Line: line, Character: endChar}}
}

// shop is the Go fixture with a fake Source answering as gopls v0.23.0
// answered on it (workspace symbols' names and containers, outlines'
// "(*Store).Add" names).
func shop(t testing.TB) (string, *fakeSource) {
	ws := codeinteltest.Fixture(t, "go")
	g, m, s := filepath.Join(ws, "greet", "greet.go"), filepath.Join(ws, "main.go"), filepath.Join(ws, "store", "store.go")
	greetFn := Symbol{Name: "Greet", Kind: KindFunction, Container: "example.com/shop/greet", Location: Location{Path: g, Range: rng(15, 5, 10)}}
	f := &fakeSource{
		status: Status{Server: "gopls"},
		symbols: []Symbol{
			greetFn,
			{Name: "English.Greet", Kind: KindMethod, Container: "example.com/shop/greet", Location: Location{Path: g, Range: rng(12, 15, 20)}},
			{Name: "Greeter.Greet", Kind: KindMethod, Container: "example.com/shop/greet", Location: Location{Path: g, Range: rng(5, 1, 6)}},
			{Name: "New", Kind: KindFunction, Container: "example.com/shop/greet", Location: Location{Path: g, Range: rng(20, 5, 8)}},
			{Name: "New", Kind: KindFunction, Container: "example.com/shop/store", Location: Location{Path: s, Range: rng(17, 5, 8)}},
			{Name: "New", Kind: KindFunction, Container: "errors", Location: Location{Path: "/usr/local/go/src/errors/errors.go", Range: rng(63, 5, 8)}},
			{Name: "Store.Total", Kind: KindMethod, Container: "example.com/shop/store", Location: Location{Path: s, Range: rng(29, 16, 21)}},
			{Name: "GreenTeaGC", Kind: KindConstant, Container: "internal/goexperiment", Location: Location{Path: "/usr/local/go/src/internal/goexperiment/exp_greenteagc_on.go", Range: rng(6, 6, 16)}},
		},
		outline: map[string][]Symbol{
			s: {
				{Name: "Item", Kind: KindStruct, Detail: "struct{...}", Location: Location{Path: s, Range: Range{Start: Position{Line: 6, Character: 5}, End: Position{Line: 9, Character: 1}}}, Selection: rng(6, 5, 9),
					Children: []Symbol{{Name: "Name", Kind: KindField, Detail: "string", Location: Location{Path: s, Range: rng(7, 1, 13)}, Selection: rng(7, 1, 5)}}},
				{Name: "New", Kind: KindFunction, Detail: "func() *Store", Location: Location{Path: s, Range: rng(17, 0, 37)}, Selection: rng(17, 5, 8)},
				{Name: "(*Store).Add", Kind: KindMethod, Detail: "func(it Item) error", Location: Location{Path: s, Range: Range{Start: Position{Line: 20, Character: 0}, End: Position{Line: 26, Character: 1}}}, Selection: rng(20, 16, 19)},
			},
		},
		defs: map[DocPos][]Location{
			// greet.Greet on main.go:15.
			{Path: m, Pos: Position{Line: 14, Character: 19}}: {{Path: g, Range: rng(15, 5, 10)}},
			// fmt.Println on main.go:13 and 15.
			{Path: m, Pos: Position{Line: 12, Character: 6}}: {{Path: "/usr/local/go/src/fmt/print.go", Range: rng(313, 5, 12)}},
		},
		refs: map[DocPos][]Location{
			{Path: g, Pos: Position{Line: 15, Character: 5}}: {
				{Path: m, Range: rng(14, 19, 24)},
				{Path: g, Range: rng(15, 5, 10)},
			},
		},
		hovers: map[DocPos]Hover{
			{Path: g, Pos: Position{Line: 15, Character: 5}}: {Text: "```go\nfunc Greet(name string) string\n```\n\nGreet greets name in English."},
		},
		diags: map[string][]Diagnostic{},
	}
	return ws, f
}

func newTestTools(t *testing.T, ws string, src Source, opts Options) *Tools {
	t.Helper()
	tools, err := NewTools(src, ws, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tools.Close() })
	return tools
}

func call(t *testing.T, tools *Tools, name, args string) (string, bool) {
	t.Helper()
	return tools.Call(context.Background(), name, json.RawMessage(args))
}

func TestTools(t *testing.T) {
	ws, src := shop(t)
	tools := newTestTools(t, ws, src, Options{})
	cases := []struct {
		name, tool, args string
		isErr            bool
		want             []string // substrings, in order
		not              []string
	}{
		{name: "definition by bare name prefers the function", tool: ToolDefinition, args: `{"symbol":"Greet"}`,
			want: []string{"Greet (function, greet/greet.go:16:6) is defined at:", "the same name also names English.Greet (method, greet/greet.go:13:16)", "greet/greet.go:16:6: func Greet(name string) string {"}},
		{name: "definition of a method by qualified name", tool: ToolDefinition, args: `{"symbol":"English.Greet"}`,
			want: []string{"English.Greet (method, greet/greet.go:13:16) is defined at:", "greet/greet.go:13:16: func (English) Greet(name string) string"}, not: []string{"also names"}},
		{name: "a receiver as Go writes it", tool: ToolDefinition, args: `{"symbol":"(*Store).Total"}`,
			want: []string{"store/store.go:30:17: func (s *Store) Total() int {"}},
		{name: "ambiguous name lists the candidates", tool: ToolDefinition, args: `{"symbol":"New"}`, isErr: true,
			want: []string{"New names 2 declarations; give file (one that declares or uses it), or qualify the name:", "New (function, greet/greet.go:21:6) in example.com/shop/greet", "New (function, store/store.go:18:6) in example.com/shop/store"},
			not:  []string{"errors.go"}},
		{name: "a package qualifier picks one", tool: ToolDefinition, args: `{"symbol":"store.New"}`,
			want: []string{"store/store.go:18:6: func New() *Store { return &Store{} }"}},
		{name: "the file picks one", tool: ToolDefinition, args: `{"symbol":"New","file":"store/store.go"}`,
			want: []string{"New (function, store/store.go:18:6) is defined at:"}},
		{name: "a method named in its file's outline", tool: ToolDefinition, args: `{"symbol":"Store.Add","file":"store/store.go"}`,
			want: []string{"Store.Add (method, store/store.go:21:17)", "store/store.go:21:17: func (s *Store) Add(it Item) error {"}},
		{name: "definition from a call site, by name", tool: ToolDefinition, args: `{"symbol":"Greet","file":"main.go"}`,
			want: []string{"Greet (used at main.go:15:20) is defined at:", "greet/greet.go:16:6: func Greet(name string) string {"}},
		{name: "definition outside the workspace is named so", tool: ToolDefinition, args: `{"symbol":"Println","file":"main.go"}`,
			want: []string{"/usr/local/go/src/fmt/print.go:314:6", "[outside the workspace: the Go standard library]"}},
		{name: "definition by position", tool: ToolDefinition, args: `{"file":"main.go","line":15,"column":20}`,
			want: []string{"main.go:15:20 is defined at:", "greet/greet.go:16:6"}},
		{name: "a position as strings", tool: ToolDefinition, args: `{"file":"main.go","line":"15","column":"20"}`,
			want: []string{"greet/greet.go:16:6"}},
		{name: "the symbol on a line", tool: ToolDefinition, args: `{"symbol":"Greet","file":"main.go","line":15}`,
			want: []string{"Greet at main.go:15:20 is defined at:", "greet/greet.go:16:6"}},
		{name: "unknown name with suggestions", tool: ToolDefinition, args: `{"symbol":"Gret"}`, isErr: true,
			want: []string{"no declaration named Gret in the workspace; similar names: Greet, English.Greet, Greeter.Greet, New, Store.Total"}, not: []string{"GreenTeaGC"}},
		{name: "references grouped by file", tool: ToolReferences, args: `{"symbol":"Greet"}`,
			want: []string{"2 references to Greet (function, greet/greet.go:16:6) (its declaration included), in 2 files:", "greet/greet.go\n  16:6: func Greet(name string) string {\nmain.go\n  15:20: fmt.Println(greet.Greet(\"world\"), s.Total())"}},
		{name: "hover", tool: ToolHover, args: `{"symbol":"Greet"}`,
			want: []string{"Greet (function, greet/greet.go:16:6):", "func Greet(name string) string", "Greet greets name in English."}},
		{name: "outline", tool: ToolSymbols, args: `{"file":"store/store.go"}`,
			want: []string{"store/store.go: 4 declarations (line:col kind name detail):", "  7:6 struct Item struct{...}\n    8:2 field Name string\n  18:6 function New func() *Store\n  21:17 method (*Store).Add func(it Item) error"}},
		{name: "search, exact names and the workspace first", tool: ToolSymbols, args: `{"query":"New"}`,
			want: []string{"3 declarations match \"New\":", "greet/greet.go:21:6 function New (example.com/shop/greet)", "store/store.go:18:6 function New (example.com/shop/store)", "/usr/local/go/src/errors/errors.go:64:6 function New (errors) [outside the workspace: the Go standard library]"},
			not:  []string{"GreenTeaGC", "Greet"}},
		{name: "search, names holding the query", tool: ToolSymbols, args: `{"query":"gre"}`,
			want: []string{"4 declarations match \"gre\":", "GreenTeaGC"}, not: []string{"New", "Total"}},
		{name: "search, one name", tool: ToolSymbols, args: `{"query":"Total"}`,
			want: []string{"1 declaration matches \"Total\":", "store/store.go:30:17 method Store.Total"}, not: []string{"New"}},
		{name: "search, the server's fuzzy matches when no name holds the query", tool: ToolSymbols, args: `{"query":"Gt"}`,
			want: []string{"8 declarations match \"Gt\":"}},
		{name: "no problems", tool: ToolDiagnostics, args: `{"file":"main.go"}`, want: []string{"No problems reported in main.go."}},
		{name: "calls unsupported", tool: ToolCalls, args: `{"symbol":"Greet"}`, want: []string{"Nothing in the workspace calls Greet"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, isErr := call(t, tools, c.tool, c.args)
			if isErr != c.isErr {
				t.Fatalf("isError = %v, want %v:\n%s", isErr, c.isErr, got)
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("answer lacks (in order) %q:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("answer has %q:\n%s", n, got)
				}
			}
		})
	}
}

// Each bad input gets words a model can act on, and no question reaches
// a server with it.
func TestToolsBadInput(t *testing.T) {
	ws, src := shop(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "x.go"), []byte("package x\n"), 0o644)
	os.Symlink(filepath.Join(outside, "x.go"), filepath.Join(ws, "link.go"))
	fifoErr := mkfifo(filepath.Join(ws, "fifo.go"))
	tools := newTestTools(t, ws, src, Options{})
	cases := []struct{ name, tool, args, want string }{
		{"nothing given", ToolDefinition, `{}`, "name the symbol (symbol), or give file, line and column of a place it occurs"},
		{"null arguments", ToolReferences, `null`, "name the symbol (symbol), or give file, line and column of a place it occurs"},
		{"not an object", ToolDefinition, `["Greet"]`, `the arguments of code_definition must be a JSON object, not ["Greet"]`},
		{"unknown argument", ToolDefinition, `{"name":"Greet"}`, `unknown argument "name"; this tool takes symbol, file, line, column`},
		{"wrong type", ToolDefinition, `{"symbol":3}`, `argument "symbol": expected a string, got a number`},
		{"line not a number", ToolDefinition, `{"file":"main.go","line":"ten","column":1}`, `argument "line": "ten" is not a whole number`},
		{"line without file", ToolDefinition, `{"symbol":"Greet","line":3}`, "line needs file: give the file the line is in"},
		{"column without line", ToolDefinition, `{"file":"main.go","column":3}`, "column needs line (and file)"},
		{"file only", ToolHover, `{"file":"main.go"}`, "give symbol, or line and column in main.go"},
		{"line only", ToolHover, `{"file":"main.go","line":3}`, "give column, or the symbol on line 3 of main.go"},
		{"path outside", ToolDefinition, `{"symbol":"x","file":"../x.go"}`, "../x.go is outside the workspace (" + ws + "): only its files can be asked about"},
		{"absolute path outside", ToolDiagnostics, `{"file":"/etc/passwd"}`, "/etc/passwd is outside the workspace (" + ws + "): only its files can be asked about"},
		{"link out", ToolDiagnostics, `{"file":"link.go"}`, "link.go leads outside the workspace (" + ws + ") through a symbolic link"},
		{"not saved yet", ToolDefinition, `{"symbol":"Greet","file":"new.go"}`, "new.go does not exist in the workspace; a file open but never saved in an editor must be saved first (language servers read files from disk)"},
		{"a folder", ToolSymbols, `{"file":"greet"}`, "greet is a folder; give a file"},
		{"a fifo", ToolSymbols, `{"file":"fifo.go"}`, "fifo.go is not a regular file"},
		{"line past the end", ToolDefinition, `{"file":"main.go","line":40,"column":1}`, "line 40 is not in main.go, which has 16 lines"},
		{"line zero", ToolDefinition, `{"file":"main.go","line":0,"column":1}`, "line 0 is not in main.go, which has 16 lines; lines count from 1"},
		{"column zero", ToolDefinition, `{"file":"main.go","line":11,"column":0}`, "column 0 is not on line 11 of main.go, which has 17 characters: s := store.New(); columns count from 1"},
		{"column past the end", ToolDefinition, `{"file":"main.go","line":11,"column":99}`, "column 99 is not on line 11 of main.go, which has 17 characters: s := store.New()"},
		{"symbol not on the line", ToolDefinition, `{"symbol":"Greet","file":"main.go","line":11}`, "Greet does not occur on line 11 of main.go: s := store.New()"},
		{"symbols: neither", ToolSymbols, `{}`, "give file (to outline it) or query (to search the workspace)"},
		{"symbols: both", ToolSymbols, `{"file":"main.go","query":"x"}`, "give file (to outline it) or query (to search the workspace), not both"},
		{"bad direction", ToolCalls, `{"symbol":"Greet","direction":"up"}`, `direction is incoming (who calls it) or outgoing (what it calls), not "up"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "a fifo" && fifoErr != nil {
				t.Skipf("no named pipes on this system (%v); Unix, where CI runs, has them", fifoErr)
			}
			src.asked = nil
			got, isErr := call(t, tools, c.tool, c.args)
			if !isErr || !strings.Contains(got, c.want) {
				t.Fatalf("got (isError %v):\n%s\nwant it to contain:\n%s", isErr, got, c.want)
			}
			for _, m := range src.asked {
				if m != "DocumentSymbols" && m != "WorkspaceSymbols" {
					t.Errorf("the server was asked %s", m)
				}
			}
		})
	}
}

// A Source's failures reach the model in words.
func TestToolsSourceErrors(t *testing.T) {
	ws, src := shop(t)
	tools := newTestTools(t, ws, src, Options{})
	src.errs = map[string]error{"WorkspaceSymbols": &NoServerError{Language: "Go", Reason: "no language server for Go files: gopls is not on PATH; install it with go install golang.org/x/tools/gopls@latest"}}
	got, isErr := call(t, tools, ToolDefinition, `{"symbol":"Greet"}`)
	if !isErr || got != "no language server for Go files: gopls is not on PATH; install it with go install golang.org/x/tools/gopls@latest" {
		t.Fatalf("got %v %q", isErr, got)
	}
	src.errs = map[string]error{"IncomingCalls": ErrUnsupported}
	got, isErr = call(t, tools, ToolCalls, `{"symbol":"Greet"}`)
	if !isErr || !strings.Contains(got, "does not offer a call hierarchy; use code_references instead") {
		t.Fatalf("got %v %q", isErr, got)
	}
	src.errs = map[string]error{"References": &ServerError{Server: "gopls", Reason: "it exited twice (exit status 2: panic: boom); it is not started again until gemkit restarts"}}
	got, isErr = call(t, tools, ToolReferences, `{"symbol":"Greet"}`)
	if !isErr || got != "gopls: it exited twice (exit status 2: panic: boom); it is not started again until gemkit restarts" {
		t.Fatalf("got %v %q", isErr, got)
	}
}

// A server that never answers is bounded by the tools' timeout.
func TestToolsTimeout(t *testing.T) {
	ws, _ := shop(t)
	tools := newTestTools(t, ws, &hanging{}, Options{Timeout: 50 * time.Millisecond})
	got, isErr := call(t, tools, ToolDefinition, `{"symbol":"Greet"}`)
	if !isErr || got != "gopls did not answer within 50ms (it may still be loading the workspace); ask again shortly" {
		t.Fatalf("got %v %q", isErr, got)
	}
}

// hanging is a Source whose server never answers a question.
type hanging struct{ fakeSource }

func (*hanging) WorkspaceSymbols(ctx context.Context, _ string) ([]Symbol, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (*hanging) Status(context.Context, string) (Status, error) { return Status{Server: "gopls"}, nil }

// Answers are bounded: past MaxItems or MaxChars, the rest is counted,
// with the number of files and how to narrow the question.
func TestToolsBounded(t *testing.T) {
	ws, src := shop(t)
	g, m := filepath.Join(ws, "greet", "greet.go"), filepath.Join(ws, "main.go")
	var many []Location
	for i := range 30 {
		many = append(many, Location{Path: g, Range: rng(i%20, 0, 1)}, Location{Path: m, Range: rng(i%15, 0, 1)})
	}
	many = append(many, Location{Path: filepath.Join(ws, "store", "store.go"), Range: rng(1, 0, 1)})
	src.refs[DocPos{Path: g, Pos: Position{Line: 15, Character: 5}}] = many
	tools := newTestTools(t, ws, src, Options{MaxItems: 10})
	got, _ := call(t, tools, ToolReferences, `{"symbol":"Greet"}`)
	if !strings.HasSuffix(got, "[26 more not shown in 3 files: ask about one file's uses with code_references and file, line and column there, or use code_calls for callers]") {
		t.Errorf("count limit:\n%s", got)
	}
	tools = newTestTools(t, ws, src, Options{MaxChars: 300})
	got, _ = call(t, tools, ToolReferences, `{"symbol":"Greet"}`)
	if len(got) > 300+200 || !strings.Contains(got, "more not shown in") {
		t.Errorf("size limit (%d bytes):\n%s", len(got), got)
	}
}

func TestToolsIndexingNote(t *testing.T) {
	ws, src := shop(t)
	src.status = Status{Server: "gopls", Indexing: "Loading packages..."}
	src.symbols = nil
	tools := newTestTools(t, ws, src, Options{})
	got, _ := call(t, tools, ToolDefinition, `{"symbol":"Greet"}`)
	want := "no declaration named Greet in the workspace\n[gopls is still indexing (Loading packages...): the answer may be incomplete; ask again shortly]"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestToolsDiagnostics(t *testing.T) {
	ws, src := shop(t)
	m, s := filepath.Join(ws, "main.go"), filepath.Join(ws, "store", "store.go")
	src.diags[m] = []Diagnostic{
		{Range: rng(14, 35, 40), Severity: SevWarning, Source: "unusedresult", Message: "result of Total is not used"},
		{Range: rng(10, 1, 2), Severity: SevError, Source: "compiler", Code: "UndeclaredName", Message: "undefined: x"},
	}
	src.diags[s] = []Diagnostic{{Range: rng(3, 8, 16), Severity: SevHint, Message: "errors could be\nfmt"}}
	tools := newTestTools(t, ws, src, Options{})
	got, _ := call(t, tools, ToolDiagnostics, `{}`)
	want := fmt.Sprintf(`3 problems in the workspace: 1 error, 1 warning, 1 other:
main.go:11:2: error: undefined: x (compiler UndeclaredName)
    s := store.New()
main.go:15:36: warning: result of Total is not used (unusedresult)
    fmt.Println(greet.Greet("world"), s.Total())
store/store.go:4:9: hint: errors could be fmt
    import "errors"`)
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestSplitName(t *testing.T) {
	for in, want := range map[string][2]string{
		"Greet":                  {"", "Greet"},
		"(*Store).Add":           {"Store", "Add"},
		"(English).Greet":        {"English", "Greet"},
		"greet.New":              {"greet", "New"},
		"std::vector::push_back": {"std::vector", "push_back"},
		"add(int, int)":          {"", "add"},
		"(*List[T]).Push":        {"List", "Push"},
		"Store#add":              {"Store", "add"},
		"example.com/shop/store": {"example.com/shop", "store"},
		" Greet ":                {"", "Greet"},
	} {
		q, n := splitName(in)
		if q != want[0] || n != want[1] {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", in, q, n, want[0], want[1])
		}
	}
}

func TestColumns(t *testing.T) {
	line := "x := \"é😀\" + y"
	// y is the 13th character; before it, 😀 takes two UTF-16 units.
	if got := utf16Col(line, 12); got != 13 {
		t.Errorf("utf16Col = %d", got)
	}
	if got := runeCol(line, 13); got != 12 {
		t.Errorf("runeCol = %d", got)
	}
	occ := findIdent(lines{"fmt.Println(greet.Greet(x), Greeter, aGreet)"}, "Greet", 10)
	if len(occ) != 1 || occ[0].col != 18 || occ[0].qualified != "greet" {
		t.Errorf("findIdent = %+v", occ)
	}
}

// editing is a Source whose diagnostics are one set while it sees a
// file's old text, another once it reads the disk.
type editing struct {
	fakeSource
	before, after map[string][]Diagnostic
}

func (e *editing) Changed(_ context.Context, ch []Change) error {
	if ch[0].Text != nil {
		e.diags = e.before
	} else {
		e.diags = e.after
	}
	return nil
}

func TestAfterEdit(t *testing.T) {
	ws, _ := shop(t)
	m, g := filepath.Join(ws, "main.go"), filepath.Join(ws, "greet", "greet.go")
	old := "package greet\n"
	src := &editing{
		fakeSource: fakeSource{status: Status{Server: "gopls"}},
		before: map[string][]Diagnostic{
			g: {{Range: rng(2, 0, 1), Severity: SevError, Message: "already broken"}},
		},
		after: map[string][]Diagnostic{
			g: {
				{Range: rng(5, 0, 1), Severity: SevError, Message: "already broken"},
				{Range: rng(15, 0, 1), Severity: SevHint, Message: "a hint is not news"},
			},
			m: {{Range: rng(14, 19, 24), Severity: SevError, Code: "WrongArgCount", Source: "compiler", Message: "not enough arguments in call to greet.Greet"}},
		},
	}
	tools := newTestTools(t, ws, src, Options{})
	got := tools.AfterEdit(context.Background(), g, &old, nil)
	want := `gopls reports 1 new problem after this edit of greet/greet.go:
main.go:15:20: error: not enough arguments in call to greet.Greet (compiler WrongArgCount)
    fmt.Println(greet.Greet("world"), s.Total())`
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// What to do about a file's problems follows the new ones.
	src.fixes = map[string]string{m: "what to do"}
	if got := tools.AfterEdit(context.Background(), g, &old, nil); got != want+"\n[what to do]" {
		t.Errorf("with a fix, got:\n%s", got)
	}
	src.fixes = nil
	src.after = src.before
	if got := tools.AfterEdit(context.Background(), g, &old, nil); got != "" {
		t.Errorf("nothing new: %q", got)
	}
	src.errs = map[string]error{"Status": &NoServerError{Reason: "none"}}
	if got := tools.AfterEdit(context.Background(), g, &old, nil); got != "" {
		t.Errorf("no server: %q", got)
	}
}

// A file whose problems the server has not reported since the latest
// change is answered with what it reported, and says so.
func TestToolsDiagnosticsStale(t *testing.T) {
	ws, src := shop(t)
	m := filepath.Join(ws, "main.go")
	src.stale = map[string]string{m: "gopls has not reported on this file since another file changed: the problems may be stale; ask again shortly"}
	tools := newTestTools(t, ws, src, Options{})
	got, _ := call(t, tools, ToolDiagnostics, `{"file":"main.go"}`)
	want := "No problems reported in main.go.\n[main.go: gopls has not reported on this file since another file changed: the problems may be stale; ask again shortly]"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// What to do about files' problems (a module gopls cannot download in
// the sandbox) follows them, once for files that share it.
func TestToolsDiagnosticsFix(t *testing.T) {
	ws, src := shop(t)
	m, g := filepath.Join(ws, "main.go"), filepath.Join(ws, "greet", "greet.go")
	imp := func(line int) Diagnostic {
		return Diagnostic{Range: rng(line, 0, 1), Severity: SevError, Message: `could not import example.com/gone (no required module provides package "example.com/gone")`}
	}
	const fix = "gemkit runs gopls in its sandbox without network, so it cannot download example.com/gone@v1.0.0"
	src.diags = map[string][]Diagnostic{m: {imp(2)}, g: {imp(2)}}
	src.fixes = map[string]string{m: fix, g: fix}
	tools := newTestTools(t, ws, src, Options{})
	for _, args := range []string{`{}`, `{"file":"main.go"}`} {
		got, _ := call(t, tools, ToolDiagnostics, args)
		if !strings.HasSuffix(got, "\n["+fix+"]") || strings.Count(got, fix) != 1 {
			t.Errorf("%s: got:\n%s\nwant it to end with the fix, once", args, got)
		}
	}
}

// A name matches case first: the declaration written as asked wins over
// those that differ in case only, which are offered beside it; with no
// exact one, those are the answer.
func TestToolsNameCase(t *testing.T) {
	ws, src := shop(t)
	s := filepath.Join(ws, "store", "store.go")
	src.symbols = append(src.symbols, Symbol{Name: "greet", Kind: KindVariable, Container: "example.com/shop/store", Location: Location{Path: s, Range: rng(4, 4, 9)}})
	tools := newTestTools(t, ws, src, Options{})
	got, isErr := call(t, tools, ToolDefinition, `{"symbol":"Greet"}`)
	if isErr || !strings.Contains(got, "Greet (function, greet/greet.go:16:6) is defined at:") ||
		!strings.Contains(got, "(names that differ in case only: greet (variable, store/store.go:5:5); ask for one by its name as written there)") {
		t.Fatalf("Greet:\n%s", got)
	}
	got, isErr = call(t, tools, ToolDefinition, `{"symbol":"GREET"}`)
	if !isErr || !strings.Contains(got, "GREET names 2 declarations") || !strings.Contains(got, "greet (variable, store/store.go:5:5)") {
		t.Fatalf("GREET, which nothing is named as written:\n%s", got)
	}
}

// A file's outline is asked of the server once while the file is
// unchanged on disk, and again once it changed.
func TestToolsOutlineCached(t *testing.T) {
	ws, src := shop(t)
	tools := newTestTools(t, ws, src, Options{})
	count := func() int {
		n := 0
		for _, m := range src.asked {
			if m == "DocumentSymbols" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if got, isErr := call(t, tools, ToolDefinition, `{"symbol":"Store.Add","file":"store/store.go"}`); isErr || !strings.Contains(got, "store/store.go:21:17") {
			t.Fatalf("definition: %s", got)
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("the outline was asked %d times for 3 questions about an unchanged file", n)
	}
	s := filepath.Join(ws, "store", "store.go")
	b, _ := os.ReadFile(s)
	os.WriteFile(s, append(b, "\n// More.\n"...), 0o644)
	call(t, tools, ToolDefinition, `{"symbol":"Store.Add","file":"store/store.go"}`)
	if n := count(); n != 2 {
		t.Fatalf("after the file changed, the outline was asked %d times in all, want 2", n)
	}
}

// TestHoverOneRequest: once the file's outline is known, a hover of
// gemkit's own (confined) servers is one Hover request whether the model
// gives the position or the name in the declaring file, so the two forms
// cost the same (bench/codeintel measures them side by side).
func TestHoverOneRequest(t *testing.T) {
	ws, src := shop(t)
	g := filepath.Join(ws, "greet", "greet.go")
	src.outline[g] = []Symbol{{Name: "Greet", Kind: KindFunction, Detail: "func(name string) string",
		Location: Location{Path: g, Range: Range{Start: Position{Line: 15, Character: 0}, End: Position{Line: 17, Character: 1}}}, Selection: rng(15, 5, 10)}}
	tools := newTestTools(t, ws, confinedSource{src}, Options{})
	for _, args := range []string{
		`{"symbol":"Greet","file":"greet/greet.go"}`, // asks for the outline once
		`{"file":"greet/greet.go","line":16,"column":6}`,
		`{"symbol":"Greet","file":"greet/greet.go"}`,
	} {
		src.mu.Lock()
		src.asked = nil
		src.mu.Unlock()
		if got, isErr := call(t, tools, ToolHover, args); isErr || !strings.Contains(got, "func Greet(name string) string") {
			t.Fatalf("%s: %s", args, got)
		}
		src.mu.Lock()
		asked := slices.DeleteFunc(slices.Clone(src.asked), func(m string) bool { return m == "DocumentSymbols" })
		src.mu.Unlock()
		if !slices.Equal(asked, []string{"Hover"}) {
			t.Errorf("%s asked %v, want one Hover", args, asked)
		}
	}
}

// TestToolsLoadError: a search by name that finds nothing, when the
// server reported that it could not load the workspace, says so and what
// to do, not that the name is not declared.
func TestToolsLoadError(t *testing.T) {
	const loadErr = "go: github.com/spf13/pflag@v1.0.9: module lookup disabled by GOPROXY=off; run `go mod download` in /ws (gemkit's servers have no network: gopls reads the modules in /home/u/go/pkg/mod)"
	for _, tt := range []struct {
		name    string
		status  Status
		symbols bool
		tool    string
		args    string
		want    string
	}{
		{"definition by name", Status{Server: "gopls", LoadError: loadErr}, false, ToolDefinition, `{"symbol":"Command.Execute"}`,
			"no declaration named Command.Execute found: gopls could not load the workspace: " + loadErr},
		{"symbol search", Status{Server: "gopls", LoadError: loadErr}, false, ToolSymbols, `{"query":"Execute"}`,
			`No declarations match "Execute": gopls could not load the workspace: ` + loadErr + "."},
		{"an editor's server", Status{Server: "Neovim's gopls", LoadError: "go: errors parsing go.mod"}, false, ToolDefinition, `{"symbol":"Execute"}`,
			"no declaration named Execute found: Neovim's gopls could not load the workspace: go: errors parsing go.mod"},
		{"loaded", Status{Server: "gopls"}, false, ToolDefinition, `{"symbol":"Command.Execute"}`,
			"no declaration named Command.Execute in the workspace"},
		{"found all the same", Status{Server: "gopls", LoadError: loadErr}, true, ToolDefinition, `{"symbol":"Greet"}`,
			"greet/greet.go:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws, src := shop(t)
			src.status = tt.status
			if !tt.symbols {
				src.symbols = nil
			}
			tools := newTestTools(t, ws, src, Options{})
			got, _ := call(t, tools, tt.tool, tt.args)
			if !strings.Contains(got, tt.want) || (!tt.symbols && got != tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
