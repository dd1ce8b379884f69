// Package codeintel answers a model's questions about code: where a
// symbol is defined, where it is used, what it is (hover), what a file or
// the workspace declares, what is wrong (diagnostics), what implements an
// interface and who calls whom. The tools of `gemkit mcp` and of gemkit's
// own agent are built here, on one interface, Source. Its one
// implementation is internal/lspsource's, which asks sets of language
// clients through the editor protocol's language requests: the editor's
// own (through its companion) when one can, else gemkit's own servers
// (internal/langserver, shared by every agent of a workspace through
// internal/lspbroker); internal/workspaceintel puts them together.
//
// The tools are one table, questions in tools.go. A new question whose
// answer is the locations of an LSP request the editors' plugins already
// carry (ide.LSPMethods) is one entry there (a locating): the Source
// asks it by its method (Locator). A question of another kind is a
// method of Source (here), its request and answer in
// internal/lspsource/source.go, and its entry in tools.go.
//
// A Source speaks in LSP's terms (0-based lines, UTF-16 columns, ranges,
// locations with absolute paths), so that any language client can be one
// with little translation. The tools speak the model's: symbols by name,
// workspace-relative path:line:col, the source line, answers grouped by
// file and bounded in size.
package codeintel

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// Position and Range are LSP's (0-based lines, UTF-16 columns), shared
// with the editor protocol's package.
type (
	Position = ide.Position
	Range    = ide.Range
)

// Location is a range of a file. Path is absolute; a server's location in
// a document that is not a file (a URI of another scheme, such as a
// decompiled class) has Path "" and its URI.
type Location struct {
	Path  string `json:"path,omitempty"`
	URI   string `json:"uri,omitempty"`
	Range Range  `json:"range"`
}

// DocPos is a position in a file (Path absolute).
type DocPos struct {
	Path string   `json:"path"`
	Pos  Position `json:"pos"`
}

// SymbolKind is LSP's SymbolKind (1 File … 26 TypeParameter).
type SymbolKind int

var symbolKinds = [...]string{"", "file", "module", "namespace", "package", "class", "method", "property",
	"field", "constructor", "enum", "interface", "function", "variable", "constant", "string", "number",
	"boolean", "array", "object", "key", "null", "enum member", "struct", "event", "operator", "type parameter"}

// String is the kind in words ("function", "struct").
func (k SymbolKind) String() string {
	if k > 0 && int(k) < len(symbolKinds) {
		return symbolKinds[k]
	}
	return "symbol"
}

// Symbol kinds the tools treat specially.
const (
	KindFile        SymbolKind = 1
	KindModule      SymbolKind = 2
	KindNamespace   SymbolKind = 3
	KindPackage     SymbolKind = 4
	KindClass       SymbolKind = 5
	KindMethod      SymbolKind = 6
	KindProperty    SymbolKind = 7
	KindField       SymbolKind = 8
	KindConstructor SymbolKind = 9
	KindInterface   SymbolKind = 11
	KindFunction    SymbolKind = 12
	KindVariable    SymbolKind = 13
	KindConstant    SymbolKind = 14
	KindEnumMember  SymbolKind = 22
	KindStruct      SymbolKind = 23
	KindEvent       SymbolKind = 24
	KindOperator    SymbolKind = 25
)

// Symbol is a declaration: from a file's outline (DocumentSymbols, with
// Children) or from a workspace search (WorkspaceSymbols, flat, with
// Container).
type Symbol struct {
	Name string     `json:"name"`
	Kind SymbolKind `json:"kind"`
	// Detail is what the server adds to the name (a signature, a type).
	Detail string `json:"detail,omitempty"`
	// Container names the enclosing declaration (a type of a method, a
	// package), when known.
	Container string `json:"container,omitempty"`
	// Location is the whole declaration (for a workspace symbol, what the
	// server gave, often the name only).
	Location Location `json:"location"`
	// Selection is the range of the name itself, where a position request
	// about the symbol is made; the zero Range when not known.
	Selection Range    `json:"selection"`
	Children  []Symbol `json:"children,omitempty"`
}

// NamePos is the position of the symbol's name: Selection's start when
// known, else the start of Location.
func (s Symbol) NamePos() Position {
	if s.Selection != (Range{}) {
		return s.Selection.Start
	}
	return s.Location.Range.Start
}

// The diagnostics are gemkit's one diagnostic type (ide.Diagnostic): in
// memory in LSP's terms; as JSON in the editor protocol's form.
type (
	Severity        = ide.Severity
	Diagnostic      = ide.Diagnostic
	FileDiagnostics = ide.FileDiagnostics
)

// The severities.
const (
	SevError   = ide.SevError
	SevWarning = ide.SevWarning
	SevInfo    = ide.SevInfo
	SevHint    = ide.SevHint
)

// Hover is what a server says about the symbol at a position: its type or
// signature and its documentation, as Markdown or plain text.
type Hover struct {
	Text  string `json:"text"`
	Range *Range `json:"range,omitempty"`
}

