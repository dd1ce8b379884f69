package codeintel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// The tools' names, the same in `gemkit mcp` and in gemkit's agent.
const (
	ToolDefinition      = "code_definition"
	ToolReferences      = "code_references"
	ToolHover           = "code_hover"
	ToolImplementations = "code_implementations"
	ToolTypeDefinition  = "code_type_definition"
	ToolCalls           = "code_calls"
	ToolSymbols         = "code_symbols"
	ToolDiagnostics     = "code_diagnostics"
)

// Instructions tell a model what the tools are for, in a server's
// instructions or a system prompt.
var Instructions = instructions()

func instructions() string {
	var names []string
	for _, q := range questions() {
		names = append(names, q.Name)
	}
	list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	return "Code intelligence: the code_* tools answer from language servers (gopls, typescript-language-server, pyright, rust-analyzer, clangd): " + list + ". Name the symbol (symbol, with file to tell same-named ones apart) rather than counting lines and columns; prefer them to searching the files for where something is defined or used, and check code_diagnostics after changing code."
}

// Defaults of Options.
const (
	// DefaultTimeout bounds one tool call: a server that does not answer
	// by then is reported as such.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxChars bounds an answer's text (about 2,000 tokens).
	DefaultMaxChars = 8000
	// DefaultMaxItems bounds the locations, symbols or diagnostics one
	// answer lists.
	DefaultMaxItems = 50
)

// Options bound the tools' answers.
type Options struct {
	Timeout  time.Duration
	MaxChars int
	MaxItems int
	// Quoting is what answers may show the text of besides the
	// workspace's files; the zero Quoting shows no file outside the
	// workspace.
	Quoting Quoting
}

// Decl declares one tool: its name, a title, a description for the model
// and the JSON Schema of its arguments. Every tool only reads.
type Decl struct {
	Name        string
	Title       string
	Description string
	Schema      map[string]any
}

// Tools are the code-intelligence tools of one workspace, answering from
// a Source. They are safe for concurrent use.
type Tools struct {
	src  Source
	root *fsutil.Root
	w    where
	opts Options
	qt   *quoter

	// statuses caches what the Source said of a file's server for
	// statusTTL: an answer's note on indexing needs no round trip of its
	// own to a broker each time.
	statusMu sync.Mutex
	statuses map[string]cachedStatus

	// outlines caches files' outlines by their size and modification
	// time: a question by name in a file needs no second round trip to
	// the server while the file is unchanged.
	outlineMu sync.Mutex
	outlines  map[string]cachedOutline
}

type cachedOutline struct {
	mod  time.Time
	size int64
	syms []Symbol
}

// maxOutlines bounds the outlines kept.
const maxOutlines = 256

// outline is the Source's DocumentSymbols of the workspace file at abs,
// from the cache while the file on disk is unchanged since (and has no
// unsaved text in the editor that answers).
func (q *query) outlineOf(ctx context.Context, abs string) ([]Symbol, error) {
	t := q.t
	name, err := t.root.Rel(abs)
	if err != nil {
		return t.src.DocumentSymbols(ctx, abs)
	}
	if _, err := q.fc.get(abs); err == nil && q.fc.texts != nil {
		if _, unsaved := q.fc.texts[abs]; unsaved {
			return t.src.DocumentSymbols(ctx, abs)
		}
	}
	fi, err := t.root.Stat(name)
	if err != nil {
		return t.src.DocumentSymbols(ctx, abs)
	}
	t.outlineMu.Lock()
	c, ok := t.outlines[abs]
	t.outlineMu.Unlock()
	if ok && c.mod.Equal(fi.ModTime()) && c.size == fi.Size() {
		return c.syms, nil
	}
	syms, err := t.src.DocumentSymbols(ctx, abs)
	if err != nil {
		return syms, err
	}
	t.outlineMu.Lock()
	if t.outlines == nil || len(t.outlines) >= maxOutlines {
		t.outlines = map[string]cachedOutline{}
	}
	t.outlines[abs] = cachedOutline{mod: fi.ModTime(), size: fi.Size(), syms: syms}
	t.outlineMu.Unlock()
	return syms, nil
}

type cachedStatus struct {
	st  Status
	err error
	at  time.Time
}

// statusTTL is how long a server's status is taken as still true.
const statusTTL = time.Second

