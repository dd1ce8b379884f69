package disclosure

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// ReadDocTool is the name of the tool that returns a doc's text, with
// arguments {extension, name} (the plan's read_doc). No extension tool is
// ever exposed under this name.
const ReadDocTool = "read_doc"

// MaxNameLen is the longest function name Gemini accepts, and the
// Anthropic and OpenAI APIs too.
const MaxNameLen = 64

// DefaultNameLimit is the longest exposed name by default. An MCP client
// sends a tool to its model API under a prefix of its own (Claude Code
// mcp__SERVER__, Gemini CLI mcp_SERVER_, OpenCode SERVER_), and the APIs
// refuse a name over MaxNameLen with an error that ends the session: 48
// leaves 16 characters for mcp__ + the server's name + __, so a server
// name of up to 9 characters (gemkit) fits every client.
const DefaultNameLimit = 48

// MinNameLimit is the shortest name limit: the hashed form of a name
// (see ExposedName) needs room for a few characters of the name besides
// its 9-character suffix.
const MinNameLimit = 16

// CheckNameLimit says why limit cannot be a name limit, or nil.
func CheckNameLimit(limit int) error {
	if limit < MinNameLimit || limit > MaxNameLen {
		return fmt.Errorf("the name limit must be between %d and %d characters, not %d", MinNameLimit, MaxNameLen, limit)
	}
	return nil
}

// Tool is one extension tool as a model sees it.
type Tool struct {
	// Name is the exposed name, unique in the Set and valid as a Gemini
	// function name (see ExposedName).
	Name string `json:"name"`
	// Extension and Tool are the extension's and the tool's declared
	// names: what the call runs.
	Extension string `json:"extension"`
	Tool      string `json:"tool"`
	// Description is the tool's full description followed by its
	// examples, for the model's tool list (not for the summary).
	Description string `json:"description"`
	// InputSchema is a JSON Schema (an object) built from the declared
	// args: their types, descriptions and which are required.
	InputSchema map[string]any `json:"inputSchema"`
	// Output is the declared output type ("string" or "json").
	Output string `json:"output"`

	decl *extension.Tool
}

// Tools returns the exposed tools sorted by exposed name, without
// read_doc (see ReadDocSchema). The slice is shared: do not modify it.
func (s *Set) Tools() []Tool { return s.tools }

// Tool returns the exposed tool called name, or nil.
func (s *Set) Tool(name string) *Tool {
	if i, ok := s.byName[name]; ok {
		return &s.tools[i]
	}
	return nil
}

// ToolFor returns the exposed tool for an extension's declared tool, or
// nil when it is not exposed.
func (s *Set) ToolFor(ext, tool string) *Tool {
	if i, ok := s.byDecl[ext+"\x00"+tool]; ok {
		return &s.tools[i]
	}
	return nil
}

// HasDocs reports whether any extension has a doc or a skill, that is
// whether read_doc has anything to read.
func (s *Set) HasDocs() bool {
	for _, e := range s.Extensions {
		if len(e.Ext.Manifest.Docs) > 0 || len(e.Skills) > 0 {
			return true
		}
	}
	return false
}

// ReadDocDescription is read_doc's description for a model.
const ReadDocDescription = "Read the full text of a doc that an extension ships, or the instructions of one of its agent skills " +
	"(the summary of available extensions lists each extension's docs and skills by name). " +
	"Arguments: extension, the extension's name; name, the doc's name, or skill: followed by the skill's name (for example skill:code-review)."

// ReadDocSchema is read_doc's input schema.
func ReadDocSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"extension": map[string]any{"type": "string", "description": "The extension's name, as in the summary."},
			"name":      map[string]any{"type": "string", "description": "The doc's name as in the summary, or skill: followed by a skill's name."},
		},
		"required":             []any{"extension", "name"},
		"additionalProperties": false,
	}
}

// sanitize maps s onto the characters Gemini allows in a function name:
// letters, digits, '_' and '-'; every other character becomes '_'.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// baseName is rule 1 of ExposedName.
func baseName(ext, tool string) string {
	n := sanitize(ext) + "_" + sanitize(tool)
	if c := n[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		n = "_" + n
	}
	return n
}

