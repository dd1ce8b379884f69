package extview

import (
	"encoding/json"
	"errors"
	"sort"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// Item is one extension in `list --json` (and `install --json`).
type Item struct {
	Name         string               `json:"name"`
	Version      string               `json:"version,omitempty"`
	Description  string               `json:"description,omitempty"`
	Path         string               `json:"path"`
	Entry        string               `json:"entry"`
	Source       *SourceInfo          `json:"source,omitempty"`
	Enabled      extension.Enablement `json:"enabled"`
	Tools        []string             `json:"tools"`
	Docs         []string             `json:"docs"`
	MCPServers   []string             `json:"mcpServers"`
	ContextFiles []string             `json:"contextFiles"`
	Permissions  *PermissionsInfo     `json:"permissions,omitempty"`
	Problems     []extension.Problem  `json:"problems,omitempty"`
	Error        string               `json:"error,omitempty"`

	// What Gemini CLI shows too, under the names `gemini extensions list
	// -o json` gives them.
	ID           string            `json:"id,omitempty"`
	ExcludeTools []string          `json:"excludeTools"`
	Themes       []string          `json:"themes"`
	Skills       []extension.Skill `json:"skills"`
	// SkippedSkills are the SKILL.md files that are not skills, with why.
	SkippedSkills []extension.SkippedSkill `json:"skippedSkills,omitempty"`
	Agents        []extension.Agent        `json:"agents"`
	Hooks         json.RawMessage          `json:"hooks,omitempty"`
	HooksError    string                   `json:"hooksError,omitempty"`
	Settings      []extension.SettingState `json:"settings"`
	// UpdatedBy names the tools that can update the extension (see
	// updaters).
	UpdatedBy []string `json:"updatedBy"`
	// UpdateNote says why a tool cannot update it, when one cannot.
	UpdateNote string               `json:"updateNote,omitempty"`
	Conflicts  []extension.Conflict `json:"conflicts,omitempty"`
	// ServerSandbox says where its stdio MCP servers run (in Gemini CLI
	// unconfined, or in gemkit's sandbox) and how to switch them; absent
	// when it has none.
	ServerSandbox *extswitch.ServerState `json:"serverSandbox,omitempty"`
	// CodeParts say where each part of it that runs code runs: its
	// servers, its agents' servers, its hooks, its custom commands'
	// !{...} shell and its skills' scripts.
	CodeParts []extswitch.CodePart `json:"codeParts,omitempty"`
	// Choice is the person's choice for it (describe's refusals).
	Choice extension.ServerChoice `json:"-"`
	// HeldInGemini, when set, says that gemkit holds the extension in
	// Gemini CLI: switched, it changed since the person agreed
	// (internal/extswitch, hold.go).
	HeldInGemini *extension.Hold `json:"heldInGemini,omitempty"`
}

// Updaters says which tools can update an installed extension, and why
// not when one cannot. Gemini CLI's update of a git install runs git in
// the installed folder (ls-remote, then a fresh clone); a --path install
// holds only the repository's sub-folder and no .git, so Gemini CLI
// fails there ("not a git repository") and would install the whole
// repository if it got further. Its local installs compare the source's
// version and copy again, as gemkit's do; it can update a gemkit
// file:// install, which is a git install with a .git. GitHub release
// installs are Gemini CLI's alone.
func Updaters(md *extension.InstallMetadata) ([]string, string) {
	switch {
	case md == nil:
		return []string{}, "no " + extension.InstallMetadataFile + ": the source is unknown, so neither tool can update it"
	case md.Subdir != "":
		return []string{"gemkit"}, "only gemkit updates it: it was installed from the folder " + md.Subdir + " of a git repository (--path), which Gemini CLI's update does not know"
	case md.Type == extension.SourceGitHubRelease:
		return []string{"gemini"}, "only Gemini CLI updates it: it was installed from a GitHub release"
	}
	return []string{"gemkit", "gemini"}, ""
}

type SourceInfo struct {
	Type   string `json:"type"`
	Source string `json:"source"`
	Ref    string `json:"ref,omitempty"`
	Subdir string `json:"subdir,omitempty"`
}

type PermissionsInfo struct {
	Read            extension.Access `json:"read"`
	Write           extension.Access `json:"write"`
	ProtectedWrites []string         `json:"protectedWrites,omitempty"`
	Credentials     []string         `json:"credentials,omitempty"`
	AllowedHosts    []string         `json:"allowedHosts"`
	Summary         []string         `json:"summary"`
	Hash            string           `json:"hash"`
}

// permissionsOf is what list --json and describe show of m's
// permissions, from its Terms worked out once.
func permissionsOf(m *extension.Manifest) *PermissionsInfo {
	t := m.Terms()
	p := t.Policy
	return &PermissionsInfo{Read: p.Read, Write: p.Write, ProtectedWrites: p.ProtectedWrites,
		Credentials: p.Credentials, AllowedHosts: p.AllowedHosts, Summary: t.Lines, Hash: t.Hash}
}

func sourceOf(in *extension.Installed) *SourceInfo {
	if in.Metadata == nil {
		return nil
	}
	return &SourceInfo{Type: in.Metadata.Type, Source: in.Metadata.Source, Ref: in.Metadata.Ref, Subdir: in.Metadata.Subdir}
}

// Entry summarises one installed extension in full, for list
// --json, describe and install --json; en is its enablement when the
// caller has it already.
func Entry(st *extension.Store, in *extension.Installed, en *extension.Enablement) Item {
	it := Row(st, in, en)
	if in.Extension == nil {
		return it
	}
	m := in.Extension.Manifest
	for _, d := range m.Docs {
		it.Docs = append(it.Docs, d.Name)
	}
	it.ContextFiles = append(it.ContextFiles, in.Extension.ContextFiles...)
	it.Permissions = permissionsOf(m)
	it.ID = extension.ExtensionID(m.Name, in.Metadata)
	it.ExcludeTools = append(it.ExcludeTools, m.ExcludeTools...)
	it.Themes = themeNames(m)
	view := in.Extension.GeminiView(st.Workspace())
	it.Skills, it.SkippedSkills, it.Agents = view.Skills, view.SkippedSkills, view.Agents
	if view.HooksErr != nil {
		it.HooksError = view.HooksErr.Error()
	} else {
		it.Hooks = view.Hooks
	}
	it.Settings = in.Settings(st.Dir(), st.Workspace())
	return it
}

// Row is what the text list shows of an installed extension (its
// row, and the notes under the table) and no more: the rest of
// Entry reads more files of each extension (skills, agents, hooks,
// settings) and hashes its permissions, which the table does not show.
func Row(st *extension.Store, in *extension.Installed, en *extension.Enablement) Item {
	it := Item{Name: in.Name, Path: in.Entry, Entry: in.Entry, Source: sourceOf(in),
		Tools: []string{}, Docs: []string{}, MCPServers: []string{}, ContextFiles: []string{},
		ExcludeTools: []string{}, Themes: []string{}, Skills: []extension.Skill{}, Agents: []extension.Agent{}, Settings: []extension.SettingState{}}
	it.UpdatedBy, it.UpdateNote = Updaters(in.Metadata)
	var ve *extension.ValidationError
	if in.Err != nil && !errors.As(in.Err, &ve) {
		it.Error = in.Err.Error()
	}
	if in.Extension != nil {
		// Every problem, with what it stops; the warnings too.
		it.Problems = in.Extension.Problems
	}
	name := in.Name
	if in.Extension != nil {
		m := in.Extension.Manifest
		name = m.Name
		it.Name, it.Version, it.Description, it.Path = m.Name, m.Version, m.Description, in.Extension.Dir
		for _, t := range m.Tools {
			it.Tools = append(it.Tools, t.Name)
		}
		it.MCPServers = SortedNames(m.MCPServers)
	}
	if en != nil {
		it.Enabled = *en
	} else {
		it.Enabled, _ = st.Enablement(name)
	}
	return it
}

// themeNames lists the names of the themes the manifest adds.
func themeNames(m *extension.Manifest) []string {
	out := []string{}
	for _, raw := range m.Themes {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			out = append(out, t.Name)
		}
	}
	return out
}

// Enablements is each installed extension's enablement, found by its
// manifest's name where it can be read, else by its folder's.
func Enablements(all []*extension.Installed, enabled func(string) extension.Enablement) []extension.Enablement {
	ens := make([]extension.Enablement, len(all))
	for i, in := range all {
		name := in.Name
		if m := in.Manifest(); m != nil {
			name = m.Name
		}
		ens[i] = enabled(name)
	}
	return ens
}

// SortedNames are the keys of m, sorted.
func SortedNames(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// FillServers sets the server state of each readable item, and for the
// switched ones whether gemkit mcp can serve them.
func FillServers(sw *extswitch.Switch, items []Item, all []*extension.Installed, choices map[string]extension.ServerChoice, excluded []string, settingsErr error) {
	for i, in := range all {
		if m := in.Manifest(); m != nil {
			items[i].ServerSandbox = sw.StateOf(m, choices[m.Name], excluded)
			items[i].ServerSandbox.SetUntold(settingsErr)
			sw.Served(items[i].ServerSandbox, in, choices[m.Name])
		}
	}
}
