package codeintel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// secret is the text of every credential file of the quoting tests: no
// answer may carry it.
const secret = "1//0gSECRET-refresh-token"

// quoteFixture is a workspace whose file names, by absolute path, a fake
// home's closed credentials, as a tool could write it (a .ts file
// importing ~/.gemini/oauth_creds.json with resolveJsonModule on): the
// Source answers with locations in those files, as typescript-language-
// server does (its definition of refresh_token is the key's line in the
// JSON file).
type quoteFixture struct {
	ws, home, goroot     string
	main, gemini, codex  string
	stdlib, linkedGemini string
	src                  *fakeSource
	mainPos              func(line, col int) DocPos
}

func newQuoteFixture(t *testing.T) *quoteFixture {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &quoteFixture{ws: filepath.Join(tmp, "ws"), home: filepath.Join(tmp, "home"), goroot: filepath.Join(tmp, "goroot")}
	f.main = filepath.Join(f.ws, "main.ts")
	f.gemini = filepath.Join(f.home, ".gemini", "oauth_creds.json")
	f.codex = filepath.Join(f.home, ".codex", "auth.json")
	f.stdlib = filepath.Join(f.goroot, "src", "fmt", "print.go")
	f.linkedGemini = filepath.Join(f.ws, "creds", "oauth_creds.json")
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(f.main, "import creds from \""+f.gemini+"\";\nexport const t = creds.refresh_token;\n")
	write(f.gemini, "{\n  \"refresh_token\": \""+secret+"\"\n}\n")
	write(f.codex, "{\n  \"tokens\": {\"refresh_token\": \""+secret+"\"}\n}\n")
	write(f.stdlib, "package fmt\n\nfunc Println(a ...any) (n int, err error) {\n")
	write(filepath.Join(f.goroot, "bin", "go"), "")
	// A link in the workspace to the closed folder.
	if err := os.Symlink(filepath.Join(f.home, ".gemini"), filepath.Join(f.ws, "creds")); err != nil {
		t.Fatal(err)
	}
	f.mainPos = func(line, col int) DocPos { return DocPos{Path: f.main, Pos: Position{Line: line, Character: col}} }
	key := Location{Path: f.gemini, Range: rng(1, 2, 17)}
	f.src = &fakeSource{
		defs: map[DocPos][]Location{
			f.mainPos(1, 22): {key},
			f.mainPos(1, 0):  {{Path: f.codex, Range: rng(1, 14, 29)}},
			f.mainPos(1, 7):  {{Path: f.stdlib, Range: rng(2, 5, 12)}},
			f.mainPos(1, 16): {{Path: f.linkedGemini, Range: rng(1, 2, 17)}},
		},
		refs: map[DocPos][]Location{
			f.mainPos(1, 22): {{Path: f.main, Range: rng(1, 22, 35)}, key},
		},
		hovers: map[DocPos]Hover{
			f.mainPos(1, 22): {Text: "(property) \"refresh_token\": \"" + secret + "\""},
		},
		incoming: map[DocPos][]Call{
			f.mainPos(1, 22): {{Symbol: Symbol{Name: "load", Kind: KindFunction, Location: key}, Sites: []Location{key}}},
		},
		diags: map[string][]Diagnostic{
			f.gemini: {{Range: rng(1, 20, 30), Severity: SevError, Message: "Unexpected token '" + secret + "'"}},
		},
	}
	return f
}

func (f *quoteFixture) tools(t *testing.T, q Quoting) *Tools {
	return newTestTools(t, f.ws, f.src, Options{Quoting: q})
}