// status is the Source's Status of path, cached for statusTTL.
func (t *Tools) status(ctx context.Context, path string) (Status, error) {
	t.statusMu.Lock()
	c, ok := t.statuses[path]
	t.statusMu.Unlock()
	if ok && time.Since(c.at) < statusTTL {
		return c.st, c.err
	}
	st, err := t.src.Status(ctx, path)
	if ctx.Err() != nil || st.Starting {
		// A server starting is running after the next question: that is
		// not kept.
		return st, err
	}
	t.statusMu.Lock()
	if t.statuses == nil || len(t.statuses) > 1000 {
		t.statuses = map[string]cachedStatus{}
	}
	t.statuses[path] = cachedStatus{st, err, time.Now()}
	t.statusMu.Unlock()
	return st, err
}

// NewTools returns the tools of the workspace folder, answering from src.
func NewTools(src Source, workspace string, opts Options) (*Tools, error) {
	real, err := fsutil.Workspace(workspace)
	if err != nil {
		return nil, err
	}
	root, err := fsutil.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxChars <= 0 {
		opts.MaxChars = DefaultMaxChars
	}
	if opts.MaxItems <= 0 {
		opts.MaxItems = DefaultMaxItems
	}
	t := &Tools{src: src, root: root, w: where{root: root, goRoots: &sync.Map{}}, opts: opts,
		qt: &quoter{q: opts.Quoting, workspace: root.Dir()}}
	// The closed list (a few milliseconds: the running servers are
	// looked for) is ready by the first answer, which waits for the
	// server far longer.
	go t.qt.closedList()
	return t, nil
}

// Close releases the workspace folder and the read-only roots.
func (t *Tools) Close() error {
	t.qt.close()
	return t.root.Close()
}

// Workspace is the workspace folder (symbolic links resolved).
func (t *Tools) Workspace() string { return t.root.Dir() }

// Source is the Source the tools ask.
func (t *Tools) Source() Source { return t.src }

// The arguments' descriptions, shared by the tools that find a symbol.
var (
	argSymbol = map[string]any{"type": "string", "description": "the symbol's name: a function, type, method, field, variable or constant; qualify it to pick one of several (Type.Method, package.Func)"}
	argFile   = map[string]any{"type": "string", "description": "a file (relative to the workspace) that declares or uses the symbol: it tells same-named symbols apart; required with line"}
	argLine   = map[string]any{"type": "integer", "description": "1-based line in file where the symbol occurs", "minimum": 1}
	argColumn = map[string]any{"type": "integer", "description": "1-based column (in characters) of the symbol on line; without it, symbol is looked for on the line", "minimum": 1}
)

func positionSchema(extra map[string]any) map[string]any {
	props := map[string]any{"symbol": argSymbol, "file": argFile, "line": argLine, "column": argColumn}
	for k, v := range extra {
		props[k] = v
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

const byName = " Name the symbol (symbol), with file to tell same-named ones apart, or give file, line and column (1-based) of a place it occurs."

// A question is one code_* tool: its declaration, the arguments it
// takes and how it answers. questions is the one table of them: the
// tools' declarations, Has, Call and Instructions read it, so that a new
// question is one entry (and, for one that answers with the locations
// of an LSP request, no code elsewhere: see locating).
type question struct {
	Decl
	// args are the properties of the arguments object it takes.
	args []string
	// answer answers it; the arguments are checked already.
	answer func(*query, context.Context) (string, error)
}

// positionArgs are the arguments of a question about a symbol.
var positionArgs = []string{"symbol", "file", "line", "column"}

// questions are the tools, in the order they are declared. It is a
// function so that each caller gets schemas of its own.
func questions() []question {
	return []question{
		{Decl: Decl{Name: ToolDefinition, Title: "Go to definition",
			Description: "Find where a symbol is defined: path:line:col and the source line." + byName + " Works from a call site: file may be a file that only uses the symbol.",
			Schema:      positionSchema(nil)},
			args: positionArgs, answer: (*query).definition},
		{Decl: Decl{Name: ToolReferences, Title: "Find references",
			Description: "Find every use of a symbol in the workspace (its declaration included), grouped by file, with the source lines." + byName,
			Schema:      positionSchema(nil)},
			args: positionArgs, answer: (*query).references},
		{Decl: Decl{Name: ToolHover, Title: "Type and documentation",
			Description: "Show a symbol's type or signature and its documentation." + byName,
			Schema:      positionSchema(nil)},
			args: positionArgs, answer: (*query).hover},
		locating{Tool: ToolImplementations, Title: "Find implementations",
			Description: "Find the types that implement an interface, or the methods that implement an interface method (and, for a concrete type, the interfaces it implements), where the language server offers it.",
			Method:      "textDocument/implementation", Ask: Source.Implementations,
			One: "implementation", Many: "implementations"}.question(),
		locating{Tool: ToolTypeDefinition, Title: "Go to type definition",
			Description: "Find where the type of a symbol is declared: a variable's, a field's or a parameter's type, a function's result types (a pointer or a slice leads to the named type in it), where the language server offers it.",
			Method:      "textDocument/typeDefinition", One: "type definition", Many: "type definitions"}.question(),
		{Decl: Decl{Name: ToolCalls, Title: "Call hierarchy",
			Description: "List the functions that call a function (direction incoming, the default) or the functions it calls (outgoing), with where each call is made, where the language server offers it." + byName,
			Schema: positionSchema(map[string]any{"direction": map[string]any{"type": "string", "enum": []string{"incoming", "outgoing"},
				"description": "incoming: who calls it (default); outgoing: what it calls"}})},
			args: append(positionArgs[:len(positionArgs):len(positionArgs)], "direction"), answer: (*query).calls},
		{Decl: Decl{Name: ToolSymbols, Title: "Symbols",
			Description: "With file: the outline of a file (its declarations with line numbers, nested). With query: search the workspace's declarations by name. Give one of them.",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"file":  map[string]any{"type": "string", "description": "a file, relative to the workspace, to outline"},
				"query": map[string]any{"type": "string", "description": "a name, or part of one, to search the workspace for"},
			}, "additionalProperties": false}},
			args: []string{"file", "query"}, answer: (*query).symbols},
		{Decl: Decl{Name: ToolDiagnostics, Title: "Diagnostics",
			Description: "List the errors and warnings the language servers report: for one file (file), or for the whole workspace as far as the servers have checked it (no argument). Files changed on disk are read again first.",
			Schema: map[string]any{"type": "object", "properties": map[string]any{
				"file": map[string]any{"type": "string", "description": "a file, relative to the workspace; leave out for the whole workspace"},
			}, "additionalProperties": false}},
			args: []string{"file"}, answer: (*query).diagnostics},
	}
}