// Call is one end of a call relation: the function that calls the one
// asked about (IncomingCalls), or one it calls (OutgoingCalls).
type Call struct {
	Symbol Symbol `json:"symbol"`
	// Sites are where the calls are made: in the caller for an incoming
	// call, in the function asked about for an outgoing one.
	Sites []Location `json:"sites,omitempty"`
}

// Change tells a Source that a file's text changed.
type Change struct {
	// Path is absolute.
	Path string `json:"path"`
	// Text is the text the Source is to see now, as if unsaved; nil means
	// the file on disk (just written, or deleted when it is gone).
	Text *string `json:"text,omitempty"`
}

// Status is what a Source says of the server that answers for a file.
type Status struct {
	// Server names it ("gopls v0.23.0", "Neovim's gopls").
	Server string `json:"server,omitempty"`
	// Indexing, when not empty, says what the server is still doing
	// ("Loading packages…"): answers may be incomplete until it is done.
	Indexing string `json:"indexing,omitempty"`
	// LoadError, when not empty, says why the server could not load the
	// workspace, with what to do: its answers lack what it could not
	// load, and a name it does not find may be declared all the same.
	LoadError string `json:"loadError,omitempty"`
	// Starting says that the server is not running yet: the next
	// question about the file starts it (seconds, for gopls).
	Starting bool `json:"starting,omitempty"`
}

// Source answers the questions of the tools. Paths are absolute; the
// tools check that those they pass lie in the workspace, and name the
// ones a Source answers with that lie outside it.
//
// A method returns a *NoServerError when this Source has no server for
// the file's language (the editor has no client for it; no language
// server is installed); ErrUnsupported when the server does not offer
// what is asked. Answers reflect the files as the Source's servers see
// them; a Source keeps them in step with the disk (or the editor's
// buffers), so a file an agent wrote is read again before an answer.
//
// An implementation must be safe for concurrent use. New optional
// abilities are separate interfaces a Source may also implement, so that
// this one stays as it is.
type Source interface {
	// Status describes the server that answers for path ("" for the
	// workspace as a whole).
	Status(ctx context.Context, path string) (Status, error)
	// Definition is where the symbol at a position is declared.
	Definition(ctx context.Context, at DocPos) ([]Location, error)
	// Implementations are the types implementing the interface at a
	// position, or the methods implementing the method there.
	Implementations(ctx context.Context, at DocPos) ([]Location, error)
	// References are the uses of the symbol at a position, its
	// declaration included.
	References(ctx context.Context, at DocPos) ([]Location, error)
	// Hover is the type and documentation of the symbol at a position.
	Hover(ctx context.Context, at DocPos) (Hover, error)
	// DocumentSymbols is the outline of a file.
	DocumentSymbols(ctx context.Context, path string) ([]Symbol, error)
	// WorkspaceSymbols searches the workspace's declarations by name
	// (servers match loosely: the tools filter).
	WorkspaceSymbols(ctx context.Context, query string) ([]Symbol, error)
	// IncomingCalls are the functions calling the one at a position.
	IncomingCalls(ctx context.Context, at DocPos) ([]Call, error)
	// OutgoingCalls are the functions the one at a position calls.
	OutgoingCalls(ctx context.Context, at DocPos) ([]Call, error)
	// Diagnostics are the current problems of the files at paths, or with
	// no paths of every file the Source knows problems of: current means
	// found in the files' latest text (a Source waits, bounded, for its
	// server to look at a change). Each file asked about is in the
	// answer, with no diagnostics when it has none.
	Diagnostics(ctx context.Context, paths []string) ([]FileDiagnostics, error)
	// Changed tells the Source of files that changed (an agent wrote
	// them), before it is next asked.
	Changed(ctx context.Context, changes []Change) error
}

// ErrUnsupported is the answer of a Source whose server does not offer
// what was asked (call hierarchy, implementations).
var ErrUnsupported = errors.New("not offered by the language server")

// NoServerError says a Source has no server for a file's language.
type NoServerError struct {
	// Language is the language's name ("Go"), or "" when the file's kind
	// is not known.
	Language string `json:"language,omitempty"`
	// Path is the file asked about, if any.
	Path string `json:"path,omitempty"`
	// Reason says why, with what to do ("gopls is not on PATH: install
	// it with …").
	Reason string `json:"reason"`
}

func (e *NoServerError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	if e.Language != "" {
		return "no language server for " + e.Language
	}
	return "no language server for this file"
}

// IsNoServer reports whether err says a Source has no server for the
// file (so another Source may be asked).
func IsNoServer(err error) bool {
	var ns *NoServerError
	return errors.As(err, &ns)
}

// ServerError is a language server that failed (it crashed, or could not
// start): Server names it, Reason says what happened and what to do.
type ServerError struct {
	Server string `json:"server"`
	Reason string `json:"reason"`
}

func (e *ServerError) Error() string { return e.Server + ": " + e.Reason }

// describeErr words a Source's error for a model.
func describeErr(err error) string {
	var se *ServerError
	var ns *NoServerError
	switch {
	case errors.As(err, &ns):
		return ns.Error()
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "the language server did not answer in time: " + err.Error()
	}
	s := err.Error()
	if strings.TrimSpace(s) == "" {
		return fmt.Sprintf("%T", err)
	}
	return s
}
