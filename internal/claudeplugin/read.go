// Package claudeplugin reads Claude Code's plugins as Claude Code 2.1.330
// reads them: the plugins installed under the person's Claude Code home,
// their marketplaces, the scopes that enable them, and every part each
// plugin brings (MCP servers, hooks, LSP servers, monitors, skills,
// agents, commands). Each part runs unconfined in Claude Code's own
// process tree unless the plugin is switched (internal/claudeswitch).
//
// The file shapes were learnt by running the real Claude Code 2.1.330
// offline (`claude plugin marketplace add DIR`, `claude plugin install
// NAME@MARKET` with a directory marketplace) and from the strings of its
// binary. Every JSON file is read with agentread (JSON.parse's reading:
// exact-case keys, the last of a duplicate wins); a file gemkit cannot
// read as Claude Code does makes the plugin unreadable, with why, never
// a guess.
package claudeplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// Runs is where every part of a plugin not switched to gemkit
// (internal/claudeswitch) runs.
const Runs = "unconfined, in Claude Code's own process tree"

// limit bounds each file read: Claude Code's files are small, and a
// plugin's folder is the plugin author's.
const limit = 1 << 20

// Folder is the Claude Code home as Claude Code resolves it:
// $CLAUDE_CONFIG_DIR, else ~/.claude (ide.AgentClaude).
func Folder(getenv func(string) string, home, cwd string) string {
	return ide.AgentClaude.Folder(getenv, home, cwd)
}

// Plugin is one installed plugin and what it brings.
type Plugin struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Marketplace string `json:"marketplace"`
	Source      string `json:"marketplaceSource,omitempty"`
	Version     string `json:"version,omitempty"`
	Scope       string `json:"installScope,omitempty"`
	Path        string `json:"installPath,omitempty"`
	// Root is the folder Claude Code runs the plugin from, and the one
	// read: installPath, but for a directory marketplace the plugin's
	// folder in that marketplace (Claude Code 2.1.330's `claude mcp
	// list` runs ${CLAUDE_PLUGIN_ROOT} there, not in plugins/cache).
	Root string `json:"root,omitempty"`
	// Project is the project a project- or local-scope installation
	// belongs to (installed_plugins.json's projectPath).
	Project    string   `json:"projectPath,omitempty"`
	Enabled    []Scope  `json:"enabledIn"`
	Unreadable string   `json:"unreadable,omitempty"`
	Runs       string   `json:"runs"`
	Servers    []Server `json:"mcpServers"`
	Hooks      []Hook   `json:"hooks"`
	LSP        []Server `json:"lspServers"`
	Monitors   []Server `json:"monitors"`
	Skills     []string `json:"skills"`
	Agents     []string `json:"agents"`
	Commands   []string `json:"commands"`
}

// Scope is one settings file's word on a plugin (enabledPlugins).
type Scope struct {
	Scope   string `json:"scope"`
	File    string `json:"file"`
	Enabled bool   `json:"enabled"`
	// Unreadable: the file could not be read as Claude Code reads it,
	// so whether it enables the plugin is not known.
	Unreadable bool `json:"unreadable,omitempty"`
}

// Server is a command a plugin has Claude Code start: an MCP server, an
// LSP server or a monitor.
type Server struct {
	Name    string   `json:"name"`
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	URL     string   `json:"url,omitempty"`
}

// Hook is one event's hook commands.
type Hook struct {
	Event    string   `json:"event"`
	Commands []string `json:"commands"`
}

// Home is what List found: the plugins, and the files that could not be
// read as Claude Code reads them.
type Home struct {
	Dir        string   `json:"dir"`
	Plugins    []Plugin `json:"plugins"`
	Unreadable []string `json:"unreadable,omitempty"`
}

// installed is plugins/installed_plugins.json as Claude Code 2.1.330
// writes it: {"version":2,"plugins":{"NAME@MARKET":[{"scope":"user",
// "installPath":…,"version":…,"installedAt":…,"lastUpdated":…}]}}.
type installed struct {
	Version float64                 `json:"version"`
	Plugins map[string][]installRec `json:"plugins"`
}

type installRec struct {
	Scope       string `json:"scope"`
	InstallPath string `json:"installPath"`
	Version     string `json:"version"`
	ProjectPath string `json:"projectPath"`
}

// market is one entry of plugins/known_marketplaces.json:
// {"NAME":{"source":{"source":"directory","path":…},"installLocation":…}}.
type market struct {
	Source struct {
		Source string `json:"source"`
		Path   string `json:"path"`
		Repo   string `json:"repo"`
		URL    string `json:"url"`
	} `json:"source"`
	InstallLocation string `json:"installLocation"`
}

// readJSON reads name under r into v as JSON.parse would; a missing file
// is fs.ErrNotExist, anything else that is not Claude Code's reading is
// an error saying why.
func readJSON(r *fsutil.Root, name string, v any) error {
	data, err := r.ReadFile(name, limit)
	if err != nil {
		return err
	}
	if err := agentread.Unmarshal(data, v, false); err != nil {
		return fmt.Errorf("%s: %w", r.Path(name), err)
	}
	return nil
}

// readInstalled reads plugins/installed_plugins.json, only in the form
// of version 2.
func readInstalled(root *fsutil.Root) (*installed, error) {
	const name = "plugins/installed_plugins.json"
	v, err := readValue(root, name)
	if err != nil {
		return nil, err
	}
	if n, _ := v.Get("version"); func() bool { f, ok := n.Num(); return !ok || f != 2 }() {
		return nil, fmt.Errorf("%s: its version is %s, not 2 (the form Claude Code 2.1.330 writes)", root.Path(name), n.JSON(false))
	}
	var inst installed
	if err := agentread.Decode(v, &inst, false); err != nil {
		return nil, fmt.Errorf("%s: %w", root.Path(name), err)
	}
	return &inst, nil
}

