// Package agentplugin reads a plugin of the open Agent Plugins
// specification 1.0.0 (github.com/agentplugins/agent-plugins-spec,
// spec/1.0.0.md at bd383552095128f6effe895b9257cfd580a6d179): its
// plugin.json, its mcp.json and where its skills are, as the
// specification's sections say, cited by number beside each rule.
//
// It reads; it runs nothing. package extension takes what it reads
// into an extension's shape (a Manifest whose mcpServers are the
// plugin's valid servers), so that gemkit's store, consent, sandbox and
// `gemkit mcp` take a plugin as they take an extension. Its JSON is read
// with agentread.ParseJSONUnique: the specification's clients each
// parse with their own reader, and a member given twice, which they
// read differently, is refused rather than guessed.
package agentplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// The files and identifiers of Agent Plugins 1.0.0.
const (
	// ManifestFile is the manifest at the plugin root (§5.1).
	ManifestFile = "plugin.json"
	// MCPFile is the MCP configuration at the plugin root (§7.2.1).
	MCPFile = "mcp.json"
	// SkillsDir is the skills' fixed location (§6.1).
	SkillsDir = "skills"
	// PluginSchema and MCPSchema are the one version gemkit reads
	// (§5.2, §7.2.1); gemkit maps no other version to them.
	PluginSchema = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
	MCPSchema    = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"
	// Version is the specification's version those identifiers name.
	Version = "1.0.0"
)

// maxFile bounds plugin.json and mcp.json: far above any real one, so
// that an endless file cannot make gemkit read without end.
const maxFile = 4 << 20

// Plugin is a plugin read and checked: what it declares, its valid MCP
// servers, and every report a client owes its person (Notes).
type Plugin struct {
	Name, Version, Description string
	// Servers are the valid entries of mcp.json, by name (§7.2.2: an
	// invalid entry is skipped, with a note).
	Servers map[string]Server
	// Skills are the skill folders found, as names in the plugin root
	// ("skills/NAME"), sorted; each holds a SKILL.md that is a regular
	// file within the root (§7.1). Whether each is an Agent Skill is
	// the reader's to say.
	Skills []string
	// Notes are what is reported and not fatal: unknown fields, a
	// non-object extensions, a component type or entry skipped, text
	// kept literal (§5.2, §8.1, §7.2.2, §9.2, §11.3).
	Notes []Note
	// Raw is what declares what the plugin runs, as read: plugin.json's
	// bytes, then mcp.json's when it was read (rawOf). Consent to the
	// plugin binds it as an extension's binds its manifest: a copy as
	// agreed to stands for the plugin only while its Raw is this.
	Raw []byte
}

// rawOf is Raw of a plugin.json and an mcp.json (nil: none was read).
func rawOf(manifest, mcp []byte) []byte {
	out := append([]byte(nil), manifest...)
	if mcp != nil {
		out = append(append(out, "\x00"+MCPFile+"\x00"...), mcp...)
	}
	return out
}

// ReadRaw reads Raw of the plugin whose root is root, as Read reads its
// files, checking nothing else.
func ReadRaw(root *fsutil.Root) ([]byte, error) {
	manifest, err := root.ReadFile(ManifestFile, maxFile)
	if err != nil {
		return nil, err
	}
	mcp, err := root.ReadFile(MCPFile, maxFile)
	if err != nil {
		mcp = nil
	}
	return rawOf(manifest, mcp), nil
}

// Note is one report about a plugin: the file, the value's place in it
// ("" for the file) and what it means, in words.
type Note struct {
	File, Path, Text string
	// Fix says what the plugin's author can do about it.
	Fix string
}

func (n Note) String() string {
	if n.Path == "" {
		return n.File + ": " + n.Text
	}
	return n.File + ": " + n.Path + ": " + n.Text
}

// RejectedError is a plugin the specification has a client reject
// whole (§5.2, §5.3, §11.3): none of its components is loaded.
type RejectedError struct {
	// Path is the field at fault ("" for the file).
	Path, Why string
}

func (e *RejectedError) Error() string {
	if e.Path == "" {
		return ManifestFile + ": " + e.Why
	}
	return ManifestFile + ": " + e.Path + ": " + e.Why
}

// Has reports whether root holds a plugin.json, whatever it is (§5.1:
// the manifest's place is fixed).
func Has(root *fsutil.Root) bool {
	_, err := root.Lstat(ManifestFile)
	return err == nil
}

// Read reads the plugin whose root is root: its manifest first (§5.1),
// which rejects the plugin when it breaks a rule that is fatal (a
// *RejectedError, or the error of a file that cannot be read), then its
// components from their fixed places (§6.1), each failing alone.
func Read(root *fsutil.Root) (*Plugin, error) {
	data, err := root.ReadFile(ManifestFile, maxFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &RejectedError{Why: "there is none at the plugin root"}
	case errors.Is(err, fsutil.ErrOutside):
		// §4.1: a manifest that resolves outside the root rejects the
		// plugin.
		return nil, &RejectedError{Why: "it is a link out of the plugin's folder, which Agent Plugins 1.0.0 §4.1 has clients reject"}
	case errors.Is(err, fsutil.ErrNotRegular):
		return nil, &RejectedError{Why: "it is not a regular file"}
	case err != nil:
		return nil, &RejectedError{Why: err.Error()}
	}
	p := &Plugin{Servers: map[string]Server{}}
	if err := p.manifest(data); err != nil {
		return nil, err
	}
	p.Raw = rawOf(data, p.readMCP(root))
	p.findSkills(root)
	return p, nil
}

