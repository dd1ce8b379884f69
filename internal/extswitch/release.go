package extswitch

import (
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// Released is what ReleaseHold did.
type Released struct {
	// PolicyHold, when not "", says that the extension stays held for
	// its policies (policyHoldWords), and nothing was released.
	PolicyHold string
	// Holds are the holds it ended, in turn.
	Holds []ReleasedHold
}

// ReleasedHold is one hold ended.
type ReleasedHold struct {
	Entry string
	Hold  extension.Hold
	// Kept is what keeping the extension switched did (KeepSwitched).
	Kept Kept
	// Ended: the hold is no more; Disabled: the person's own choice
	// keeps the extension disabled in the host all the same.
	Ended, Disabled bool
}

// ReleaseHold ends the hold of the extension name, whose consent was
// just recorded; a server the change added is then kept switched like
// the others (KeepSwitched), so that the host does not start it
// unconfined once the extension runs again. What it did before a
// failure is in the result all the same.
func (s *Switch) ReleaseHold(name string) (Released, error) {
	var out Released
	if words, err := s.keepPolicyHold(name); words != "" || err != nil {
		out.PolicyHold = words
		return out, err
	}
	holds, err := s.Store.Holds()
	if err != nil {
		return out, err
	}
	if in, err := s.Store.Get(name); err == nil && in.Extension != nil {
		if parts, err := s.Parts(in.Extension); err == nil && len(parts.Unreadable) > 0 {
			if _, held := holds[in.Name]; held {
				return out, refuse("gemkit still holds %s in Gemini CLI: %s; fix the file, then switch it again (`gemkit extensions sandbox %s`), or give it back to Gemini CLI as it is (`gemkit extensions sandbox %s --off`)",
					extension.Printable(name), extension.Printable(unreadableWhy(parts.Unreadable)), extension.Printable(name), extension.Printable(name))
			}
		}
	}
	for entry, h := range holds {
		covers := entry == name
		for _, n := range h.Names {
			covers = covers || n == name
		}
		if !covers {
			continue
		}
		// What the hold excluded goes, and the switch excludes what the
		// extension's servers need as it is now (a server the change
		// added among them); then the host runs the extension again.
		if _, err := s.handOver(h); err != nil {
			return out, err
		}
		r := ReleasedHold{Entry: entry, Hold: h}
		r.Kept, err = s.KeepSwitched(name)
		if err == nil {
			_, err = s.Host.Release(entry)
		}
		if err == nil {
			// The person's own disabling stays (a tour's finding: "runs
			// again" of an extension still disabled).
			r.Ended, r.Disabled = true, !s.Host.Enabled(entry)
		}
		out.Holds = append(out.Holds, r)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// ReleasedOff is what ReleaseHoldOff did.
type ReleasedOff struct {
	// Hold is the hold it ended, nil when there was none.
	Hold *extension.Hold
	// Removed are the names the hold had excluded, now the host's again
	// (a server the change added).
	Removed []string
	// Disabled: the person's own choice keeps it disabled in the host.
	Disabled bool
}

// ReleaseHoldOff ends the hold of in when the person gives its servers
// back to the host (--off): the hold kept the host from running changed
// code that gemkit's consent no longer covered while gemkit claimed the
// extension; once the person undoes the switch, the host runs the
// extension as it is, unconfined, which is what --off says, and the
// settings are left as they were before the switch.
func (s *Switch) ReleaseHoldOff(in *extension.Installed) (ReleasedOff, error) {
	var out ReleasedOff
	holds, err := s.Store.Holds()
	if err != nil {
		return out, err
	}
	h, ok := holds[in.Name]
	if !ok {
		return out, nil
	}
	if out.Removed, err = s.handOver(h); err != nil {
		return out, err
	}
	if _, err := s.Host.Release(in.Name); err != nil {
		return out, err
	}
	out.Hold, out.Disabled = &h, !s.Host.Enabled(in.Name)
	return out, nil
}

// handOver takes the names the hold h added out of the host's excluded
// names again (and the keys it made, when they are left empty), before
// the switch puts back those the extension's servers need as its own
// (KeepSwitched): left there, they would read to the switch as the
// person's, which --off never removes. It returns the names it removed.
func (s *Switch) handOver(h extension.Hold) ([]string, error) {
	if len(h.Excluded) == 0 && len(h.Created) == 0 {
		return nil, nil
	}
	res, err := s.Host.Apply(Edit{Include: h.Excluded, Drop: h.Created})
	return res.Included, err
}

// Kept is what KeepSwitched did.
type Kept struct {
	// Name is the extension's, Path the host's settings file.
	Name, Path string
	// HookClashes, when any, say why its hooks were left as they were.
	HookClashes []string
	Result
}

// KeepSwitched keeps an updated extension switched: a server (of the
// manifest or an agent) or a hook the new version adds is taken from
// the host as the switch would, so that the host does not start it
// unconfined beside gemkit; one it dropped is let go of, where no other
// switched extension needs its name. The update asked for consent to
// the new version.
func (s *Switch) KeepSwitched(name string) (Kept, error) {
	k := Kept{Name: name, Path: s.Host.SettingsPath()}
	c, err := s.Store.ServerChoice(name)
	if err != nil || !c.Switched {
		return k, err
	}
	in, err := s.Store.Get(name)
	if err != nil || in.Extension == nil {
		return k, err
	}
	parts, err := s.Parts(in.Extension)
	if err != nil {
		return k, err
	}
	gs, err := s.Host.Read()
	if err != nil {
		return k, err
	}
	if clash := SharedNames(parts.Names, gs.Servers); len(clash) > 0 {
		return k, fmt.Errorf("%s's new servers %s share a name with your own mcpServers in %s, so they are not excluded: Gemini CLI starts them itself; rename yours and run gemkit extensions sandbox %s", extension.Printable(name), strings.Join(clash, ", "), k.Path, extension.Printable(name))
	}
	sw, err := s.Store.Switches()
	if err != nil {
		return k, err
	}
	if k.HookClashes = s.hookClashes(name, parts, gs, sw); len(k.HookClashes) > 0 {
		// Its new hooks stay as they were: off in the host where they
		// were, and the new ones the host's.
		parts.Hooks = nil
		for _, h := range c.Hooks {
			parts.Hooks = append(parts.Hooks, Hook{CommandHook: extension.CommandHook{Label: h.Label, Event: h.Event}, Key: h.Key,
				Def: HookDef{Command: h.Command}})
		}
	}
	k.Result, err = s.Sync(name, parts, nil)
	return k, err
}
