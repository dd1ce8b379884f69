// Package disclosure is the model-facing view of the extensions enabled
// for one workspace: the short summary a model gets up front (progressive
// disclosure, section 4.2 of the extension plan), the tools it may call
// with their schemas, the docs it may read on demand, and calling a tool
// through the sandboxed runner with a result worded for a model.
//
// It knows nothing of MCP or of any model API, so that `gemkit mcp`, the
// agent and `gemkit extensions summary` all show a model the same thing.
package disclosure

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// Extension is one enabled, valid extension as a model sees it.
type Extension struct {
	// Name is the manifest's name.
	Name string
	// Ext is the loaded extension (folder and manifest with variables
	// substituted for the workspace).
	Ext *extension.Extension
	// Settings are the values of its settings from its .env files, passed
	// to its tools.
	Settings map[string]string
	// Skills are its agent skills, as Gemini CLI finds them, sorted by
	// file; SkippedSkills are the SKILL.md files that are not skills,
	// with why.
	Skills        []extension.Skill
	SkippedSkills []extension.SkippedSkill
}

// newExtension reads what a model is shown of ext besides its manifest.
func newExtension(ext *extension.Extension, settings map[string]string) *Extension {
	e := &Extension{Name: ext.Manifest.Name, Ext: ext, Settings: settings}
	e.Skills, e.SkippedSkills = ext.ScanSkills()
	return e
}

// Skipped is an installed extension left out of the set, with why, so a
// person can see why a model does not see it.
type Skipped struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Set is the enabled extensions of one workspace and the tools they
// expose. A Set is immutable once loaded: to see changes on disk, load a
// new one.
type Set struct {
	// Workspace is the folder tools run in and enablement was evaluated
	// for.
	Workspace string
	// Extensions are the enabled valid extensions, sorted by name.
	Extensions []*Extension
	// Skipped are the installed extensions left out (disabled here,
	// unreadable or refused), and those whose own tools are left out
	// (problems in the fields only gemkit reads), sorted by name.
	Skipped []Skipped

	tools  []Tool
	limit  int            // the longest exposed name
	byName map[string]int // exposed name -> index in tools
	byDecl map[string]int // extension "\x00" tool -> index in tools
	// refused are the tools whose names are gemkit's own (Refused).
	refused []NameRefusal
}

// Load reads the extensions installed in st that are enabled for st's
// workspace (user and workspace enablement scopes), leaving out those
// whose manifest Gemini CLI refuses too, the own tools and docs of those
// whose problems are in the fields only gemkit reads (both listed in
// Skipped), and tools hidden by any enabled extension's excludeTools
// (see ExposedName for the names it matches).
func Load(st *extension.Store) (*Set, error) { return load(st, 0, "") }

// load is Load with exposed names of at most limit characters (0:
// DefaultNameLimit), of the extension only alone when it is not "".
func load(st *extension.Store, limit int, only string) (*Set, error) {
	all, err := st.List()
	if err != nil {
		return nil, err
	}
	enabled, enErr := st.Enablements()
	s := &Set{Workspace: st.Workspace()}
	extNames := map[string]bool{}
	for _, in := range all {
		if m := in.Manifest(); m != nil && !m.AgentPlugin {
			extNames[m.Name] = true
		}
	}
	for _, in := range all {
		name := in.Name
		if m := in.Manifest(); m != nil {
			name = m.Name
		}
		if only != "" && name != only {
			continue
		}
		if m := in.Manifest(); m != nil && m.AgentPlugin && extNames[name] {
			// Installed by Gemini CLI beside gemkit's plugin, which it
			// does not see: one name, two things; neither is guessed at.
			s.Skipped = append(s.Skipped, Skipped{name, "an extension in Gemini CLI's extensions folder has the same name; gemkit serves that extension, not this Agent Plugins plugin: uninstall one of them"})
			continue
		}
		if !enabled(in.Name).Workspace {
			s.Skipped = append(s.Skipped, Skipped{name, "disabled in this workspace"})
			continue
		}
		var verr *extension.ValidationError
		if in.Extension == nil || in.Err != nil && (!errors.As(in.Err, &verr) || verr.Refuses()) {
			reason := "cannot be loaded"
			if in.Err != nil {
				reason = fmt.Sprintf("cannot be used: %v", in.Err)
			}
			s.Skipped = append(s.Skipped, Skipped{name, reason})
			continue
		}
		settings, err := toolrun.InstalledSettings(in)
		if err != nil {
			s.Skipped = append(s.Skipped, Skipped{name, fmt.Sprintf("settings cannot be read: %v", err)})
			continue
		}
		ext := in.Extension
		if verr != nil {
			// Its problems are in the fields only gemkit reads: the rest
			// (its MCP servers, skills) is Gemini CLI's, and served.
			ext = withoutOwnTools(ext)
			s.Skipped = append(s.Skipped, Skipped{name, fmt.Sprintf("its own tools and docs are not offered: %v", verr)})
		}
		s.Extensions = append(s.Extensions, newExtension(ext, settings))
	}
	s.index(limit)
	if enErr != nil {
		return s, fmt.Errorf("the enablement file is damaged, so every extension counts as enabled: %w", enErr)
	}
	return s, nil
}

// withoutOwnTools is ext without the parts of its manifest only gemkit
// reads and runs (tools, docs, examples): what is left of an extension
// whose problems are there.
func withoutOwnTools(ext *extension.Extension) *extension.Extension {
	m := *ext.Manifest
	m.Tools, m.Docs, m.Examples = nil, nil, nil
	c := *ext
	c.Manifest = &m
	return &c
}

// LoadDir reads the single extension in dir (not necessarily installed)
// for workspace: what `gemkit mcp --extension DIR` serves. Enablement does
// not apply; an invalid extension is an error.
func LoadDir(dir, workspace string) (*Set, error) { return loadDir(dir, workspace, 0) }

func loadDir(dir, workspace string, limit int) (*Set, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	ext, err := extension.LoadWith(dir, extension.LoadOptions{WorkspacePath: ws})
	if err != nil {
		var verr *extension.ValidationError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("extension in %s is invalid: %w", dir, err)
		}
		return nil, fmt.Errorf("extension in %s: %w", dir, err)
	}
	settings, err := toolrun.ReadSettings(ext.Dir)
	if err != nil {
		return nil, err
	}
	s := &Set{Workspace: ws, Extensions: []*Extension{newExtension(ext, settings)}}
	s.index(limit)
	return s, nil
}

// Extension returns the enabled extension called name, or nil.
func (s *Set) Extension(name string) *Extension {
	i := sort.Search(len(s.Extensions), func(i int) bool { return s.Extensions[i].Name >= name })
	if i < len(s.Extensions) && s.Extensions[i].Name == name {
		return s.Extensions[i]
	}
	return nil
}
