package claudeplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// readParts reads the plugin's folder (the plugin author's bytes,
// opened through fsutil.Root so no link leads out of it): its manifest
// .claude-plugin/plugin.json, optional, whose mcpServers, hooks,
// lspServers and monitors may name another file or hold the parts
// inline, and whose skills, agents and commands add folders to the
// default ones (Claude Code 2.1.330's manifest schema: "Path to
// .lsp.json configuration file relative to plugin root", "When omitted,
// monitors/monitors.json at the plugin root is loaded if present").
func readParts(p *Plugin) error {
	r, err := fsutil.OpenRoot(p.Root)
	if err != nil {
		return fmt.Errorf("plugin folder: %w", err)
	}
	defer r.Close()
	man, err := readValue(r, ".claude-plugin/plugin.json")
	if errors.Is(err, fs.ErrNotExist) {
		man, err = agentread.ParseJSON([]byte("{}"))
	}
	if err != nil {
		return err
	}
	if !man.IsObject() {
		return fmt.Errorf("%s: a %s, not an object", r.Path(".claude-plugin/plugin.json"), man.TypeOf())
	}
	if v, ok := man.Get("version"); ok && p.Version == "" {
		p.Version, _ = v.Str()
	}
	if p.Servers, err = servers(r, man, "mcpServers"); err != nil {
		return err
	}
	if p.LSP, err = servers(r, man, "lspServers"); err != nil {
		return err
	}
	if p.Hooks, err = hooks(r, man); err != nil {
		return err
	}
	if p.Monitors, err = monitors(r, man); err != nil {
		return err
	}
	for _, c := range []struct {
		key, dir string
		into     *[]string
	}{{"skills", "skills", &p.Skills}, {"agents", "agents", &p.Agents}, {"commands", "commands", &p.Commands}} {
		if *c.into, err = names(r, man, c.key, c.dir); err != nil {
			return err
		}
	}
	return nil
}

// readValue reads name under r as JSON.parse does.
func readValue(r *fsutil.Root, name string) (agentread.Value, error) {
	data, err := r.ReadFile(name, limit)
	if err != nil {
		return agentread.Value{}, err
	}
	v, err := agentread.ParseJSON(data)
	if err != nil {
		return agentread.Value{}, fmt.Errorf("%s: %w", r.Path(name), err)
	}
	return v, nil
}

// component is the manifest's key when given (a path relative to the
// plugin root, read; or the value inline), else the default file; ok is
// false when neither is there.
func component(r *fsutil.Root, man agentread.Value, key, def string) (v agentread.Value, where string, ok bool, err error) {
	if m, has := man.Get(key); has {
		s, isStr := m.Str()
		if !isStr {
			return m, "plugin.json " + key, true, nil
		}
		def = path.Clean(strings.TrimPrefix(s, "./"))
	}
	v, err = readValue(r, def)
	if errors.Is(err, fs.ErrNotExist) {
		return v, def, false, nil
	}
	return v, r.Path(def), err == nil, err
}

// source is one place a part is read from: a file, or the manifest's
// value inline.
type source struct {
	v      agentread.Value
	where  string
	inline bool
}

