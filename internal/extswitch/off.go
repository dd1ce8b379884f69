package extswitch

import "github.com/gemkit/gemkit/internal/extension"

// The way back from the switch: an extension's servers and hooks given
// back to the host (--off, uninstall), and kept switched across an
// update (KeepSwitched), so that neither the host nor gemkit mcp is left
// starting what the other should.

// Off is what Off did.
type Off struct {
	// NotSwitched: the extension was not switched; nothing changed.
	NotSwitched bool
	// Path is the host's settings file.
	Path string
	Result
	// Shared are the excluded names that stay for other switched
	// extensions, each with who needs it (Gemini CLI keys servers by
	// name); Yours those that stay as the person's own.
	Shared []SharedName
	Yours  []string
	// Back are the labels of the hooks the host runs itself again.
	Back []string
}

// SharedName is an excluded name other switched extensions need.
type SharedName struct {
	Name  string
	Needs []string
}

// Off gives the servers and hooks of the extension name back to the
// host: it removes from the excluded names and the disabled hooks what
// no other switched extension needs and gemkit had added, and gemkit's
// hooks for it.
func (s *Switch) Off(name string) (Off, error) {
	out := Off{Path: s.Host.SettingsPath()}
	if in, err := s.Store.Get(name); err == nil && in.Extension.IsPlugin() {
		return out, refuse("%s is an Agent Plugins plugin: its servers run in gemkit's sandbox alone, and there is no Gemini CLI to give them back to; to drop what you allowed them: `gemkit extensions sandbox %[1]s --default-profile`; to stop them: `gemkit extensions disable %[1]s`", extension.Printable(name))
	}
	c, err := s.Store.ServerChoice(name)
	if err != nil {
		return out, err
	}
	if !c.Switched {
		out.NotSwitched = true
		return out, nil
	}
	if out.Result, err = s.Sync(name, nil, nil); err != nil {
		return out, err
	}
	sw, _ := s.Store.Switches()
	for _, n := range out.Kept {
		if o := sw.Names[n]; len(o.Needs) > 0 {
			out.Shared = append(out.Shared, SharedName{Name: n, Needs: o.Needs})
		} else {
			out.Yours = append(out.Yours, n)
		}
	}
	for _, h := range c.Hooks {
		if h.Command != "" {
			out.Back = append(out.Back, h.Label)
		}
	}
	return out, nil
}

// Forget gives the servers and hooks of the extension name back to the
// host, if they were switched (off, nil when not), and forgets what the
// person chose for them: the extension is being uninstalled.
func (s *Switch) Forget(name string) (off *Off, err error) {
	c, err := s.Store.ServerChoice(name)
	if err != nil || (!c.Switched && c.Widening.Empty() && len(c.HookWidening) == 0) {
		return nil, err
	}
	if c.Switched {
		o, err := s.Off(name)
		if err != nil {
			return &o, err
		}
		off = &o
	}
	return off, s.Store.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { *c = extension.ServerChoice{} })
}
