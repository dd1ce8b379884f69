package claudeplugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
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
	if p.Servers, err = servers(r, man, "mcpServers", ".mcp.json", "mcpServers"); err != nil {
		return err
	}
	if p.LSP, err = servers(r, man, "lspServers", ".lsp.json", ""); err != nil {
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

// servers reads a map of named servers ({"NAME":{"command":…,"args":[…]}}),
// under wrap when the file wraps it (.mcp.json's {"mcpServers":{…}}).
func servers(r *fsutil.Root, man agentread.Value, key, def, wrap string) ([]Server, error) {
	v, where, ok, err := component(r, man, key, def)
	if !ok || err != nil {
		return []Server{}, err
	}
	if !strings.HasPrefix(where, "plugin.json ") && wrap != "" {
		if w, has := v.Get(wrap); has {
			v = w
		} else {
			return nil, fmt.Errorf("%s: no %q object: not read", where, wrap)
		}
	}
	var m map[string]Server
	if err := agentread.Decode(v, &m, false); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	out := make([]Server, 0, len(m))
	for _, k := range v.Keys() {
		s := m[k]
		s.Name = k
		out = append(out, s)
	}
	return out, nil
}

// hooks reads hooks/hooks.json ({"hooks":{"EVENT":[{"matcher":…,
// "hooks":[{"type":"command","command":…}]}]}}), or the manifest's.
func hooks(r *fsutil.Root, man agentread.Value) ([]Hook, error) {
	v, where, ok, err := component(r, man, "hooks", "hooks/hooks.json")
	if !ok || err != nil {
		return []Hook{}, err
	}
	w, has := v.Get("hooks")
	if !has {
		return nil, fmt.Errorf("%s: no \"hooks\" object: not read", where)
	}
	var m map[string][]struct {
		Hooks []struct {
			Type    string `json:"type"`
			Command string `json:"command"`
			URL     string `json:"url"`
		} `json:"hooks"`
	}
	if err := agentread.Decode(w, &m, false); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	out := []Hook{}
	for _, ev := range w.Keys() {
		h := Hook{Event: ev, Commands: []string{}}
		for _, g := range m[ev] {
			for _, c := range g.Hooks {
				h.Commands = append(h.Commands, strings.TrimSpace(c.Type+": "+c.Command+c.URL))
			}
		}
		out = append(out, h)
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

// directoryRoot is the folder of plugin name in the directory
// marketplace at loc: its .claude-plugin/marketplace.json's plugins entry
// of that name, whose source is a "./relative/path" in the marketplace.
// Any other source (an object, a bare name under metadata.pluginRoot),
// or two entries of the name, is refused: where Claude Code runs the
// plugin from would be a guess.
func directoryRoot(loc, name string) (string, error) {
	r, err := fsutil.OpenRoot(loc)
	if err != nil {
		return "", fmt.Errorf("directory marketplace: %w", err)
	}
	defer r.Close()
	const file = ".claude-plugin/marketplace.json"
	var m struct {
		Plugins []struct {
			Name   string          `json:"name"`
			Source json.RawMessage `json:"source"`
		} `json:"plugins"`
	}
	if err := readJSON(r, file, &m); err != nil {
		return "", err
	}
	src := ""
	for _, e := range m.Plugins {
		if e.Name != name {
			continue
		}
		if src != "" {
			return "", fmt.Errorf("%s: two plugins named %q", r.Path(file), name)
		}
		var s string
		if json.Unmarshal(e.Source, &s) != nil || !strings.HasPrefix(s, "./") {
			return "", fmt.Errorf("%s: the source of %q is %s, not a \"./relative/path\": gemkit does not know where Claude Code runs it from", r.Path(file), name, e.Source)
		}
		src = s
	}
	if src == "" {
		return "", fmt.Errorf("%s: no plugin named %q", r.Path(file), name)
	}
	clean := path.Clean(src)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%s: the source of %q, %s, is outside the marketplace", r.Path(file), name, src)
	}
	if _, err := r.Stat(clean); err != nil {
		return "", err
	}
	return r.Path(clean), nil
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