// sources are the places Claude Code 2.1.330 reads mcpServers, hooks or
// lspServers from: the standard file def when it is there, and also
// what the manifest's key names, which adds to it (its manifest schema:
// "MCP servers to include in the plugin (in addition to those in the
// .mcp.json file, if it exists)", "Additional hooks (in addition to
// those in hooks/hooks.json, if it exists)"; tried with the real Claude
// Code, `claude plugin details` lists the servers, hooks and LSP servers
// of both): a path relative to the plugin's folder, the part inline, or
// an array of either. A path to the standard file adds nothing (Claude
// Code loads it once), a missing file nothing (Claude Code skips it).
func sources(r *fsutil.Root, man agentread.Value, key, def string) ([]source, error) {
	var out []source
	v, err := readValue(r, def)
	if err == nil {
		out = append(out, source{v: v, where: r.Path(def)})
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	m, has := man.Get(key)
	if !has {
		return out, nil
	}
	items, isArray := m.Elems()
	if !isArray {
		items = []agentread.Value{m}
	}
	for i, it := range items {
		where := "plugin.json " + key
		if isArray {
			where += fmt.Sprintf("[%d]", i)
		}
		name, isStr := it.Str()
		switch {
		case !isStr && !it.IsObject():
			return nil, fmt.Errorf("%s: %s, not a path or an object: not read", where, it.Describe())
		case !isStr:
			out = append(out, source{v: it, where: where, inline: true})
			continue
		case key == "mcpServers" && (strings.HasSuffix(name, ".mcpb") || strings.HasSuffix(name, ".dxt")):
			return nil, fmt.Errorf("%s: %q is an MCP bundle, which gemkit does not read", where, name)
		}
		file := path.Clean(strings.TrimPrefix(name, "./"))
		if file == def {
			continue
		}
		fv, err := readValue(r, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, source{v: fv, where: r.Path(file)})
	}
	return out, nil
}

// Entry is one part as Claude Code reads it: a server's name and
// value, or one source's hook event map ({"EVENT":[…]}, no name), and
// where it was read (for words).
type Entry struct {
	Name  string
	Value agentread.Value
	Where string
}

// ServerEntries are the plugin folder r's MCP servers (key
// "mcpServers": .mcp.json and the manifest's) or LSP servers
// ("lspServers": .lsp.json and the manifest's), in the order Claude Code
// 2.1.330 lists them: the one reading of them, for whatever converts or
// shows them. Claude Code reads a plugin's MCP file as
// `X.mcpServers || X` (its U_e): the servers under the wrapper, or at
// the top level when there is none, as nine plugins of
// anthropics/claude-plugins-official write them. A wrapper that is not
// an object is read by JavaScript's truthiness (null: the top level,
// the wrapper a server; an array: its indexes servers), which is not
// guessed: not read. Nor is a name two sources give: which one Claude
// Code runs is not known.
func ServerEntries(r *fsutil.Root, man agentread.Value, key string) ([]Entry, error) {
	def, wrap := ".mcp.json", "mcpServers"
	if key == "lspServers" {
		def, wrap = ".lsp.json", ""
	} else if key != "mcpServers" {
		return nil, fmt.Errorf("claudeplugin: no servers under %q", key)
	}
	srcs, err := sources(r, man, key, def)
	if err != nil {
		return nil, err
	}
	var out []Entry
	seen := map[string]string{}
	for _, src := range srcs {
		v := src.v
		if !src.inline && wrap != "" {
			if w, has := v.Get(wrap); has && !w.IsObject() {
				return nil, fmt.Errorf("%s: %q is %s, not an object: not read", src.where, wrap, w.Describe())
			} else if has {
				v = w
			}
		}
		if !v.IsObject() {
			return nil, fmt.Errorf("%s: %s, not an object of servers: not read", src.where, v.Describe())
		}
		for _, k := range v.Keys() {
			if first, dup := seen[k]; dup {
				return nil, fmt.Errorf("%s: server %q, also in %s: which one Claude Code runs is not known", src.where, k, first)
			}
			seen[k] = src.where
			e, _ := v.Get(k)
			out = append(out, Entry{Name: k, Value: e, Where: src.where})
		}
	}
	return out, nil
}

// servers reads ServerEntries as Servers.
func servers(r *fsutil.Root, man agentread.Value, key string) ([]Server, error) {
	entries, err := ServerEntries(r, man, key)
	if err != nil {
		return nil, err
	}
	out := []Server{}
	for _, e := range entries {
		var s Server
		if err := agentread.Decode(e.Value, &s, false); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", e.Where, e.Name, err)
		}
		s.Name = e.Name
		out = append(out, s)
	}
	return out, nil
}

// HookMaps are the plugin folder r's hook event maps ({"EVENT":[{
// "matcher":…,"hooks":[{"type":"command","command":…}]}]}), one a
// source, in the order Claude Code 2.1.330 reads them: hooks/hooks.json's
// "hooks", then the manifest's, which add to it: files of that form, or
// the event map inline (an inline {"hooks":{…}} is an event named
// "hooks" to Claude Code, which ignores it; gemkit does not read it).
// A file naming a hooks module ("modules": a JavaScript module
// exporting register(on), loaded into Claude Code's own process, its
// hooks.json schema says) is not read: gemkit cannot show or run it.
func HookMaps(r *fsutil.Root, man agentread.Value) ([]Entry, error) {
	srcs, err := sources(r, man, "hooks", "hooks/hooks.json")
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, src := range srcs {
		w := src.v
		if !src.inline {
			if _, has := src.v.Get("modules"); has {
				return nil, fmt.Errorf("%s: names a hooks module (\"modules\", JavaScript Claude Code loads into its own process), which gemkit does not read or run: not read", src.where)
			}
			var has bool
			if w, has = src.v.Get("hooks"); !has {
				return nil, fmt.Errorf("%s: no \"hooks\" object: not read", src.where)
			}
		}
		out = append(out, Entry{Value: w, Where: src.where})
	}
	return out, nil
}

