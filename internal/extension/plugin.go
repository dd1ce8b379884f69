package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/gemkit/gemkit/internal/agentplugin"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// An Agent Plugins 1.0.0 plugin (internal/agentplugin) is taken into the
// store as an extension: a folder with plugin.json and no
// gemini-extension.json. Its Extension has Plugin set, and a Manifest
// made from what the plugin declares: its name, version and
// description, and its valid mcp.json servers in Gemini CLI's shape, so
// that consent, the agreed copy, the sandbox and `gemkit mcp` take it
// as they take an extension's. What the specification does not define
// (hooks, agents, commands, policies, context files, settings, gemkit's
// own tools) a plugin has none of, whatever folders it ships: its
// readers here skip them (§7, §11.3: unsupported component types are
// ignored). Gemini CLI 0.61 skips such a folder in its extensions folder
// (no gemini-extension.json: ExtensionManager.loadExtension's "Skipping
// extension"), and runs nothing of it.

// IsPlugin reports whether e is an Agent Plugins plugin.
func (e *Extension) IsPlugin() bool { return e != nil && e.Plugin != nil }

// manifestFile is the name of e's manifest in its folder.
func (e *Extension) manifestFile() string {
	if e.IsPlugin() {
		return agentplugin.ManifestFile
	}
	return ManifestFile
}

// loadPlugin is loadIn of a plugin's folder open as root: dir is the
// folder as the caller named it, shown the manifest as messages name it.
func loadPlugin(root *fsutil.Root, shown string) (*Extension, error) {
	p, err := agentplugin.Read(root)
	if err != nil {
		var rej *agentplugin.RejectedError
		if errors.As(err, &rej) {
			return nil, fmt.Errorf("%s is not an Agent Plugins %s plugin gemkit loads: %s", shown, agentplugin.Version, rej.Where())
		}
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	m := &Manifest{Name: p.Name, Version: p.Version, Description: p.Description, AgentPlugin: true, contextNone: true}
	if len(p.Servers) > 0 {
		m.MCPServers = map[string]json.RawMessage{}
		for name, s := range p.Servers {
			m.MCPServers[name] = geminiShape(s)
		}
	}
	ext := &Extension{Dir: root.Dir(), Manifest: m, Raw: p.Raw, Plugin: p}
	for _, n := range p.Notes {
		ext.Problems = append(ext.Problems, Problem{Path: n.File + pathSuffix(n.Path), Message: n.Text,
			Fix: n.Fix, Effect: EffectWarning})
	}
	// §7.1: a skill that is not an Agent Skill is skipped, and said.
	_, skipped := scanPluginSkills(root, p)
	for _, s := range skipped {
		rel, _ := root.Rel(s.Location)
		ext.Problems = append(ext.Problems, Problem{Path: filepath.ToSlash(rel), Message: s.Reason + ": this skill is skipped",
			Fix: "make its SKILL.md an Agent Skill (agentskills.io/specification)", Effect: EffectWarning})
	}
	return ext, nil
}

func pathSuffix(p string) string {
	if p == "" {
		return ""
	}
	return ": " + p
}

// geminiShape is a plugin's server as an extension's mcpServers entry
// reads: command, args, env and cwd as written (placeholders expanded
// only at launch, by extmcp), a Streamable HTTP server as httpUrl, an
// SSE one as url with type sse: the transport each declares, and no
// other, as Gemini CLI 0.61 takes those keys (createUrlTransport).
func geminiShape(s agentplugin.Server) json.RawMessage {
	var v any
	switch s.Type {
	case agentplugin.TypeStdio:
		v = struct {
			Command string            `json:"command"`
			Args    []string          `json:"args,omitempty"`
			Env     map[string]string `json:"env,omitempty"`
			Cwd     string            `json:"cwd,omitempty"`
		}{s.Command, s.Args, s.Env, s.Cwd}
	case agentplugin.TypeHTTP:
		v = struct {
			HTTPURL string            `json:"httpUrl"`
			Headers map[string]string `json:"headers,omitempty"`
		}{s.URL, s.Headers}
	default:
		v = struct {
			URL     string            `json:"url"`
			Type    string            `json:"type"`
			Headers map[string]string `json:"headers,omitempty"`
		}{s.URL, "sse", s.Headers}
	}
	b, _ := json.Marshal(v)
	return b
}

// scanPluginSkills is scanSkills of a plugin (§7.1): the SKILL.md of
// each folder right under skills/ that agentplugin found, each an Agent
// Skill whose name is its folder's, or skipped with why.
func scanPluginSkills(root *fsutil.Root, p *agentplugin.Plugin) (skills []Skill, skipped []SkippedSkill) {
	skills = []Skill{}
	for _, dir := range p.Skills {
		f := path.Join(dir, "SKILL.md")
		sk, why := readSkillFile(root, f)
		if why == "" {
			why = agentplugin.SkillProblem(dir, sk.Name, sk.Description)
		}
		if why != "" {
			skipped = append(skipped, SkippedSkill{Location: root.Path(f), Reason: why})
			continue
		}
		skills = append(skills, sk)
	}
	sort.Slice(skills, func(i, j int) bool { return skills[i].Location < skills[j].Location })
	return skills, skipped
}

// hasPluginManifest reports whether the folder dir holds plugin.json and
// no gemini-extension.json: an Agent Plugins plugin.
func hasPluginManifest(dir string) bool {
	if _, err := lstatIn(dir, ManifestFile); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	_, err := lstatIn(dir, agentplugin.ManifestFile)
	return err == nil
}

// PluginsDir is where gemkit keeps the Agent Plugins plugins it
// installed or linked, one entry each as in the extensions folder:
// ~/.gemini/gemkit/plugins, beside gemkit's other records, out of
// ~/.gemini/extensions. Gemini CLI 0.61 reads every folder of its
// extensions folder and, for one without gemini-extension.json, prints
// "Warning: Skipping extension in …: Configuration file not found" at
// every start (ExtensionManager.loadExtension), and fails to load any
// extension when its security.allowedExtensions does not match one's
// source (_buildExtension throws outside its try): a plugin there would
// cost every Gemini CLI session a warning, or all its extensions.
func (s *Store) PluginsDir() string { return filepath.Join(s.stateDir(), "plugins") }

// parentOf is the folder an extension like ext is installed in: the
// extensions folder, or PluginsDir for a plugin.
func (s *Store) parentOf(ext *Extension) string {
	if ext.IsPlugin() {
		return s.PluginsDir()
	}
	return s.Dir()
}

// listed is an entry of the extensions folder or PluginsDir (parent,
// whose real path is real).
type listed struct {
	fs.DirEntry
	parent, real string
}

// entriesIn lists the entries of parent that are folders, or links to
// folders, and not gemkit's staging folders, sorted by name; what names
// parent in errors.
func (s *Store) entriesIn(parent, what string) ([]listed, error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	var out []listed
	for _, e := range entries {
		if isStagingName(e.Name()) {
			continue
		}
		if !e.IsDir() {
			// A symlink to a folder is an extension too.
			fi, err := os.Stat(filepath.Join(parent, e.Name()))
			if err != nil || !fi.IsDir() {
				continue
			}
		}
		out = append(out, listed{DirEntry: e, parent: parent, real: real})
	}
	return out, nil
}