// questionNamed is the question of the tool name.
func questionNamed(name string) (question, bool) {
	for _, q := range questions() {
		if q.Name == name {
			return q, true
		}
	}
	return question{}, false
}

// Decls are the tools' declarations.
func (t *Tools) Decls() []Decl {
	qs := questions()
	out := make([]Decl, len(qs))
	for i, q := range qs {
		out[i] = q.Decl
	}
	return out
}

// Has reports whether name is one of the tools.
func (t *Tools) Has(name string) bool {
	_, ok := questionNamed(name)
	return ok
}

// args are every tool's arguments; each tool checks those it takes.
type args struct {
	Symbol    string  `json:"symbol"`
	File      string  `json:"file"`
	Line      flexInt `json:"line"`
	Column    flexInt `json:"column"`
	Direction string  `json:"direction"`
	Query     string  `json:"query"`
}

// flexInt is a positive integer a model may also write as a string
// ("12").
type flexInt struct {
	n   int
	set bool
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		return nil
	}
	s = strings.Trim(s, `"`)
	n, err := strconv.Atoi(s)
	if err != nil {
		if fl, ferr := strconv.ParseFloat(s, 64); ferr == nil && fl == float64(int(fl)) {
			n, err = int(fl), nil
		}
	}
	if err != nil {
		return fmt.Errorf("%s is not a whole number", string(b))
	}
	f.n, f.set = n, true
	return nil
}

// Call runs the tool name with its JSON arguments and returns the text
// for the model; isError marks a question that could not be answered
// (the text says why and what to do). It never panics on a model's
// input and never runs longer than Options.Timeout.
func (t *Tools) Call(ctx context.Context, name string, raw json.RawMessage) (text string, isError bool) {
	a, props, err := decodeArgs(name, raw)
	if err != nil {
		return err.Error(), true
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	qn, ok := questionNamed(name)
	if !ok {
		return fmt.Sprintf("there is no code-intelligence tool %q", name), true
	}
	q := &query{t: t, fc: t.fileCache(ctx), a: a}
	if err = q.checkProps(props, qn.args...); err == nil {
		text, err = qn.answer(q, ctx)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return q.timeoutText(), true
		}
		return q.errText(err), true
	}
	return text, false
}

