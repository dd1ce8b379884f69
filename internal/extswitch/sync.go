package extswitch

import (
	"slices"

	"github.com/gemkit/gemkit/internal/extension"
)

// Result is what Sync changed.
type Result struct {
	Applied
	// Kept are the excluded names the extension no longer needs that
	// stay: another switched extension needs them, or they were the
	// person's.
	Kept []string
	// Off are the labels of the hooks the person had turned off (the
	// host's disabled hooks held them before the switch): gemkit runs
	// them neither.
	Off []string
}

// Sync makes the host's settings and gemkit's records say that the
// extension name is switched with parts, or, with parts nil, that it is
// not. Under the store's lock it records, for each excluded name and
// each string of the disabled hooks, which switched extensions need it
// and whether the person had written it; a string is added when the
// extension needs it, and removed only when no switched extension needs
// it any more and gemkit had added it. Its hooks' definitions of
// gemkit's own are added or removed with them. choose, when not nil,
// changes the extension's choice beyond that.
func (s *Switch) Sync(name string, parts *Parts, choose func(c *extension.ServerChoice)) (Result, error) {
	var res Result
	err := s.Store.UpdateSwitches(func(sw *extension.SwitchState) error {
		gs, err := s.Host.Read()
		if err != nil {
			return err
		}
		s.claimNames(sw, gs)
		c := sw.Choices[name]
		var names []string
		if parts != nil {
			names = parts.Names
		}
		edit := s.releaseNames(sw, name, c, names, gs, &res)
		for _, n := range names {
			sw.Names[n] = sw.Names[n].Need(name, slices.Contains(gs.Excluded, n))
			edit.Exclude = append(edit.Exclude, n)
		}
		hooks := needHooks(sw, name, parts, gs, &edit, &res)
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
		applied, err := s.Host.Apply(edit)
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

// releaseNames lets go of the names the extension name needed (its
// recorded names, and any name the records tie to it: written before,
// or by an older gemkit, a server of a container engine's it no longer
// switches) that it does not need now (names), returning the edit that
// includes those nobody needs any more.
func (s *Switch) releaseNames(sw *extension.SwitchState, name string, c extension.ServerChoice, names []string, gs Settings, res *Result) Edit {
	var edit Edit
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
	return edit
}

// needHooks records that the extension name needs its switchable hooks
// of parts turned off, adding to edit what turns them off and runs them
// in gemkit's sandbox, and returns them as its choice records them. A
// hook the person had turned off stays off (res.Off).
func needHooks(sw *extension.SwitchState, name string, parts *Parts, gs Settings, edit *Edit, res *Result) []extension.SwitchedHook {
	if parts == nil {
		return nil
	}
	var hooks []extension.SwitchedHook
	for _, h := range parts.Hooks {
		if !h.Switchable() {
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
			// A definition of gemkit's for it that no longer says what
			// the hook's does (a new matcher or timeout after an update)
			// is written again.
			for _, g := range gs.Hooks {
				if g.Command == h.Def.Command && g.HookDef != h.Def {
					edit.RemoveHooks = append(edit.RemoveHooks, g.Command)
				}
			}
		}
		hooks = append(hooks, sh)
	}
	return hooks
}

// claimNames records, for every switched extension, the excluded names
// its servers need that the records do not tie to it yet: records
// written before gemkit kept who needs each name named only those the
// switch had added, so a name the list held already, another switched
// extension's or the person's, was tied to nobody (and the uninstall of
// another extension removed it). A name the list holds and nobody needs
// is taken as the person's.
func (s *Switch) claimNames(sw *extension.SwitchState, gs Settings) {
	for name, c := range sw.Choices {
		if !c.Switched || len(c.Names) > 0 {
			continue
		}
		in, err := s.Store.Get(name)
		if err != nil || in.Extension == nil {
			continue
		}
		names := extension.SwitchedServers(in.Extension.Manifest)
		if agents, err := in.Extension.AgentServers(s.Store.Workspace()); err == nil {
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

// AddedFor are the excluded names gemkit's records say it added for the
// extension name (it needs them, and they were not the person's).
func (s *Switch) AddedFor(name string) []string {
	sw, err := s.Store.Switches()
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

// OthersWith are the other installed extensions with a server (of the
// manifest or of an agent) named n, and which of them Gemini CLI starts
// when none is switched: it keys servers by name, and of two
// extensions' servers of one name it starts the first it loads
// (McpClientManager.maybeDiscoverMcpServer skips a name another
// extension holds: "Skipping MCP config for server with name ... as it
// already exists"), loading the extensions in the order of their
// folders' names in ~/.gemini/extensions (fs.readdir, which Node
// sorts), the active ones only.
func (s *Switch) OthersWith(name, n string) (others []string, first string) {
	all, err := s.Store.List()
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
		if agents, err := in.Extension.AgentServers(s.Store.Workspace()); err == nil {
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