// hashedName is the collision form of a name: base cut so that with an
// underscore and eight hex digits of SHA-256 of "extension\x00tool" it
// fits in limit.
func hashedName(base, ext, tool string, limit int) string {
	sum := sha256.Sum256([]byte(ext + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(base) > limit-len(suffix) {
		base = base[:limit-len(suffix)]
	}
	return base + suffix
}

// ExposedName is the rule for the name a tool is exposed under with the
// default name limit, applied to the tools of a Set in order of
// (extension, tool):
//
//  1. the extension's name, '_', the tool's name, with every character
//     other than a letter, digit, '_' or '-' replaced by '_', and a '_'
//     in front when it does not start with a letter (a Gemini function
//     name must start with a letter or '_');
//  2. when that is longer than the name limit (DefaultNameLimit, 48
//     characters, unless a Source says otherwise: NameLimited), equals
//     read_doc, or was already given to another tool of the Set (two
//     names that differ only in replaced characters, or "a_b"+"c" and
//     "a"+"b_c"), it is cut to the limit less 9 characters and followed
//     by '_' and the first 8 hex digits of SHA-256 of "extension\x00tool".
//
// The names therefore depend only on the extension and tool names (and
// the limit), never on which other extensions are installed, except in
// the rare collision of rule 2.
func ExposedName(ext, tool string) string { return exposedName(ext, tool, DefaultNameLimit) }

func exposedName(ext, tool string, limit int) string {
	n := baseName(ext, tool)
	if len(n) > limit || n == ReadDocTool {
		return hashedName(n, ext, tool, limit)
	}
	return n
}

// excluded reports whether an excludeTools entry hides t: any enabled
// extension's entry equal to the exposed name or to the name before any
// cut (base: what a longer name limit exposed, so entries written for it
// keep working), or the extension's own entry equal to the tool's
// declared name.
func excluded(exposed, base, tool string, global map[string]bool, own []string) bool {
	if global[exposed] || global[base] {
		return true
	}
	for _, e := range own {
		if e == tool {
			return true
		}
	}
	return false
}

// index builds the tool list: exposed names of at most limit characters
// (0: DefaultNameLimit), descriptions and schemas.
func (s *Set) index(limit int) {
	if limit == 0 {
		limit = DefaultNameLimit
	}
	s.limit = limit
	sort.Slice(s.Extensions, func(i, j int) bool { return s.Extensions[i].Name < s.Extensions[j].Name })
	sort.Slice(s.Skipped, func(i, j int) bool { return s.Skipped[i].Name < s.Skipped[j].Name })
	global := map[string]bool{}
	for _, e := range s.Extensions {
		for _, x := range e.Ext.Manifest.ExcludeTools {
			global[x] = true
		}
	}
	used := map[string]bool{ReadDocTool: true}
	s.tools, s.refused = nil, nil
	for _, e := range s.Extensions {
		m := e.Ext.Manifest
		decls := make([]*extension.Tool, len(m.Tools))
		for i := range m.Tools {
			decls[i] = &m.Tools[i]
		}
		sort.SliceStable(decls, func(i, j int) bool { return decls[i].Name < decls[j].Name })
		for _, t := range decls {
			name := exposedName(m.Name, t.Name, limit)
			if owner, ok := ReservedBy(baseName(m.Name, t.Name)); ok {
				// gemkit's own name: refused, never given by order or
				// hashed into another (which would still read as one of
				// gemkit's to a model).
				s.refused = append(s.refused, NameRefusal{Extension: m.Name, Kind: "tool", Own: t.Name, Name: baseName(m.Name, t.Name), Owner: owner})
				continue
			}
			if used[name] {
				name = hashedName(baseName(m.Name, t.Name), m.Name, t.Name, limit)
			}
			if excluded(name, baseName(m.Name, t.Name), t.Name, global, m.ExcludeTools) {
				continue
			}
			used[name] = true
			out := string(t.Output)
			if out == "" {
				out = string(extension.OutputString)
			}
			s.tools = append(s.tools, Tool{
				Name: name, Extension: m.Name, Tool: t.Name,
				InputSchema: InputSchema(t), Output: out, decl: t,
			})
		}
	}
	sort.Slice(s.tools, func(i, j int) bool { return s.tools[i].Name < s.tools[j].Name })
	s.byName = make(map[string]int, len(s.tools))
	s.byDecl = make(map[string]int, len(s.tools))
	for i, t := range s.tools {
		s.byName[t.Name] = i
		s.byDecl[t.Extension+"\x00"+t.Tool] = i
	}
	// Descriptions name other tools by their exposed names, so they come
	// last.
	for i := range s.tools {
		t := &s.tools[i]
		t.Description = s.toolDescription(s.Extension(t.Extension).Ext.Manifest, t.decl)
	}
}

// ServerToolNamer returns the naming of the tools of the extensions' own
// MCP servers, beside the Set's tools: the rule of ExposedName with the
// Set's name limit, the extension's name and the server's tool name, so
// that "memory" of extension "mem" is mem_memory; a name already given
// (to a tool of the Set, to read_doc, or to an earlier server tool: two
// servers of one extension with a tool of one name) takes the hashed
// form, whose hash covers the server's name too. A name of gemkit's own
// (ReservedBy) is refused: the namer says so, and the tool is not
// served. Call it in a stable order (extension, server, tool) for
// stable names.
func (s *Set) ServerToolNamer() func(ext, server, tool string) (string, *NameRefusal) {
	limit := s.limit
	if limit == 0 {
		limit = DefaultNameLimit
	}
	used := map[string]bool{ReadDocTool: true}
	for _, t := range s.tools {
		used[t.Name] = true
	}
	return namer(limit, used, "tool")
}

// ServerPromptNamer returns the naming of the prompts of the extensions'
// own MCP servers: the rule of ServerToolNamer, in a namespace of their
// own, so that "review" of extension "code" is code_review, which is
// refused all the same (a name of gemkit's own is refused whatever it
// names). Call it in a stable order (extension, server, prompt) for
// stable names.
func (s *Set) ServerPromptNamer() func(ext, server, prompt string) (string, *NameRefusal) {
	limit := s.limit
	if limit == 0 {
		limit = DefaultNameLimit
	}
	return namer(limit, map[string]bool{}, "prompt")
}

func namer(limit int, used map[string]bool, kind string) func(ext, server, item string) (string, *NameRefusal) {
	return func(ext, server, item string) (string, *NameRefusal) {
		if owner, ok := ReservedBy(baseName(ext, item)); ok {
			return "", &NameRefusal{Extension: ext, Server: server, Kind: kind, Own: item, Name: baseName(ext, item), Owner: owner}
		}
		name := exposedName(ext, item, limit)
		if used[name] {
			name = hashedName(baseName(ext, item), ext, server+"\x00"+item, limit)
		}
		used[name] = true
		return name, nil
	}
}

// toolDescription is the tool's description, the extension it belongs
// to, and the extension's examples that call this tool.
func (s *Set) toolDescription(m *extension.Manifest, t *extension.Tool) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(t.Description))
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("From the extension " + m.Name)
	if t.Output == extension.OutputJSON {
		b.WriteString("; returns JSON")
	}
	b.WriteString(".")
	var ex []extension.Example
	for _, e := range m.Examples {
		if exampleCalls(e.ToolCall, t.Name) {
			ex = append(ex, e)
		}
	}
	if len(ex) > 0 {
		b.WriteString("\n\nExamples:")
		for _, e := range ex {
			b.WriteString("\n- " + oneLine(e.Prompt) + " -> " + s.exposeCall(m.Name, oneLine(e.ToolCall)))
		}
	}
	return b.String()
}