// decodeArgs reads the arguments object, and the names of the
// properties it has.
func decodeArgs(tool string, raw json.RawMessage) (args, []string, error) {
	var a args
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return a, nil, nil
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return a, nil, fmt.Errorf("the arguments of %s must be a JSON object, not %s", tool, clip(s, 80))
	}
	names := make([]string, 0, len(props))
	for k, v := range props {
		names = append(names, k)
		var err error
		switch k {
		case "symbol":
			err = json.Unmarshal(v, &a.Symbol)
		case "file":
			err = json.Unmarshal(v, &a.File)
		case "line":
			err = json.Unmarshal(v, &a.Line)
		case "column":
			err = json.Unmarshal(v, &a.Column)
		case "direction":
			err = json.Unmarshal(v, &a.Direction)
		case "query":
			err = json.Unmarshal(v, &a.Query)
		}
		if err != nil {
			return a, nil, fmt.Errorf("argument %q: %v", k, cleanJSONErr(err))
		}
	}
	return a, names, nil
}

// cleanJSONErr words a decoding error without Go's type names.
func cleanJSONErr(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("expected a %s, got a %s", map[string]string{"string": "string", "flexInt": "whole number"}[te.Type.Name()], te.Value)
	}
	return err.Error()
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// query is one tool call under way.
type query struct {
	t  *Tools
	fc *fileCache
	a  args
	// server names the server that answered, once known, for messages.
	server string
	// path is the file the question is about, once known, for the
	// status note.
	path string
}

// checkProps refuses arguments the tool does not take.
func (q *query) checkProps(props []string, allowed ...string) error {
	for _, p := range props {
		ok := false
		for _, a := range allowed {
			ok = ok || p == a
		}
		if !ok {
			return fmt.Errorf("unknown argument %q; this tool takes %s", p, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// resolveFile turns the model's file argument into an absolute path in
// the workspace, and the name the answers show.
func (q *query) resolveFile(p string) (abs, rel string, err error) {
	if strings.TrimSpace(p) == "" || strings.ContainsRune(p, 0) {
		return "", "", fmt.Errorf("%q is not a file name", p)
	}
	name, err := q.t.root.Rel(p)
	if err != nil {
		return "", "", fmt.Errorf("%s is outside the workspace (%s): only its files can be asked about", p, q.t.root.Dir())
	}
	fi, err := q.t.root.Stat(name)
	switch {
	case errors.Is(err, fsutil.ErrOutside):
		return "", "", fmt.Errorf("%s leads outside the workspace (%s) through a symbolic link: only its files can be asked about", p, q.t.root.Dir())
	case errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("%s does not exist in the workspace; a file open but never saved in an editor must be saved first (language servers read files from disk)", filepath.ToSlash(name))
	case err != nil:
		return "", "", fmt.Errorf("%s: %v", filepath.ToSlash(name), err)
	case fi.IsDir():
		return "", "", fmt.Errorf("%s is a folder; give a file", filepath.ToSlash(name))
	case !fi.Mode().IsRegular():
		return "", "", fmt.Errorf("%s is not a regular file", filepath.ToSlash(name))
	}
	abs = q.t.root.Path(name)
	if why, held := q.fc.withheld(abs); held {
		return "", "", fmt.Errorf("%s is %s", filepath.ToSlash(name), strings.TrimPrefix(why, "not quoted: "))
	}
	q.path = abs
	return abs, filepath.ToSlash(name), nil
}

// errText words a failure for the model.
func (q *query) errText(err error) string {
	return describeErr(err)
}

func (q *query) timeoutText() string {
	who := "the language server"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if st, err := q.t.status(ctx, q.path); err == nil && st.Server != "" {
		who = st.Server
	}
	return fmt.Sprintf("%s did not answer within %s (it may still be loading the workspace); ask again shortly", who, q.t.opts.Timeout)
}

// note is a line to add to an answer when the server answering for the
// file is still indexing: its answer may be incomplete.
func (q *query) note(ctx context.Context) string {
	st, err := q.t.status(ctx, q.path)
	if err != nil || st.Indexing == "" {
		return ""
	}
	return fmt.Sprintf("\n[%s is still indexing (%s): the answer may be incomplete; ask again shortly]", serverOf(st), st.Indexing)
}

// unloaded says why a search by name found nothing when the server
// could not load the workspace (a module missing, with no network to
// fetch it: "no declaration named X" would send an agent looking for
// a typo), with what to do; "" otherwise.
func (q *query) unloaded(ctx context.Context) string {
	st, err := q.t.status(ctx, q.path)
	if err != nil || st.LoadError == "" {
		return ""
	}
	return fmt.Sprintf("%s could not load the workspace: %s", serverOf(st), st.LoadError)
}

// serverOf names the server a Status describes.
func serverOf(st Status) string {
	if st.Server == "" {
		return "the language server"
	}
	return st.Server
}
