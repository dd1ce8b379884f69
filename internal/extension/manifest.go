// Package extension holds the extension system's data model: the
// gemini-extension.json manifest, its validation and variables, and the
// store of installed extensions that gemkit shares with Gemini CLI.
package extension

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/permission"
)

// ManifestFile is the name of an extension's manifest in its folder.
const ManifestFile = "gemini-extension.json"

// Access is a filesystem scope an extension may ask for; it lives in
// package permission, shared with the sandbox.
type Access = permission.Access

// The filesystem scopes, narrowest first.
const (
	AccessNone      = permission.AccessNone
	AccessWorkspace = permission.AccessWorkspace
	AccessHome      = permission.AccessHome
	AccessFull      = permission.AccessFull
)

// Manifest is a parsed gemini-extension.json. Fields the manifest has but
// this type does not name are kept in Extra, so that writing a manifest
// back never drops what another tool put there.
type Manifest struct {
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	Description string       `json:"description,omitempty"`
	Permissions *Permissions `json:"permissions,omitempty"`
	// MCPServers are kept verbatim: Gemini CLI owns their shape (command,
	// args, env, cwd, url, httpUrl, headers, tcp, timeout, trust, ...).
	MCPServers map[string]json.RawMessage `json:"mcpServers,omitempty"`
	// ContextFileName is a string or a list in the file; both read as a
	// list here and are written back in the shape they came in.
	ContextFileName []string          `json:"-"`
	ExcludeTools    []string          `json:"excludeTools,omitempty"`
	Settings        []Setting         `json:"settings,omitempty"`
	Themes          []json.RawMessage `json:"themes,omitempty"`
	MigratedTo      string            `json:"migratedTo,omitempty"`
	Plan            json.RawMessage   `json:"plan,omitempty"`
	Tools           []Tool            `json:"tools,omitempty"`
	Docs            []Doc             `json:"docs,omitempty"`
	Examples        []Example         `json:"examples,omitempty"`

	// Extra holds the fields this type does not name, verbatim.
	Extra map[string]json.RawMessage `json:"-"`
	// AgentPlugin marks the manifest made from an Agent Plugins
	// plugin's plugin.json and mcp.json (plugin.go): Gemini CLI runs
	// none of its servers, which gemkit mcp alone serves.
	AgentPlugin bool `json:"-"`

	// contextFileNameString records that contextFileName was a plain
	// string, so that MarshalJSON writes it back the same way.
	contextFileNameString bool
	// contextNone records a contextFileName that names no file Gemini
	// CLI reads (an empty list, or a value that is not a name), so that
	// GEMINI.md is not read in its place.
	contextNone bool
}

// Permissions is what an extension's tools may reach.
type Permissions struct {
	Filesystem *FilesystemPermissions `json:"filesystem,omitempty"`
	Network    *NetworkPermissions    `json:"network,omitempty"`
}

// FilesystemPermissions are the read and write scopes. An absent scope is
// AccessNone. ProtectedWrites names protected paths at the workspace's
// top that the tools may write all the same (".husky", ".env.local":
// permission.CheckLiftable); the consent text names each in words.
// Credentials names the kinds of other programs' credentials the tools
// may read all the same ("npm", "gh": permission.CheckCredential), which
// are closed to every tool otherwise.
type FilesystemPermissions struct {
	Read            Access   `json:"read,omitempty"`
	Write           Access   `json:"write,omitempty"`
	ProtectedWrites []string `json:"protectedWrites,omitempty"`
	Credentials     []string `json:"credentials,omitempty"`
}

// NetworkPermissions lists the hosts a tool may connect to. Empty means no
// network at all.
type NetworkPermissions struct {
	AllowedHosts []string `json:"allowedHosts"`
}