// hooks reads HookMaps as Hooks, an event a source.
func hooks(r *fsutil.Root, man agentread.Value) ([]Hook, error) {
	maps, err := HookMaps(r, man)
	if err != nil {
		return nil, err
	}
	out := []Hook{}
	for _, src := range maps {
		var m map[string][]struct {
			Hooks []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				URL     string `json:"url"`
			} `json:"hooks"`
		}
		if err := agentread.Decode(src.Value, &m, false); err != nil {
			return nil, fmt.Errorf("%s: %w", src.Where, err)
		}
		for _, ev := range src.Value.Keys() {
			h := Hook{Event: ev, Commands: []string{}}
			for _, g := range m[ev] {
				for _, c := range g.Hooks {
					h.Commands = append(h.Commands, strings.TrimSpace(c.Type+": "+c.Command+c.URL))
				}
			}
			out = append(out, h)
		}
	}
	return out, nil
}

// monitors reads monitors/monitors.json, an array of {"name","command"}
// (names unique within a plugin), or the manifest's monitors (also under
// experimental.monitors, which Claude Code 2.1.330 reads first).
func monitors(r *fsutil.Root, man agentread.Value) ([]Server, error) {
	if ex, ok := man.Get("experimental"); ok {
		if m, ok := ex.Get("monitors"); ok {
			var out []Server
			if err := agentread.Decode(m, &out, false); err != nil {
				return nil, fmt.Errorf("plugin.json experimental.monitors: %w", err)
			}
			return out, nil
		}
	}
	v, where, ok, err := component(r, man, "monitors", "monitors/monitors.json")
	if !ok || err != nil {
		return []Server{}, err
	}
	out := []Server{}
	if err := agentread.Decode(v, &out, false); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return out, nil
}