// TestQuotingClosedAndOutside reproduces an answer that carried a closed
// file's text: a definition, references, a call hierarchy, a hover and
// diagnostics in ~/.gemini/oauth_creds.json and ~/.codex/auth.json, named
// directly or through a link in the workspace. Each names the file and
// says in words that its text is not shown; the control quotes a file of
// a read-only root (a Go installation) and of the workspace.
func TestQuotingClosedAndOutside(t *testing.T) {
	f := newQuoteFixture(t)
	closed := func() []string { return []string{filepath.Join(f.home, ".gemini")} }
	roots := func() []string { return []string{f.goroot} }
	notRoot := "[not quoted: outside the workspace and the language servers' read-only folders, so its text is not shown]"
	isClosed := "[not quoted: a closed path: no tool may read it, so no answer quotes it]"
	cases := []struct {
		name, tool, args string
		q                Quoting
		want             []string
	}{
		{"definition in a closed file", ToolDefinition, `{"file":"main.ts","line":2,"column":23}`,
			Quoting{Roots: roots, Closed: closed}, []string{f.gemini + ":2:3 [outside the workspace] " + isClosed}},
		{"definition in a closed file, no closed list", ToolDefinition, `{"file":"main.ts","line":2,"column":23}`,
			Quoting{Roots: roots}, []string{f.gemini + ":2:3 [outside the workspace] " + notRoot}},
		{"definition in another agent's credentials", ToolDefinition, `{"file":"main.ts","line":2,"column":1}`,
			Quoting{Roots: roots, Closed: closed}, []string{f.codex + ":2:15 [outside the workspace] " + notRoot}},
		{"definition through a link in the workspace", ToolDefinition, `{"file":"main.ts","line":2,"column":17}`,
			Quoting{Roots: roots, Closed: closed}, []string{"creds/oauth_creds.json:2:3 " + isClosed}},
		{"references", ToolReferences, `{"file":"main.ts","line":2,"column":23}`,
			Quoting{Roots: roots, Closed: closed}, []string{"main.ts\n  2:23: export const t = creds.refresh_token;\n" + f.gemini + " [outside the workspace] " + isClosed + "\n  2:3"}},
		{"call sites", ToolCalls, `{"file":"main.ts","line":2,"column":23}`,
			Quoting{Roots: roots, Closed: closed}, []string{"function load at " + f.gemini + ":2:3 [outside the workspace] " + isClosed + "\n  call at " + f.gemini + ":2:3"}},
		{"hover of a key declared in a closed file", ToolHover, `{"file":"main.ts","line":2,"column":23}`,
			Quoting{Roots: roots, Closed: closed}, []string{"is declared at " + f.gemini + ":2:3 [outside the workspace] " + isClosed + ": what the language server says of it is not shown either."}},
		{"diagnostics of a closed file", ToolDiagnostics, `{}`,
			Quoting{Roots: roots, Closed: closed}, []string{f.gemini + ":2:21: error: [message not quoted: a closed path"}},
		{"control: a read-only root is quoted", ToolDefinition, `{"file":"main.ts","line":2,"column":8}`,
			Quoting{Roots: roots, Closed: closed}, []string{f.stdlib + ":3:6: func Println(a ...any) (n int, err error) { [outside the workspace: the Go standard library]"}},
		{"control: no roots, nothing outside is quoted", ToolDefinition, `{"file":"main.ts","line":2,"column":8}`,
			Quoting{}, []string{f.stdlib + ":3:6 [outside the workspace: the Go standard library] " + notRoot}},
		{"control: the workspace is quoted", ToolReferences, `{"file":"main.ts","line":2,"column":23}`,
			Quoting{Closed: closed}, []string{"main.ts\n  2:23: export const t = creds.refresh_token;"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, isErr := call(t, f.tools(t, c.q), c.tool, c.args)
			if isErr {
				t.Fatalf("error: %s", got)
			}
			if strings.Contains(got, secret) {
				t.Fatalf("the answer carries the credential:\n%s", got)
			}
			rest := got
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("answer lacks (in order) %q:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

// TestQuotingClosedInWorkspace: a workspace that holds a closed folder
// (the home folder opened as the workspace) neither quotes its files nor
// answers about them, however they are named.
func TestQuotingClosedInWorkspace(t *testing.T) {
	f := newQuoteFixture(t)
	home := newTestTools(t, f.home, f.src, Options{Quoting: Quoting{Closed: func() []string { return []string{filepath.Join(f.home, ".gemini")} }}})
	for _, args := range []string{`{"file":".gemini/oauth_creds.json"}`, `{"file":".gemini/../.gemini/oauth_creds.json"}`} {
		got, isErr := call(t, home, ToolDiagnostics, args)
		if !isErr || !strings.Contains(got, ".gemini/oauth_creds.json is a closed path: no tool may read it") || strings.Contains(got, secret) {
			t.Errorf("%s: isError %v:\n%s", args, isErr, got)
		}
	}
	got, isErr := call(t, home, ToolSymbols, `{"file":".codex/auth.json"}`)
	if isErr || strings.Contains(got, secret) {
		t.Errorf("a file of the home workspace that is not closed: isError %v:\n%s", isErr, got)
	}
}

// TestQuotingRootLinkOut: a link inside a read-only root that leads out
// of it (to a closed file) is not followed.
func TestQuotingRootLinkOut(t *testing.T) {
	f := newQuoteFixture(t)
	link := filepath.Join(f.goroot, "src", "fmt", "creds.go")
	if err := os.Symlink(f.codex, link); err != nil {
		t.Fatal(err)
	}
	f.src.defs[f.mainPos(1, 7)] = []Location{{Path: link, Range: rng(1, 14, 29)}}
	got, _ := call(t, f.tools(t, Quoting{Roots: func() []string { return []string{f.goroot} }}), ToolDefinition, `{"file":"main.ts","line":2,"column":8}`)
	if strings.Contains(got, secret) || !strings.Contains(got, "not quoted") {
		t.Errorf("a link out of a root was followed:\n%s", got)
	}
}

// TestQuotingUnsaved: an editor's unsaved text of a file outside the
// roots is not quoted either.
func TestQuotingUnsaved(t *testing.T) {
	f := newQuoteFixture(t)
	src := withUnsaved{f.src, map[string]string{f.codex: "{\n  \"tokens\": \"" + secret + "\"\n}\n"}}
	tools := newTestTools(t, f.ws, src, Options{})
	got, _ := call(t, tools, ToolDefinition, `{"file":"main.ts","line":2,"column":1}`)
	if strings.Contains(got, secret) || !strings.Contains(got, "not quoted") {
		t.Errorf("an unsaved text outside the workspace was quoted:\n%s", got)
	}
}

// TestQuotes: the rule as callers that hand answers on themselves ask it.
func TestQuotes(t *testing.T) {
	f := newQuoteFixture(t)
	tools := f.tools(t, Quoting{Roots: func() []string { return []string{f.goroot} }, Closed: func() []string { return []string{filepath.Join(f.home, ".gemini")} }})
	for p, want := range map[string]bool{f.main: true, f.stdlib: true, f.gemini: false, f.codex: false, f.linkedGemini: false, "/nonexistent/x.go": false} {
		if ok, why := tools.Quotes(p); ok != want || (!ok && !strings.HasPrefix(why, "not quoted: ")) {
			t.Errorf("Quotes(%s) = %v %q, want %v", p, ok, why, want)
		}
	}
}

// BenchmarkQuoting: a warm definition answer (fake Source; in the
// workspace, and in the standard library, quoted from its root) with no
// closed list and with one of ten folders (asked again every closedTTL,
// as gemkit's wiring gives it), side by side.
func BenchmarkQuoting(b *testing.B) {
	ws, src := shop(b)
	tmp := b.TempDir()
	var closed []string
	for i := range 10 {
		closed = append(closed, filepath.Join(tmp, "closed", string(rune('a'+i))))
	}
	goroot := "/usr/local/go" // where the fake Source's standard library lies
	for _, c := range []struct {
		name string
		q    Quoting
	}{
		{"none", Quoting{Roots: func() []string { return []string{goroot} }}},
		{"closed", Quoting{Roots: func() []string { return []string{goroot} }, Closed: func() []string { return closed }}},
	} {
		tools, err := NewTools(src, ws, Options{Quoting: c.q})
		if err != nil {
			b.Fatal(err)
		}
		for what, args := range map[string]string{"workspace": `{"symbol":"Greet","file":"main.go"}`, "stdlib": `{"symbol":"Println","file":"main.go"}`} {
			b.Run(what+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if text, isErr := tools.Call(context.Background(), ToolDefinition, json.RawMessage(args)); isErr {
						b.Fatal(text)
					}
				}
			})
		}
		tools.Close()
	}
}

// TestQuotingUnsavedThroughLink: an editor's unsaved buffer of a file
// reached through a link in the workspace that leads to a closed folder
// is not quoted.
func TestQuotingUnsavedThroughLink(t *testing.T) {
	f := newQuoteFixture(t)
	src := withUnsaved{f.src, map[string]string{f.linkedGemini: "{\n  \"refresh_token\": \"" + secret + "\"\n}\n"}}
	for _, q := range []Quoting{{}, {Closed: func() []string { return []string{filepath.Join(f.home, ".gemini")} }}} {
		tools := newTestTools(t, f.ws, src, Options{Quoting: q})
		got, _ := call(t, tools, ToolDefinition, `{"file":"main.ts","line":2,"column":17}`)
		if strings.Contains(got, secret) || !strings.Contains(got, "not quoted") {
			t.Errorf("an unsaved buffer through a link out was quoted:\n%s", got)
		}
	}
}

// confinedSource is a fakeSource whose servers run in gemkit's sandbox.
type confinedSource struct{ *fakeSource }

func (confinedSource) Confined(context.Context) bool { return true }

// unconfinedNow is a Source that would be confined but whose answers
// come now from an editor's clients (internal/lspsource with an editor
// found).
type unconfinedNow struct{ *fakeSource }

func (unconfinedNow) Confined(context.Context) bool { return false }

// TestHoverConfinedAsksNoDefinition: a hover by position asks for the
// definition beside it only of a source whose servers could read a file
// no answer quotes (an editor's); gemkit's own, confined to what may be
// quoted, are spared the second request, but only while no editor
// answers (Confined is asked at each question).
func TestHoverConfinedAsksNoDefinition(t *testing.T) {
	f := newQuoteFixture(t)
	args := `{"file":"main.ts","line":2,"column":8}`
	for _, c := range []struct {
		name string
		src  func() Source
		defs bool
	}{
		{"an editor's", func() Source { return f.src }, true},
		{"confined", func() Source { return confinedSource{f.src} }, false},
		{"confined but an editor answers now", func() Source { return unconfinedNow{f.src} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.src.mu.Lock()
			f.src.asked = nil
			f.src.mu.Unlock()
			tl := newTestTools(t, f.ws, c.src(), Options{Quoting: Quoting{Roots: func() []string { return []string{f.goroot} }}})
			if got, isErr := call(t, tl, ToolHover, args); isErr {
				t.Fatalf("error: %s", got)
			}
			f.src.mu.Lock()
			defer f.src.mu.Unlock()
			if got := slices.Contains(f.src.asked, "Definition"); got != c.defs {
				t.Errorf("asked %v: Definition asked %v, want %v", f.src.asked, got, c.defs)
			}
		})
	}
}