// Setting is a value the user gives an extension, passed to its tools and
// MCP servers as the environment variable EnvVar.
type Setting struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	EnvVar      string `json:"envVar"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// Doc is a document the model may read on demand.
type Doc struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	File        string `json:"file"`
}

// Example shows the model a prompt and the tool call it should lead to.
type Example struct {
	Prompt   string `json:"prompt"`
	ToolCall string `json:"tool_call"`
}

// EffectivePermissions returns the permissions with every default filled
// in: absent scopes are AccessNone and an absent network block allows no
// host. The result never aliases m.
func (m *Manifest) EffectivePermissions() Permissions {
	fs := FilesystemPermissions{Read: AccessNone, Write: AccessNone}
	net := NetworkPermissions{AllowedHosts: []string{}}
	if p := m.Permissions; p != nil {
		if p.Filesystem != nil {
			fs.Read = p.Filesystem.Read.Effective()
			fs.Write = p.Filesystem.Write.Effective()
			fs.ProtectedWrites = append([]string(nil), p.Filesystem.ProtectedWrites...)
			fs.Credentials = append([]string(nil), p.Filesystem.Credentials...)
		}
		if p.Network != nil {
			net.AllowedHosts = append(net.AllowedHosts, p.Network.AllowedHosts...)
		}
	}
	return Permissions{Filesystem: &fs, Network: &net}
}

// Policy is the declared permissions as the sandbox takes them; p should
// come from EffectivePermissions (nil blocks are the narrowest).
func (p Permissions) Policy() permission.Policy {
	var out permission.Policy
	if p.Filesystem != nil {
		out.Read, out.Write = p.Filesystem.Read.Effective(), p.Filesystem.Write.Effective()
		out.ProtectedWrites = p.Filesystem.ProtectedWrites
		out.Credentials = canonicalLifted(p.Filesystem.Credentials)
	}
	if p.Network != nil {
		out.AllowedHosts = p.Network.AllowedHosts
	}
	return out
}

// ContextFiles returns the context file names Gemini CLI reads for the
// extension: the declared ones, or GEMINI.md when none is declared. An
// empty name stands for a value Gemini CLI skips (not a string).
func (m *Manifest) ContextFiles() []string {
	if m.contextNone {
		return nil
	}
	if len(m.ContextFileName) == 0 {
		return []string{"GEMINI.md"}
	}
	return append([]string(nil), m.ContextFileName...)
}

// readContextFileName sets m's context file names from raw, the
// manifest's contextFileName, as Gemini CLI 0.61 takes them
// (getContextFileNames, then validateContextFilePath, in
// extension-manager.ts): a falsy value ("", 0, false, null) is none
// declared, so GEMINI.md; a string is that one name; a list is its
// names, where a value that is not a string is skipped (here an empty
// name, which no file has), and an empty list none at all; any other
// value is one name that is not a string, so none. It reports false
// when raw is neither a string nor a list of strings (a problem of
// its type, told by the caller).
func (m *Manifest) readContextFileName(raw json.RawMessage) bool {
	m.ContextFileName, m.contextFileNameString, m.contextNone = nil, false, false
	v, err := agentread.ParseJSON(raw)
	if err != nil || !v.Truthy() {
		_, isString := v.Str()
		return err == nil && (isString || v.Kind() == agentread.Null)
	}
	if s, ok := v.Str(); ok {
		m.ContextFileName, m.contextFileNameString = []string{s}, true
		return true
	}
	elems, ok := v.Elems()
	if !ok {
		m.contextNone = true
		return false
	}
	m.ContextFileName, m.contextNone = make([]string, len(elems)), len(elems) == 0
	all := true
	for i, e := range elems {
		s, isString := e.Str()
		m.ContextFileName[i], all = s, all && isString
	}
	return all
}

// Tool returns the tool called name, or nil.
func (m *Manifest) Tool(name string) *Tool {
	for i := range m.Tools {
		if m.Tools[i].Name == name {
			return &m.Tools[i]
		}
	}
	return nil
}

// Doc returns the doc called name, or nil.
func (m *Manifest) Doc(name string) *Doc {
	for i := range m.Docs {
		if m.Docs[i].Name == name {
			return &m.Docs[i]
		}
	}
	return nil
}

// knownFields are the top-level manifest fields Manifest names.
var knownFields = map[string]bool{
	"name": true, "version": true, "description": true, "permissions": true,
	"mcpServers": true, "contextFileName": true, "excludeTools": true,
	"settings": true, "themes": true, "migratedTo": true, "plan": true,
	"tools": true, "docs": true, "examples": true,
}

// ParseManifest reads a manifest. It fails only when data is not a JSON
// object; a field of the wrong type becomes a Problem (with its JSON path)
// and the rest of the manifest is still read, so that a caller can report
// every mistake at once.
func ParseManifest(data []byte) (*Manifest, []Problem, error) {
	m, probs, _, _, err := parseManifest(data, false)
	return m, probs, err
}

// parseManifest is ParseManifest that, with keys, also finds the keys
// nothing reads (unknownKeys): on the one pass of the manifest reader over
// a manifest of the usual shape, else by a walk of their own. read is the
// text it decoded: data, or data as Gemini CLI reads it (each key once,
// as written) where data's keys were not plain.
func parseManifest(data []byte, keys bool) (m *Manifest, probs, unknown []Problem, read []byte, err error) {
	// The hand-written reader takes a manifest only as JSON.parse
	// reads it (each key as written, once, in plain text); what it
	// gives up on is written again as Gemini CLI reads it first.
	if w, extra, unknown, ok := decodeManifest(data); ok {
		if m, ok := fromWire(w, extra); ok {
			return m, nil, unknown, data, nil
		}
	}
	if data, err = asGeminiReadsIt(data); err != nil {
		return nil, nil, nil, nil, err
	}
	m, unknown, ok := parseFast(data, keys)
	if ok {
		return m, nil, unknown, data, nil
	}
	if m, probs, err = parseSlow(data); err != nil {
		return nil, nil, nil, nil, err
	}
	if keys {
		unknown = unknownKeys(data)
	}
	return m, probs, unknown, data, nil
}

// asGeminiReadsIt is the manifest as Gemini CLI 0.61 reads it
// (loadExtensionConfig: JSON.parse, then recursivelyHydrateStrings,
// which drops the keys __proto__, constructor and prototype), written
// again: each key once, with its last value. Text JSON.parse refuses is
// returned as it is, for the decoders to say where it is wrong; text
// gemkit cannot read as Gemini CLI does is an error that says so.
// Whatever then decodes it takes a key only as written
// (agentread.Unmarshal).
func asGeminiReadsIt(data []byte) ([]byte, error) {
	v, err := agentread.ParseJSON(data)
	if agentread.IsUnreadable(err) {
		return nil, fmt.Errorf("the manifest: %w", err)
	}
	if err != nil {
		return data, nil
	}
	return v.JSON(true), nil
}

// parseSlow reads the manifest field by field, so that each field of the
// wrong type becomes a Problem at its path.
func parseSlow(data []byte) (*Manifest, []Problem, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, describeSyntaxError(data, err)
	}
	if top == nil {
		return nil, nil, errors.New("the manifest is null; it must be a JSON object")
	}
	m := &Manifest{}
	var probs []Problem
	for key, raw := range top {
		if !knownFields[key] {
			if m.Extra == nil {
				m.Extra = map[string]json.RawMessage{}
			}
			m.Extra[key] = raw
			continue
		}
		if isNull(raw) {
			continue
		}
		switch key {
		case "name":
			decodeField(raw, &m.Name, "name", "a string", &probs)
		case "version":
			decodeField(raw, &m.Version, "version", "a string", &probs)
		case "description":
			decodeField(raw, &m.Description, "description", "a string", &probs)
		case "permissions":
			var p Permissions
			if decodeField(raw, &p, "permissions", "an object", &probs) {
				m.Permissions = &p
			}
		case "mcpServers":
			decodeField(raw, &m.MCPServers, "mcpServers", "an object of server definitions", &probs)
		case "contextFileName":
			if !m.readContextFileName(raw) {
				var names []string
				decodeField(raw, &names, "contextFileName", "a file name or a list of file names", &probs)
			}
		case "excludeTools":
			decodeField(raw, &m.ExcludeTools, "excludeTools", "a list of tool names", &probs)
		case "settings":
			m.Settings = decodeList[Setting](raw, "settings", &probs)
		case "themes":
			decodeField(raw, &m.Themes, "themes", "a list of theme objects", &probs)
		case "migratedTo":
			decodeField(raw, &m.MigratedTo, "migratedTo", "a string", &probs)
		case "plan":
			m.Plan = append(json.RawMessage(nil), raw...)
		case "tools":
			m.Tools = decodeTools(raw, &probs)
		case "docs":
			m.Docs = decodeList[Doc](raw, "docs", &probs)
		case "examples":
			m.Examples = decodeList[Example](raw, "examples", &probs)
		}
	}
	sortProblems(probs)
	return m, probs, nil
}

// manifestWire is the whole manifest in one type, for the fast path.
type manifestWire struct {
	Name            string                     `json:"name"`
	Version         string                     `json:"version"`
	Description     string                     `json:"description"`
	Permissions     *Permissions               `json:"permissions"`
	MCPServers      map[string]json.RawMessage `json:"mcpServers"`
	ContextFileName json.RawMessage            `json:"contextFileName"`
	ExcludeTools    []string                   `json:"excludeTools"`
	Settings        []Setting                  `json:"settings"`
	Themes          []json.RawMessage          `json:"themes"`
	MigratedTo      string                     `json:"migratedTo"`
	Plan            json.RawMessage            `json:"plan"`
	Tools           []Tool                     `json:"tools"`
	Docs            []Doc                      `json:"docs"`
	Examples        []Example                  `json:"examples"`
}

// parseFast reads a well-typed manifest with one decode: decodeManifest's,
// or, when that gives up, encoding/json's and a quick walk over the
// top-level keys for the fields Manifest does not name. It reports false
// when anything has the wrong type, and ParseManifest then takes the
// slow path that says where.
//
// With keys, it also returns the problems of the keys nothing reads.
func parseFast(data []byte, keys bool) (*Manifest, []Problem, bool) {
	w, extra, unknown, ok := decodeManifest(data)
	if !ok {
		if w, extra, ok = decodeManifestJSON(data); !ok {
			return nil, nil, false
		}
		if keys {
			unknown = unknownKeys(data)
		}
	}
	m, ok := fromWire(w, extra)
	return m, unknown, ok
}

// fromWire is the Manifest that w and the members it does not name,
// extra, make; ok is false when its contextFileName is neither a name
// nor a list of names.
func fromWire(w manifestWire, extra map[string]json.RawMessage) (*Manifest, bool) {
	m := &Manifest{Name: w.Name, Version: w.Version, Description: w.Description, Permissions: w.Permissions,
		MCPServers: w.MCPServers, ExcludeTools: w.ExcludeTools, Settings: w.Settings, Themes: w.Themes,
		MigratedTo: w.MigratedTo, Tools: w.Tools, Docs: w.Docs, Examples: w.Examples, Extra: extra}
	if len(w.Plan) > 0 && !isNull(w.Plan) {
		m.Plan = w.Plan
	}
	if len(w.ContextFileName) > 0 && !m.readContextFileName(w.ContextFileName) {
		return nil, false
	}
	return m, true
}

// decodeManifestJSON is decodeManifest done by encoding/json, with the
// members Manifest does not name found by a walk over the top-level keys.
func decodeManifestJSON(data []byte) (w manifestWire, extra map[string]json.RawMessage, ok bool) {
	if agentread.Unmarshal(data, &w, true) != nil {
		return w, nil, false
	}
	caseVariant := false
	isObject := eachField(data, func(key string, raw json.RawMessage) {
		if knownFields[key] {
			return
		}
		if caseVariantOfKnown(key) {
			// encoding/json matched it to a field; the slow path
			// keeps it as an unknown field, as it is.
			caseVariant = true
		}
		if extra == nil {
			extra = map[string]json.RawMessage{}
		}
		extra[key] = append(json.RawMessage(nil), raw...)
	})
	return w, extra, isObject && !caseVariant
}

func caseVariantOfKnown(key string) bool {
	for k := range knownFields {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// UnmarshalJSON reads a manifest and fails on the first field of the wrong
// type; use ParseManifest to collect every problem instead.
func (m *Manifest) UnmarshalJSON(data []byte) error {
	parsed, probs, err := ParseManifest(data)
	if err != nil {
		return err
	}
	if len(probs) > 0 {
		return fmt.Errorf("%s: %s", probs[0].Path, probs[0].Message)
	}
	*m = *parsed
	return nil
}

// MarshalJSON writes the named fields in a fixed order, then the Extra
// fields sorted by name, so that a manifest read and written back keeps
// everything it had.
func (m Manifest) MarshalJSON() ([]byte, error) {
	type plain Manifest // no methods: avoids recursion
	type wire struct {
		plain
		ContextFileName any `json:"contextFileName,omitempty"`
	}
	w := wire{plain: plain(m)}
	switch {
	case len(m.ContextFileName) == 1 && m.contextFileNameString:
		w.ContextFileName = m.ContextFileName[0]
	case len(m.ContextFileName) > 0:
		w.ContextFileName = m.ContextFileName
	case m.contextNone && m.ContextFileName != nil:
		w.ContextFileName = []string{}
	}
	out, err := json.Marshal(w)
	if err != nil || len(m.Extra) == 0 {
		return out, err
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		if !knownFields[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.Write(out[:len(out)-1])
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(kb)
		buf.WriteByte(':')
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Extra[k]); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		buf.Write(compact.Bytes())
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