// names lists the skills (folders holding SKILL.md), agents or commands
// (.md files) in the default folder and in those the manifest adds.
func names(r *fsutil.Root, man agentread.Value, key, def string) ([]string, error) {
	dirs := []string{def}
	if m, ok := man.Get(key); ok {
		if s, isStr := m.Str(); isStr {
			dirs = append(dirs, s)
		} else if err := agentread.Decode(m, &[]string{}, false); err != nil {
			return nil, fmt.Errorf("plugin.json %s: %w", key, err)
		} else {
			els, _ := m.Elems()
			for _, e := range els {
				s, _ := e.Str()
				dirs = append(dirs, s)
			}
		}
	}
	out := []string{}
	for _, d := range dirs {
		d = path.Clean(strings.TrimPrefix(d, "./"))
		if strings.HasSuffix(d, ".md") {
			out = append(out, strings.TrimSuffix(path.Base(d), ".md"))
			continue
		}
		ents, err := r.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			switch {
			case key == "skills" && e.IsDir():
				if _, err := r.Stat(d + "/" + e.Name() + "/SKILL.md"); err == nil {
					out = append(out, e.Name())
				}
			case key != "skills" && !e.IsDir() && strings.HasSuffix(e.Name(), ".md"):
				out = append(out, strings.TrimSuffix(e.Name(), ".md"))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// dirMarkets are the marketplaces one List has opened, by folder: each
// one's .claude-plugin/marketplace.json is read once however many of
// its plugins are installed (read again for each, 50 plugins of one
// marketplace were three quarters of what `gemkit plugins list`
// allocated, and most of its time: bench/plugins).
type dirMarkets map[string]*dirMarket

// dirMarket is one marketplace's folder, open, and its plugins entries,
// or why it could not be read.
type dirMarket struct {
	r       *fsutil.Root
	file    string // the marketplace file's path, for the messages
	entries []struct {
		Name   string          `json:"name"`
		Source json.RawMessage `json:"source"`
	}
	values []agentread.Value // the entries as read, for their other keys
	err    error
}

const marketFile = ".claude-plugin/marketplace.json"

// open returns the marketplace at loc, read on its first call.
func (d dirMarkets) open(loc string) *dirMarket {
	if m := d[loc]; m != nil {
		return m
	}
	m := &dirMarket{}
	d[loc] = m
	if m.r, m.err = fsutil.OpenRoot(loc); m.err != nil {
		m.err = fmt.Errorf("directory marketplace: %w", m.err)
		return m
	}
	m.file = m.r.Path(marketFile)
	v, err := readValue(m.r, marketFile)
	if err != nil {
		m.err = err
		return m
	}
	var top struct {
		Plugins []struct {
			Name   string          `json:"name"`
			Source json.RawMessage `json:"source"`
		} `json:"plugins"`
	}
	if err := agentread.Decode(v, &top, false); err != nil {
		m.err = fmt.Errorf("%s: %w", m.file, err)
		return m
	}
	m.entries = top.Plugins
	if pl, ok := v.Get("plugins"); ok {
		m.values, _ = pl.Elems()
	}
	return m
}

// entryParts are the keys by which the marketplace's entries for the
// plugin name add to it: parts of their own, or "strict": false (the
// entry is then the plugin's manifest). Claude Code 2.1.330 loads them
// (tried: an entry's hooks, lspServers and commands load; twelve LSP
// plugins of anthropics/claude-plugins-official are only such an
// entry); gemkit does not read them yet.
func (m *dirMarket) entryParts(name string) []string {
	var keys []string
	for i, e := range m.entries {
		if e.Name != name || i >= len(m.values) {
			continue
		}
		for _, k := range m.values[i].Keys() {
			if v, _ := m.values[i].Get(k); slices.Contains(entryPartKeys, k) {
				keys = append(keys, strconv.Quote(k))
			} else if k == "strict" && !v.Truthy() {
				keys = append(keys, `"strict": `+string(v.JSON(false)))
			}
		}
	}
	return keys
}

// entryPartKeys are the keys of a plugin's manifest that bring parts
// (Claude Code 2.1.330's manifest schema), which an entry may carry too.
var entryPartKeys = []string{"commands", "agents", "skills", "hooks", "mcpServers", "lspServers", "monitors", "outputStyles", "themes", "workflows", "binaries", "settings", "experimental"}

// close closes every marketplace opened.
func (d dirMarkets) close() {
	for _, m := range d {
		if m.r != nil {
			m.r.Close()
		}
	}
}

// root is the folder of plugin name in the directory marketplace at loc:
// its .claude-plugin/marketplace.json's plugins entry of that name,
// whose source is a "./relative/path" in the marketplace. Any other
// source (an object, a bare name under metadata.pluginRoot), or two
// entries of the name, is refused: where Claude Code runs the plugin
// from would be a guess.
func (d dirMarkets) root(loc, name string) (string, error) {
	m := d.open(loc)
	if m.err != nil {
		return "", m.err
	}
	src := ""
	for _, e := range m.entries {
		if e.Name != name {
			continue
		}
		if src != "" {
			return "", fmt.Errorf("%s: two plugins named %q", m.file, name)
		}
		var s string
		if json.Unmarshal(e.Source, &s) != nil || !strings.HasPrefix(s, "./") {
			return "", fmt.Errorf("%s: the source of %q is %s, not a \"./relative/path\": gemkit does not know where Claude Code runs it from", m.file, name, e.Source)
		}
		src = s
	}
	if src == "" {
		return "", fmt.Errorf("%s: no plugin named %q", m.file, name)
	}
	clean := path.Clean(src)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s: the source of %q, %s, is outside the marketplace", m.file, name, src)
	}
	if _, err := m.r.Stat(clean); err != nil {
		return "", err
	}
	return m.r.Path(clean), nil
}

// Manifest reads the plugin folder r's .claude-plugin/plugin.json as
// Claude Code does: an object, or {} when there is none.
func Manifest(r *fsutil.Root) (agentread.Value, error) {
	man, err := readValue(r, ".claude-plugin/plugin.json")
	if errors.Is(err, fs.ErrNotExist) {
		return agentread.ParseJSON([]byte("{}"))
	}
	if err == nil && !man.IsObject() {
		err = fmt.Errorf("%s: a %s, not an object", r.Path(".claude-plugin/plugin.json"), man.TypeOf())
	}
	return man, err
}

// Component is one part of the plugin folder r as Claude Code finds it:
// the manifest man's key, a path relative to the plugin root (read) or
// the value inline, else the default file def; ok is false when there is
// neither. where names it for words.
func Component(r *fsutil.Root, man agentread.Value, key, def string) (v agentread.Value, where string, ok bool, err error) {
	return component(r, man, key, def)
}
