package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/shell"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// switchParts is what the switch takes from Gemini CLI for one
// extension: the names of mcp.excluded its servers and its agents'
// servers need, and its command hooks, each with how it is switched.
type switchParts struct {
	// Names are the names of mcp.excluded: the manifest's switched
	// servers and the agents'.
	Names []string
	// Agents are the servers its agents declare.
	Agents []extension.AgentServer
	// Hooks are its command hooks, in Gemini CLI's order.
	Hooks []switchHook
	// HooksErr is why its hooks/hooks.json cannot be read ("" when it
	// can, or has none): Gemini CLI then loads none of them either.
	HooksErr string
	// Unreadable names each file gemkit cannot read exactly as Gemini
	// CLI does, with why: Gemini CLI may run from it what gemkit does
	// not see, so the switch holds the extension instead.
	Unreadable []string
}

// switchHook is one command hook and how the switch takes it.
type switchHook struct {
	extension.CommandHook
	// Key is the string of hooksConfig.disabled that turns it off in
	// Gemini CLI; "" when none does for sure, with why in Why.
	Key, Why string
	// Def is gemkit's user-level hook that runs it in the sandbox.
	Def geminisettings.HookDef
}

// switchable reports whether the switch takes h from Gemini CLI.
func (h switchHook) switchable() bool { return h.Key != "" }

// partsOf reads what the switch takes of ext.
func partsOf(a *app, st *extension.Store, ext *extension.Extension) (*switchParts, error) {
	p := &switchParts{Names: extension.SwitchedServers(ext.Manifest)}
	agents, err := ext.AgentServers(st.Workspace())
	if agentread.IsUnreadable(err) {
		p.Unreadable = append(p.Unreadable, unreadableWords(err))
	} else if err != nil {
		return nil, fmt.Errorf("%s's agents: %w", extension.Printable(ext.Manifest.Name), err)
	}
	p.Agents = agents
	for _, n := range extension.SwitchedAgentServers(agents) {
		if !slices.Contains(p.Names, n) {
			p.Names = append(p.Names, n)
		}
	}
	slices.Sort(p.Names)
	hooks, err := ext.CommandHooks()
	if agentread.IsUnreadable(err) {
		p.Unreadable = append(p.Unreadable, unreadableWords(err))
		return p, nil
	}
	if err != nil {
		p.HooksErr = err.Error()
		return p, nil
	}
	bin := gemkitBinary(a)
	for _, h := range hooks {
		sh := switchHook{CommandHook: h}
		sh.Key, sh.Why = h.DisableKey(ext.Dir, ext.Manifest.Settings)
		if sh.Key != "" {
			cmd, why := hookCommand(bin, st.Home(), ext.Manifest.Name, h.Label)
			if why != "" {
				sh.Key, sh.Why = "", why
			}
			sh.Def = geminisettings.HookDef{Event: h.Event, Matcher: h.Matcher, Sequential: h.Sequential,
				Name: "gemkit:" + ext.Manifest.Name + ":" + h.Label, Command: cmd, Timeout: h.Timeout}
		}
		p.Hooks = append(p.Hooks, sh)
	}
	return p, nil
}

// unreadableWords say which file err, an agentread.Unreadable wrapped
// with its file's name, is about, and why: "FILE exactly as Gemini CLI
// does: WHY".
func unreadableWords(err error) string {
	file, _, _ := strings.Cut(err.Error(), ":")
	return file + " exactly as Gemini CLI does: " + agentread.Why(err)
}

// gemkitBinary is the program gemkit's hooks start: this one, by its
// full path, so that a PATH that names the workspace cannot put another
// program in its place; "gemkit" where the process is not gemkit (a
// test binary).
func gemkitBinary(a *app) string {
	if a.executable != nil {
		if p, err := a.executable(); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
			return p
		}
	}
	return "gemkit"
}

// hookCommand is the command of gemkit's user-level hook that runs the
// hook label of the extension ext in the sandbox; why says why there
// is none: Gemini CLI replaces $NAME in its settings file's strings
// from its environment, so a path with one would not name the program.
func hookCommand(bin, home, ext, label string) (cmd, why string) {
	for _, s := range []string{bin, home} {
		if dollarRef().MatchString(s) {
			return "", fmt.Sprintf("the path %s holds a $, which Gemini CLI would replace in its settings file", s)
		}
	}
	return strings.Join([]string{shell.Quote(bin), "extensions", "hook", "--home", shell.Quote(home), shell.Quote(ext), shell.Quote(label)}, " "), ""
}

var dollarRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$(\w|\{)`) })

// isGemkitHook reports whether command is one of gemkit's own hooks,
// as the switch writes them (hookCommand).
func isGemkitHook(command string) bool {
	return strings.Contains(command, " extensions hook --home ")
}

// hookClashes are the other hooks that the strings of hooksConfig.disabled
// which switch name's hooks would also turn off: the person's own (in
// their user settings and the workspace's) and those of the extensions
// not switched, or switched without that hook. Gemini CLI matches the
// list by name, or by command for a hook without one
// (HookRegistry.getHookName), whoever the hook is from.
func hookClashes(st *extension.Store, name string, p *switchParts, gs geminisettings.Settings, sw extension.SwitchState) []string {
	keys := map[string]string{}
	for _, h := range p.Hooks {
		if h.switchable() {
			keys[h.Key] = h.Label
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var out []string
	mine := func(file string, hooks []geminisettings.Hook) {
		for _, h := range hooks {
			if label, ok := keys[h.Key()]; ok && !isGemkitHook(h.Command) {
				out = append(out, fmt.Sprintf("turning off its hook %s (hooksConfig.disabled holds %q) would turn off your own %s hook %q in %s too", label, h.Key(), h.Event, h.Key(), file))
			}
		}
	}
	mine(geminiSettingsPath(st), gs.Hooks)
	wsPath := geminisettings.Path(st.Workspace())
	if wsPath != geminiSettingsPath(st) {
		if ws, err := geminisettings.Read(wsPath); err == nil {
			mine(wsPath, ws.Hooks)
		}
	}
	all, err := st.List()
	if err != nil {
		return out
	}
	for _, in := range all {
		m := in.Manifest()
		if m == nil || m.Name == name {
			continue
		}
		hooks, err := in.Extension.CommandHooks()
		if err != nil {
			continue
		}
		taken := map[string]bool{}
		if c := sw.Choices[m.Name]; c.Switched {
			for _, h := range c.Hooks {
				taken[h.Key] = true
			}
		}
		for _, h := range hooks {
			k, _ := h.DisableKey(in.Extension.Dir, m.Settings)
			if label, ok := keys[k]; ok && k != "" && !taken[k] {
				out = append(out, fmt.Sprintf("turning off its hook %s (hooksConfig.disabled holds %q) would turn off the extension %s's hook %s too, which is not switched to gemkit", label, k, extension.Printable(m.Name), h.Label))
			}
		}
	}
	return out
}

// switchResult is what syncSwitch changed.
type switchResult struct {
	geminisettings.Applied
	// Kept are the names of mcp.excluded the extension no longer needs
	// that stay: another switched extension needs them, or they were
	// the person's.
	Kept []string
	// Off are the labels of the hooks the person had turned off
	// (hooksConfig.disabled held them before the switch): gemkit runs
	// them neither.
	Off []string
}

// syncSwitch makes Gemini CLI's user settings and gemkit's records say
// that the extension name is switched with parts, or, with parts nil,
// that it is not. Under the store's lock it records, for each name of
// mcp.excluded and each string of hooksConfig.disabled, which switched
// extensions need it and whether the person had written it; a string
// is added when the extension needs it, and removed only when no
// switched extension needs it any more and gemkit had added it. Its
// hooks' definitions of gemkit's own are added or removed with them.
// choose, when not nil, changes the extension's choice beyond that.
func syncSwitch(st *extension.Store, name string, parts *switchParts, choose func(c *extension.ServerChoice)) (switchResult, error) {
	path := geminiSettingsPath(st)
	var res switchResult
	err := st.UpdateSwitches(func(sw *extension.SwitchState) error {
		gs, err := geminisettings.Read(path)
		if err != nil {
			return err
		}
		claimNames(st, sw, gs)
		c := sw.Choices[name]
		var edit geminisettings.Edit
		var names []string
		var hooks []extension.SwitchedHook
		if parts != nil {
			names = parts.Names
		}
		// What the extension needed: its recorded names, and any name the
		// records tie to it (written before, or by an older gemkit: a
		// server of a container engine's it no longer switches).
		needed := slices.Clone(c.Names)
		for n, o := range sw.Names {
			if slices.Contains(o.Needs, name) && !slices.Contains(needed, n) {
				needed = append(needed, n)
			}
		}
		slices.Sort(needed)
		for _, n := range needed {
			if slices.Contains(names, n) {
				continue
			}
			o, drop := sw.Names[n].Release(name)
			sw.Names[n] = o
			if drop {
				edit.Include = append(edit.Include, n)
			} else if slices.Contains(gs.Excluded, n) {
				res.Kept = append(res.Kept, n)
			}
		}
		for _, n := range names {
			sw.Names[n] = sw.Names[n].Need(name, slices.Contains(gs.Excluded, n))
			edit.Exclude = append(edit.Exclude, n)
		}
		if parts != nil {
			for _, h := range parts.Hooks {
				if !h.switchable() {
					continue
				}
				o := sw.Disabled[h.Key]
				off := o.Yours || len(o.Needs) == 0 && slices.Contains(gs.Disabled, h.Key)
				sw.Disabled[h.Key] = o.Need(name, slices.Contains(gs.Disabled, h.Key))
				sh := extension.SwitchedHook{Label: h.Label, Event: h.Event, Key: h.Key}
				if off {
					res.Off = append(res.Off, h.Label)
				} else {
					sh.Command = h.Def.Command
					edit.Disable = append(edit.Disable, h.Key)
					edit.AddHooks = append(edit.AddHooks, h.Def)
					// A definition of gemkit's for it that no longer says
					// what the hook's does (a new matcher or timeout after
					// an update) is written again.
					for _, g := range gs.Hooks {
						if g.Command == h.Def.Command && g.Def() != h.Def {
							edit.RemoveHooks = append(edit.RemoveHooks, g.Command)
						}
					}
				}
				hooks = append(hooks, sh)
			}
		}
		for _, old := range c.Hooks {
			if !slices.ContainsFunc(hooks, func(h extension.SwitchedHook) bool { return h.Key == old.Key }) {
				o, drop := sw.Disabled[old.Key].Release(name)
				sw.Disabled[old.Key] = o
				if drop {
					edit.Enable = append(edit.Enable, old.Key)
				}
			}
			if old.Command != "" && !slices.ContainsFunc(hooks, func(h extension.SwitchedHook) bool { return h.Command == old.Command }) {
				edit.RemoveHooks = append(edit.RemoveHooks, old.Command)
			}
		}
		edit.Drop = sw.Created
		applied, err := geminisettings.Apply(path, edit)
		if err != nil {
			return err
		}
		res.Applied = applied
		created := union(sw.Created, applied.Created)
		sw.Created = slices.DeleteFunc(created, func(k string) bool { return slices.Contains(applied.Dropped, k) })
		c.Switched = parts != nil
		c.Names, c.Hooks = names, hooks
		if choose != nil {
			choose(&c)
		}
		sw.Choices[name] = c
		return nil
	})
	return res, err
}

// claimNames records, for every switched extension, the names
// of mcp.excluded its servers need that the records do not tie to it
// yet: records written before gemkit kept who needs each name named only
// those the switch had added, so a name the list held already, another
// switched extension's or the person's, was tied to nobody (and the
// uninstall of another extension removed it). A name the list holds and
// nobody needs is taken as the person's.
func claimNames(st *extension.Store, sw *extension.SwitchState, gs geminisettings.Settings) {
	for name, c := range sw.Choices {
		if !c.Switched || len(c.Names) > 0 {
			continue
		}
		in, err := st.Get(name)
		if err != nil || in.Extension == nil {
			continue
		}
		names := extension.SwitchedServers(in.Extension.Manifest)
		if agents, err := in.Extension.AgentServers(st.Workspace()); err == nil {
			names = union(names, extension.SwitchedAgentServers(agents))
		}
		for _, n := range names {
			if slices.Contains(gs.Excluded, n) {
				sw.Names[n] = sw.Names[n].Need(name, true)
			}
		}
		c.Names = names
		sw.Choices[name] = c
	}
}

// addedFor are the names of mcp.excluded gemkit's records say it added
// for the extension name (it needs them, and they were not the
// person's).
func addedFor(st *extension.Store, name string) []string {
	sw, err := st.Switches()
	if err != nil {
		return nil
	}
	var out []string
	for n, o := range sw.Names {
		if !o.Yours && slices.Contains(o.Needs, name) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// othersWith are the other installed extensions with a server (of the
// manifest or of an agent) named n, and which of them Gemini CLI starts
// when none is switched: it keys servers by name, and of two
// extensions' servers of one name it starts the first it loads
// (McpClientManager.maybeDiscoverMcpServer skips a name another
// extension holds: "Skipping MCP config for server with name ... as it
// already exists"), loading the extensions in the order of their
// folders' names in ~/.gemini/extensions (fs.readdir, which Node
// sorts), the active ones only.
func othersWith(st *extension.Store, name, n string) (others []string, first string) {
	all, err := st.List()
	if err != nil {
		return nil, ""
	}
	var holders []string
	for _, in := range all {
		m := in.Manifest()
		if m == nil {
			continue
		}
		manifest := slices.Contains(extension.SwitchedServers(m), n)
		agent := false
		if agents, err := in.Extension.AgentServers(st.Workspace()); err == nil {
			agent = slices.Contains(extension.SwitchedAgentServers(agents), n)
		}
		if manifest {
			// An agent's server is started only when its agent runs,
			// with no extension of its own: it takes over the name
			// whoever holds it.
			holders = append(holders, in.Name)
		}
		if (manifest || agent) && m.Name != name {
			others = append(others, m.Name)
		}
	}
	slices.Sort(holders)
	if len(holders) > 0 {
		first = holders[0]
	}
	return others, first
}

// hookSettings reads the extension's settings' values, for running its
// hooks as Gemini CLI would.
func hookSettings(in *extension.Installed) map[string]string {
	v, err := toolrun.InstalledSettings(in)
	if err != nil {
		return map[string]string{}
	}
	return v
}