// List reads the plugins installed under dir (the Claude Code home) and
// their enablement in the user settings and in project's .claude folder
// (project may be "").
func List(dir, project string) (*Home, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("no Claude Code home: set HOME or CLAUDE_CONFIG_DIR")
	}
	h := &Home{Dir: dir, Plugins: []Plugin{}}
	root, err := fsutil.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	inst, err := readInstalled(root)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the installed plugins as Claude Code does: %w", err)
	}
	var markets map[string]market
	if err := readJSON(root, "plugins/known_marketplaces.json", &markets); err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.Unreadable = append(h.Unreadable, err.Error())
	}
	scopes, bad := enablements(root, project)
	h.Unreadable = append(h.Unreadable, bad...)
	ids := make([]string, 0, len(inst.Plugins))
	for id := range inst.Plugins {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	dirs := dirMarkets{}
	defer dirs.close()
	for _, id := range ids {
		for _, rec := range inst.Plugins[id] {
			h.Plugins = append(h.Plugins, plugin(id, rec, markets, dirs, scopes))
		}
	}
	return h, nil
}

// plugin reads one installation record.
func plugin(id string, rec installRec, markets map[string]market, dirs dirMarkets, scopes []scopeFile) Plugin {
	p := Plugin{ID: id, Version: rec.Version, Scope: rec.Scope, Path: rec.InstallPath, Project: rec.ProjectPath, Runs: Runs, Enabled: []Scope{}}
	p.Name, p.Marketplace, _ = strings.Cut(id, "@")
	p.Root = rec.InstallPath
	m, ok := markets[p.Marketplace]
	if ok {
		p.Source = strings.TrimSpace(m.Source.Source + " " + m.Source.Path + m.Source.Repo + m.Source.URL)
	}
	for _, s := range scopes {
		if s.unreadable {
			p.Enabled = append(p.Enabled, Scope{Scope: s.scope, File: s.file, Unreadable: true})
		} else if on, ok := s.plugins[id]; ok {
			p.Enabled = append(p.Enabled, Scope{Scope: s.scope, File: s.file, Enabled: on})
		}
	}
	err := error(nil)
	if ok && m.Source.Source == "directory" {
		p.Root, err = dirs.root(m.InstallLocation, p.Name)
	}
	if err == nil && ok && filepath.IsAbs(m.InstallLocation) {
		err = entryParts(dirs.open(m.InstallLocation), p.Name)
	}
	if err == nil {
		err = readParts(&p)
	}
	if err != nil {
		// None of what was read before the refusal is shown: the
		// plugin is held whole.
		p = Plugin{ID: p.ID, Name: p.Name, Marketplace: p.Marketplace, Source: p.Source, Version: p.Version,
			Scope: p.Scope, Path: p.Path, Root: p.Root, Project: p.Project, Enabled: p.Enabled, Runs: p.Runs, Unreadable: err.Error()}
	}
	return p
}

// entryParts refuses a plugin whose marketplace entry adds to it
// (dirMarket.entryParts): listed without what the entry brings, it would
// show less than Claude Code runs. A marketplace whose file is not there
// to read (a clone gone) is not looked into.
func entryParts(m *dirMarket, name string) error {
	if m.err != nil {
		return nil
	}
	if keys := m.entryParts(name); len(keys) > 0 {
		return fmt.Errorf("%s: the entry of %q gives it %s, which gemkit does not read yet: not read", m.file, name, strings.Join(keys, ", "))
	}
	return nil
}

// scopeFile is one settings file's enabledPlugins.
type scopeFile struct {
	scope, file string
	plugins     map[string]bool
	unreadable  bool
}

// enablements reads enabledPlugins ({"NAME@MARKET": true}) from the
// user settings and the project's shared and local ones, in Claude
// Code's order of precedence (a later file wins).
func enablements(home *fsutil.Root, project string) ([]scopeFile, []string) {
	var out []scopeFile
	var bad []string
	read := func(r *fsutil.Root, name, scope string) {
		var s struct {
			EnabledPlugins map[string]bool `json:"enabledPlugins"`
		}
		if err := readJSON(r, name, &s); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				bad = append(bad, err.Error())
				out = append(out, scopeFile{scope: scope, file: r.Path(name), unreadable: true})
			}
			return
		}
		out = append(out, scopeFile{scope: scope, file: r.Path(name), plugins: s.EnabledPlugins})
	}
	read(home, "settings.json", "user")
	if project != "" {
		pr, err := fsutil.OpenRoot(filepath.Join(project, ide.AgentClaude.HomeDir))
		switch {
		case err == nil:
			defer pr.Close()
			read(pr, "settings.json", "project")
			read(pr, "settings.local.json", "local")
		case !errors.Is(err, fs.ErrNotExist):
			bad = append(bad, err.Error())
		}
	}
	return out, bad
}

// EnabledNow is the scope whose word holds (the last that names the
// plugin), and whether it enables it; a scope whose file is unreadable
// holds, and enables nothing that gemkit knows of.
func (p Plugin) EnabledNow() (Scope, bool) {
	if len(p.Enabled) == 0 {
		return Scope{}, false
	}
	for _, s := range p.Enabled {
		if s.Unreadable {
			return s, false
		}
	}
	s := p.Enabled[len(p.Enabled)-1]
	return s, s.Enabled
}
