package extswitch

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// SwitchFindings are doctor's findings on the whole picture of the
// switches: gemkit's records beside the host's settings.
func (s *Switch) SwitchFindings(all []*extension.Installed, gs Settings) []Finding {
	sw, err := s.Store.Switches()
	if err != nil {
		return []Finding{{Level: "warning", Message: "the switches' records cannot be read: " + err.Error()}}
	}
	installed := map[string]bool{}
	for _, in := range all {
		if m := in.Manifest(); m != nil {
			installed[m.Name] = true
		}
	}
	fs := s.OrphanFindings(all)
	for _, n := range slices.Sorted(maps.Keys(sw.Names)) {
		o := sw.Names[n]
		var gone []string
		for _, ext := range o.Needs {
			// One not installed is an orphan, which OrphanFindings tells
			// with the fix that works for it.
			if installed[ext] && !sw.Choices[ext].Switched {
				gone = append(gone, ext)
			}
		}
		if len(gone) > 0 {
			fs = append(fs, Finding{Level: "warning", Message: fmt.Sprintf("gemkit's records say %s need %s in mcp.excluded, but %s not switched any more", strings.Join(gone, ", "), n, isAre(len(gone))),
				Fix: "`gemkit extensions sandbox NAME --off` for each, or switch it again"})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sw.Disabled)) {
		if o := sw.Disabled[k]; !o.Yours && len(o.Needs) > 0 && !slices.Contains(gs.Disabled, k) {
			fs = append(fs, Finding{Level: "warning", Message: fmt.Sprintf("hooksConfig.disabled lacks %q, which the switched %s need: Gemini CLI runs that hook itself, unconfined, beside gemkit's", k, strings.Join(o.Needs, ", ")),
				Fix: "`gemkit extensions sandbox " + o.Needs[0] + "` adds it again"})
		}
	}
	fs = append(fs, goneHookPrograms(gs)...)
	return append(fs, s.laterClashes(gs, sw)...)
}

// goneHookPrograms are findings on gemkit's hooks in the host's
// settings whose program is gone: they run nothing.
func goneHookPrograms(gs Settings) []Finding {
	var fs []Finding
	for _, h := range gs.Hooks {
		if !isGemkitHook(h.Command) {
			continue
		}
		if bin := strings.Trim(strings.Fields(h.Command)[0], "'"); strings.HasPrefix(bin, "/") {
			if _, err := os.Stat(bin); err != nil {
				fs = append(fs, Finding{Level: "warning", Message: fmt.Sprintf("gemkit's %s hook %s starts %s, which is gone: the hook it stands for runs nowhere", h.Event, h.Name, bin),
					Fix: "switch its extension again with the gemkit you use now: `gemkit extensions sandbox NAME`"})
			}
		}
	}
	return fs
}

// laterClashes are findings on a hook that turned up later under a
// string gemkit turned off for a switched extension.
func (s *Switch) laterClashes(gs Settings, sw extension.SwitchState) []Finding {
	var fs []Finding
	for name, c := range sw.Choices {
		if !c.Switched {
			continue
		}
		in, err := s.Store.Get(name)
		if err != nil || in.Extension == nil {
			continue
		}
		parts, err := s.partsAs(in.Extension, "gemkit")
		if err != nil {
			continue
		}
		parts.Hooks = slices.DeleteFunc(parts.Hooks, func(h Hook) bool {
			return !slices.ContainsFunc(c.Hooks, func(s extension.SwitchedHook) bool { return s.Key == h.Key })
		})
		for _, clash := range s.hookClashes(name, parts, gs, sw) {
			fs = append(fs, Finding{Level: "warning", Extension: name, Message: clash + " (hooksConfig.disabled turns it off now)",
				Fix: "rename that hook, or switch its extension too"})
		}
	}
	return fs
}
