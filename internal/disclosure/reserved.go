package disclosure

import (
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// Reserved is a name, or a family of names, that gemkit serves itself:
// no extension's tool, no tool or prompt of an extension's MCP server,
// no resource of one may be served under it. An extension named "code"
// whose server lists "definition" would otherwise be served as
// code_definition, beside gemkit's own, and answer the model's
// code-intelligence questions.
type Reserved struct {
	// Name is one name; Prefix, when set instead, every name that starts
	// with it.
	Name, Prefix string
	// Owner says, in words, what of gemkit's serves it.
	Owner string
}

// reserved is the one table of gemkit's own names, checked wherever an
// extension's names are listed (Set's tools, the servers' tools,
// prompts and resources). A name gemkit starts serving goes here, or
// under a prefix already here; mcpserver's TestReservedCoversServed
// fails on one served outside it.
var reserved = []Reserved{
	{Name: ReadDocTool, Owner: "gemkit's read_doc, which reads an extension's doc or skill"},
	{Prefix: "code_", Owner: "gemkit's code intelligence (code_definition, code_references, code_hover, …), answered from language servers"},
	{Prefix: "gemkit-doc:", Owner: "gemkit's own doc resources (gemkit-doc://EXTENSION/NAME)"},
	{Prefix: "gemkit-mcp:", Owner: "gemkit's qualified names of its servers' resources (gemkit-mcp://EXTENSION/SERVER/URI)"},
}

// ReservedNames is the table of gemkit's own names.
func ReservedNames() []Reserved { return append([]Reserved(nil), reserved...) }

// ReservedBy says what of gemkit's serves name, when gemkit reserves it.
// Names are compared as the clients may fold them: in any case, and '-'
// as '_' (Codex turns one into the other), so "Code-definition" is
// gemkit's too; a prefix is taken as written ("code-review_x" is an
// extension's own).
func ReservedBy(name string) (owner string, ok bool) {
	fold := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "-", "_") }
	for _, r := range reserved {
		switch {
		case r.Name != "" && fold(name) == fold(r.Name):
			return r.Owner, true
		case r.Prefix != "" && len(name) >= len(r.Prefix) && strings.EqualFold(name[:len(r.Prefix)], r.Prefix):
			return r.Owner, true
		}
	}
	return "", false
}

// NameRefusal is an extension's tool, prompt or resource that is not
// served because its name, as it would be served, is gemkit's own.
type NameRefusal struct {
	// Extension and Server name where it comes from (Server is "" for a
	// tool of the manifest's); Kind is "tool", "prompt" or "resource";
	// Own is its own name (a resource's URI), Name as it would be
	// served.
	Extension, Server, Kind, Own, Name string
	// Owner is what of gemkit's serves Name (ReservedBy).
	Owner string
}

// String says the refusal in words that name both sides.
func (r NameRefusal) String() string {
	from := "extension " + extension.Printable(r.Extension) + "'s " + r.Kind
	if r.Server != "" {
		from = "extension " + extension.Printable(r.Extension) + "'s MCP server " + extension.Printable(r.Server) + "'s " + r.Kind
	}
	as := ""
	if r.Name != r.Own {
		as = " would be served as " + extension.Printable(r.Name) + ", which is"
	} else {
		as = " is"
	}
	return fmt.Sprintf("%s %s%s a name of %s: it is not served, and gemkit's own is; the extension's author can rename it (or the extension)",
		from, extension.Printable(r.Own), as, r.Owner)
}

// Refused are the extensions' tools not in the Set because their names
// are gemkit's own (ReservedBy), sorted by extension and tool.
func (s *Set) Refused() []NameRefusal { return s.refused }

// ReservedItem says, for the tool (or server's tool or prompt) item of
// the extension ext, the name it would be served under and what of
// gemkit's owns that name, when gemkit refuses it.
func ReservedItem(ext, item string) (name, owner string, ok bool) {
	name = baseName(ext, item)
	owner, ok = ReservedBy(name)
	return name, owner, ok
}