// manifest reads plugin.json's bytes into p (§5).
func (p *Plugin) manifest(data []byte) error {
	v, err := agentread.ParseJSONUnique(data)
	if err != nil {
		return &RejectedError{Why: "it is not JSON every client reads alike: " + err.Error()}
	}
	if !v.IsObject() {
		return &RejectedError{Why: "it is a JSON " + v.Kind().String() + ", not an object (§5.2)"}
	}
	for _, k := range v.Keys() {
		if !manifestFields[k] {
			// §5.2: reported and ignored, never given a meaning.
			p.note(ManifestFile, quoteKey(k), "an unknown field, ignored (Agent Plugins 1.0.0 allows only "+strings.Join(sortedKeys(manifestFields), ", ")+")", "remove it; data for one client goes under extensions (§8)")
		}
	}
	schema, err := requiredString(v, "$schema")
	if err != nil {
		return err
	}
	if schema != PluginSchema {
		return &RejectedError{Path: "$schema", Why: fmt.Sprintf("%s is not an Agent Plugins version gemkit reads; gemkit reads %s (version %s) alone", strconv.Quote(schema), PluginSchema, Version)}
	}
	if p.Name, err = requiredString(v, "name"); err != nil {
		return err
	}
	if why := NameProblem(p.Name); why != "" {
		return &RejectedError{Path: "name", Why: fmt.Sprintf("%s %s (§5.5)", strconv.Quote(p.Name), why)}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"version", &p.Version}, {"description", &p.Description}, {"homepage", nil}, {"repository", nil}, {"license", nil}} {
		s, err := optionalString(v, f.key)
		if err != nil {
			return err
		}
		if f.dst != nil {
			*f.dst = s
		}
	}
	if err := checkAuthor(v); err != nil {
		return err
	}
	if kw, ok := v.Get("keywords"); ok {
		elems, isArr := kw.Elems()
		if !isArr {
			return wrongType("keywords", kw, "an array of strings")
		}
		for i, e := range elems {
			if e.Kind() != agentread.String {
				return wrongType("keywords["+strconv.Itoa(i)+"]", e, "a string")
			}
		}
	}
	if ext, ok := v.Get("extensions"); ok && !ext.IsObject() {
		// §8.1: reported and ignored; loading goes on.
		p.note(ManifestFile, "extensions", "is a JSON "+ext.Kind().String()+", not an object: ignored", "make it an object keyed by reverse-domain namespaces, or remove it")
	} else if ok && len(ext.Keys()) > 0 {
		// §8.1, §11.1(3): gemkit implements no namespace, so it reads
		// none of their values, nor their folders (§8.2).
		p.note(ManifestFile, "extensions", "gemkit implements none of "+strings.Join(ext.Keys(), ", ")+": ignored, with their folders", "none needed")
	}
	return nil
}

// manifestFields are the manifest's top-level fields (§5.2), a closed
// set.
var manifestFields = map[string]bool{"$schema": true, "name": true, "version": true, "description": true,
	"author": true, "homepage": true, "repository": true, "license": true, "keywords": true, "extensions": true}

// checkAuthor checks author: an object of name, email and url strings
// only (§5.4).
func checkAuthor(v agentread.Value) error {
	a, ok := v.Get("author")
	if !ok {
		return nil
	}
	if !a.IsObject() {
		return wrongType("author", a, "an object")
	}
	for _, k := range a.Keys() {
		m, _ := a.Get(k)
		switch {
		case k != "name" && k != "email" && k != "url":
			return &RejectedError{Path: "author." + quoteKey(k), Why: "author may hold only name, email and url (§5.4)"}
		case m.Kind() != agentread.String:
			return wrongType("author."+k, m, "a string")
		}
	}
	return nil
}

// NameProblem says why name is not a plugin's name (§5.5), "" when it
// is one: 1 to 64 of a-z, 0-9, - and ., starting and ending with a
// letter or digit, without -- or .. .
func NameProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > 64:
		return "is longer than 64 characters"
	case strings.Contains(name, "--") || strings.Contains(name, ".."):
		return "has -- or .. in it"
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return "may hold only lowercase letters a-z, digits, - and ."
		}
	}
	if alnum := func(c byte) bool { return c != '-' && c != '.' }; !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return "must start and end with a letter or a digit"
	}
	return ""
}

func requiredString(v agentread.Value, key string) (string, error) {
	m, ok := v.Get(key)
	if !ok {
		return "", &RejectedError{Path: key, Why: "is missing, and Agent Plugins 1.0.0 requires it (§5.3)"}
	}
	s, isStr := m.Str()
	if !isStr {
		return "", wrongType(key, m, "a string")
	}
	return s, nil
}

func optionalString(v agentread.Value, key string) (string, error) {
	m, ok := v.Get(key)
	if !ok {
		return "", nil
	}
	s, isStr := m.Str()
	if !isStr {
		return "", wrongType(key, m, "a string")
	}
	return s, nil
}

func wrongType(path string, v agentread.Value, want string) error {
	return &RejectedError{Path: path, Why: "is a JSON " + v.Kind().String() + ", not " + want}
}

func (p *Plugin) note(file, path, text, fix string) {
	p.Notes = append(p.Notes, Note{File: file, Path: path, Text: text, Fix: fix})
}

// quoteKey is a key as a person reads it in a path: quoted when it is
// not a plain word.
func quoteKey(k string) string {
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '$' || c == '.') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Where is the error without the file's name: the field and why.
func (e *RejectedError) Where() string {
	if e.Path == "" {
		return e.Why
	}
	return e.Path + ": " + e.Why
}