// exposeCall rewrites an example's call to use the exposed name of the
// extension's tool it names, so the model sees the name it must call:
// lintFile(file="a.js") becomes code-analyzer_lintFile(file="a.js").
// A call naming no exposed tool of ext is left as written.
func (s *Set) exposeCall(ext, call string) string {
	call = strings.TrimSpace(call)
	name := call
	if i := strings.IndexAny(call, "( "); i >= 0 {
		name = call[:i]
	}
	if t := s.ToolFor(ext, name); t != nil {
		return t.Name + call[len(name):]
	}
	return call
}

// exampleCalls reports whether an example's tool_call names tool: it
// starts with the tool's name followed by '(' or a space, or is exactly
// it.
func exampleCalls(call, tool string) bool {
	call = strings.TrimSpace(call)
	if !strings.HasPrefix(call, tool) {
		return false
	}
	rest := call[len(tool):]
	return rest == "" || rest[0] == '(' || rest[0] == ' '
}

// InputSchema is the JSON Schema of a tool's arguments: an object with one
// property per declared arg (string, number, integer, boolean, or array of
// strings), all required but those that may be left out (booleans and
// arrays, absent being false or empty, and those the manifest makes
// optional, as the runner treats them), each default given as the
// property's default, and no others allowed.
func InputSchema(t *extension.Tool) map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, a := range t.Args {
		p := map[string]any{}
		switch a.Type {
		case extension.ArgStringArray:
			p["type"] = "array"
			p["items"] = map[string]any{"type": "string"}
		default:
			p["type"] = string(a.Type)
		}
		if d := strings.TrimSpace(a.Description); d != "" {
			p["description"] = d
		}
		if def, ok, err := a.DefaultValue(); ok && err == nil {
			p["default"] = def
		}
		props[a.Name] = p
		if !a.Optional() {
			required = append(required, a.Name)
		}
	}
	schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema
}

// SchemaJSON is InputSchema marshalled, for golden files and clients that
// want bytes.
func SchemaJSON(schema map[string]any) json.RawMessage {
	b, _ := json.Marshal(schema)
	return b
}

// MayNameServerTool reports whether name may be the name ServerToolNamer
// gives a tool of a server of the extension ext: the extension's part
// and '_' in front (an extension's name has no '_', so no other
// extension's names start so), or the collision form of a name cut so
// short that only part of the extension's name is left. It maps a
// called name back to the extension whose servers may serve it.
func (s *Set) MayNameServerTool(name, ext string) bool {
	limit := s.limit
	if limit == 0 {
		limit = DefaultNameLimit
	}
	prefix := baseName(ext, "")
	if strings.HasPrefix(name, prefix) {
		return true
	}
	// hashedName: at most limit-9 characters of the name, '_' and eight
	// hex digits.
	const suffix = 9
	if len(name) != limit || name[limit-suffix] != '_' {
		return false
	}
	if _, err := hex.DecodeString(name[limit-suffix+1:]); err != nil {
		return false
	}
	return strings.HasPrefix(prefix, name[:limit-suffix])
}
