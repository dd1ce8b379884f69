package cli

import (
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// The way back from the switch: an extension's servers and hooks given
// back to Gemini CLI (--off, uninstall), and kept switched across an
// update, so that neither Gemini CLI nor gemkit mcp is left starting
// what the other should.

// switchOff gives ext's servers and hooks back to Gemini CLI: it
// removes from mcp.excluded and hooksConfig.disabled what no other
// switched extension needs and gemkit had added, and gemkit's hooks for
// it. uninstalling says the extension is about to go: then nobody
// starts its servers after this, and switching again is no choice, so
// only the change to the settings is said.
func switchOff(a *app, st *extension.Store, name string, uninstalling bool) error {
	c, err := st.ServerChoice(name)
	if err != nil {
		return err
	}
	if !c.Switched {
		fmt.Fprintf(a.Out, "%s's MCP servers are not switched to gemkit: Gemini CLI starts them itself.\n", extension.Printable(name))
		return nil
	}
	path := geminiSettingsPath(st)
	res, err := syncSwitch(st, name, nil, nil)
	if err != nil {
		return err
	}
	if len(res.Included) > 0 {
		fmt.Fprintf(a.Out, "Removed %s from mcp.excluded in %s.\n", printableNames(res.Included), path)
	}
	sw, _ := st.Switches()
	var yours []string
	for _, n := range res.Kept {
		if o := sw.Names[n]; len(o.Needs) > 0 {
			fmt.Fprintf(a.Out, "Kept %s in mcp.excluded: the switched extension %s needs it too (Gemini CLI keys servers by name), so Gemini CLI starts neither's, and gemkit mcp serves %s's.\n", extension.Printable(n), printableNames(o.Needs), printableNames(o.Needs))
		} else {
			yours = append(yours, n)
		}
	}
	var back []string
	for _, h := range c.Hooks {
		if h.Command != "" {
			back = append(back, h.Label)
		}
	}
	if len(back) > 0 && !uninstalling {
		fmt.Fprintf(a.Out, "Gemini CLI runs its hooks %s itself again, unconfined; gemkit's hooks for them are gone from %s.\n", printableNames(back), path)
	}
	if uninstalling {
		return nil
	}
	if len(yours) > 0 {
		fmt.Fprintf(a.Out, "%s's MCP servers are no longer served by gemkit mcp; your own mcp.excluded in %s still names %s (it did before the switch), so Gemini CLI does not start them either. Switch again: gemkit extensions sandbox %s\n",
			extension.Printable(name), path, printableNames(yours), extension.Printable(name))
		return nil
	}
	fmt.Fprintf(a.Out, "%s's MCP servers are Gemini CLI's again, which starts them unconfined, with your rights and environment; gemkit mcp no longer serves them. Switch again: gemkit extensions sandbox %s\n", extension.Printable(name), extension.Printable(name))
	return nil
}

// forgetServers gives the servers and hooks of the extension name back
// to Gemini CLI, if they were switched, and forgets what the person
// chose for them: the extension is being uninstalled.
func forgetServers(a *app, st *extension.Store, name string) error {
	c, err := st.ServerChoice(name)
	if err != nil || (!c.Switched && c.Widening.Empty() && len(c.HookWidening) == 0) {
		return err
	}
	if c.Switched {
		if err := switchOff(a, st, name, true); err != nil {
			return err
		}
	}
	return st.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { *c = extension.ServerChoice{} })
}

// keepSwitched keeps an updated extension switched: a server (of the
// manifest or an agent) or a hook the new version adds is taken from
// Gemini CLI as the switch would, so that Gemini CLI does not start it
// unconfined beside gemkit; one it dropped is let go of, where no other
// switched extension needs its name. The update asked for consent to
// the new version.
func keepSwitched(a *app, st *extension.Store, name string) error {
	c, err := st.ServerChoice(name)
	if err != nil || !c.Switched {
		return err
	}
	in, err := st.Get(name)
	if err != nil || in.Extension == nil {
		return err
	}
	parts, err := partsOf(a, st, in.Extension)
	if err != nil {
		return err
	}
	path := geminiSettingsPath(st)
	gs, err := geminisettings.Read(path)
	if err != nil {
		return err
	}
	if clash := sharedNames(parts.Names, gs.Servers); len(clash) > 0 {
		return fmt.Errorf("%s's new servers %s share a name with your own mcpServers in %s, so they are not excluded: Gemini CLI starts them itself; rename yours and run gemkit extensions sandbox %s", extension.Printable(name), strings.Join(clash, ", "), path, extension.Printable(name))
	}
	sw, err := st.Switches()
	if err != nil {
		return err
	}
	if clash := hookClashes(st, name, parts, gs, sw); len(clash) > 0 {
		// Its new hooks stay as they were: off in Gemini CLI where they
		// were, and the new ones Gemini CLI's.
		fmt.Fprintf(a.Err, "%s stays switched to gemkit, but its hooks were not changed: %s\n", extension.Printable(name), strings.Join(clash, "; "))
		parts.Hooks = nil
		for _, h := range c.Hooks {
			parts.Hooks = append(parts.Hooks, switchHook{CommandHook: extension.CommandHook{Label: h.Label, Event: h.Event}, Key: h.Key,
				Def: geminisettings.HookDef{Command: h.Command}})
		}
	}
	res, err := syncSwitch(st, name, parts, nil)
	if err != nil {
		return err
	}
	if len(res.Excluded) > 0 {
		fmt.Fprintf(a.Err, "%s stays switched to gemkit: Gemini CLI does not start or connect to its new server(s) %s either (mcp.excluded in %s).\n", extension.Printable(name), printableNames(res.Excluded), path)
	}
	if len(res.Included) > 0 {
		fmt.Fprintf(a.Err, "Removed %s from mcp.excluded in %s: no switched extension has a server of that name any more.\n", printableNames(res.Included), path)
	}
	if len(res.Disabled) > 0 {
		fmt.Fprintf(a.Err, "%s's new hooks run in gemkit's sandbox too (hooksConfig.disabled in %s).\n", extension.Printable(name), path)
	}
	return nil
}
