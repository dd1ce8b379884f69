package extswitch

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
)

// An extension switched to gemkit whose files changed since the person
// agreed to them is held in its host (Host.Hold: Gemini CLI's own
// enablement, disabled in every folder) until the person agrees again:
// gemkit mcp does not start its servers without that consent, and the
// host must not run, with the person's rights, what the change brought
// besides them (a server under a new name, a hook, an agent's server).
// gemkit mcp watches the switched extensions' folders while it runs (it
// runs beside every Gemini CLI session that uses them) and holds one as
// soon as it changes (Watch); every gemkit command that checks consent
// (doctor, gemkit mcp's start) holds one found changed; consent given
// again (consent --grant, the switch) releases it (ReleaseHold).

// SwitchedChoice is what the person chose for the servers of the
// installed extension in, whichever of its names the choice was
// recorded under (its folder's, its manifest's: a change may have
// renamed it).
func SwitchedChoice(in *extension.Installed, choices map[string]extension.ServerChoice) (extension.ServerChoice, bool) {
	if c, ok := choices[in.Name]; ok && c.Switched {
		return c, true
	}
	if m := in.Manifest(); m != nil {
		if c, ok := choices[m.Name]; ok && c.Switched {
			return c, true
		}
	}
	return extension.ServerChoice{}, false
}

// HoldIfChanged holds in in its host when it is switched to gemkit and
// the person's consent no longer covers it as it is now. It returns the
// words of a new hold, "" when nothing changed.
func (s *Switch) HoldIfChanged(in *extension.Installed, choices map[string]extension.ServerChoice) (string, error) {
	if _, ok := SwitchedChoice(in, choices); !ok {
		return "", nil
	}
	if in.Extension == nil {
		return s.holdUnreadableManifest(in)
	}
	m := in.Extension.Manifest
	if parts, err := s.partsAs(in.Extension, "gemkit"); err == nil && len(parts.Unreadable) > 0 {
		// Changed into files gemkit cannot read as Gemini CLI does
		// (an update through Gemini CLI, say): held, whatever the
		// consent says.
		words, err := s.holdFor(in, m, unreadableWhy(parts.Unreadable), unreadableFix(in.Name))
		if words != "" {
			words = fmt.Sprintf("%s is switched to gemkit, and %s: gemkit holds it in Gemini CLI (disabled in its extension enablement) so that Gemini CLI runs none of it with your rights; fix the file, then switch it again: gemkit extensions sandbox %s",
				extension.Printable(in.Name), extension.Printable(unreadableWhy(parts.Unreadable)), extension.Printable(in.Name))
		}
		return words, err
	}
	state, err := s.Store.Consent(in.Extension)
	if err != nil {
		return "", err
	}
	why, fix := "its files changed since you agreed to them", ""
	_, underNew := choices[m.Name]
	switch {
	case m.Name != in.Name && !underNew:
		// Renamed in its manifest, which Gemini CLI keys it by: what
		// the person agreed to was the extension under its folder's
		// name.
		why = "its manifest renamed it " + extension.Printable(m.Name) + " since you agreed to it"
	case state.Granted || !state.Recorded:
		// Only a change is held, and what its policies bring that
		// gemkit cannot read or sandbox: consent the person withdrew
		// (or never gave) is their choice, which gemkit mcp follows.
		if why, fix = PolicyHoldWhy(in.Extension); why == "" {
			return "", nil
		}
	case state.PermissionsChanged:
		why = "what it runs or may do changed since you agreed to it (its manifest, or its servers' widening)"
	}
	return s.holdFor(in, m, why, fix)
}

// holdUnreadableManifest holds in, switched, whose manifest gemkit
// cannot read as Gemini CLI does, which Gemini CLI may still load, with
// servers under names the switch does not know.
func (s *Switch) holdUnreadableManifest(in *extension.Installed) (string, error) {
	if !agentread.IsUnreadable(in.Err) {
		return "", nil
	}
	why := unreadablePrefix + extension.ManifestFile + " exactly as Gemini CLI does: " + agentread.Why(in.Err)
	if _, err := s.Host.Hold(in.Name, nil, why, unreadableFix(in.Name)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s is switched to gemkit, and %s: gemkit holds it in Gemini CLI so that Gemini CLI runs none of it with your rights; fix the file, then switch it again: gemkit extensions sandbox %s",
		extension.Printable(in.Name), extension.Printable(why), extension.Printable(in.Name)), nil
}

// holdFor holds in, whose manifest is m, for why (with fix, what ends
// the hold, when consent given again does not), and returns the words
// of a new hold ("" when it was held already).
func (s *Switch) holdFor(in *extension.Installed, m *extension.Manifest, why, fix string) (string, error) {
	held, err := s.Host.Hold(in.Name, []string{m.Name}, why, fix)
	if err != nil {
		return "", err
	}
	// Its servers as they are now, by name, in mcp.excluded as well:
	// `gemini mcp list` starts a disabled extension's servers.
	if err := s.excludeHeld(in.Name, m); err != nil {
		return "", err
	}
	if !held {
		return "", nil
	}
	if fix != "" {
		return policyHoldWords(in.Name, why, fix), nil
	}
	return holdWords(in.Name, why), nil
}

// excludeHeld adds the servers of m, held as entry, to the host's
// excluded names, but for a name of the person's own servers (whose
// entry Gemini CLI starts instead of the extension's) and gemkit mcp's.
func (s *Switch) excludeHeld(entry string, m *extension.Manifest) error {
	gs, err := s.Host.Read()
	if err != nil {
		return err
	}
	var names []string
	for _, n := range extension.SwitchedServers(m) {
		if !slices.Contains(gs.Servers, n) && n != GemkitEntry(gs) && !slices.Contains(gs.Excluded, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	res, err := s.Host.Apply(Edit{Exclude: names})
	if err != nil {
		return err
	}
	return s.Store.NoteHoldExclusions(entry, res.Excluded, res.Created)
}

// unreadablePrefix opens a hold's why for the files gemkit cannot read
// as Gemini CLI does (unreadableWhy), by which doctor tells it.
const unreadablePrefix = "gemkit cannot read "

// unreadableFix is what ends a hold for files gemkit cannot read as
// Gemini CLI does.
func unreadableFix(name string) string {
	return "repair the file (or ask the extension's author to), then `gemkit extensions sandbox " + name + "`; or `gemkit extensions sandbox " + name + " --off` to give it back to Gemini CLI as it is, unconfined"
}

// unreadableWhy is a hold's why for the files gemkit cannot read as
// Gemini CLI does, each with why (Parts.Unreadable).
func unreadableWhy(files []string) string {
	return unreadablePrefix + strings.Join(files, "; nor ")
}

// holdUnreadable holds ext in its host, whose files gemkit cannot read
// as Gemini CLI does, rather than switch it: Gemini CLI may run from
// them what gemkit would not take. It fails, saying so with the ways on.
func (s *Switch) holdUnreadable(ext *extension.Extension, files []string) error {
	m := ext.Manifest
	entry := filepath.Base(ext.Dir)
	why := unreadableWhy(files)
	if _, err := s.Host.Hold(entry, []string{m.Name}, why, unreadableFix(m.Name)); err != nil {
		return err
	}
	if err := s.excludeHeld(entry, m); err != nil {
		return err
	}
	name := extension.Printable(m.Name)
	return refuse("%s is not switched: %s; Gemini CLI may run from it what gemkit would not see or take. gemkit holds %s in Gemini CLI (disabled in its extension enablement) so that none of it runs with your rights. Fix the file (or ask the extension's author to), then switch it again: `gemkit extensions sandbox %s`; or give it back to Gemini CLI, to run as it is and unconfined: `gemkit extensions sandbox %s --off`",
		name, extension.Printable(why), name, name, name)
}

// holdWords say that name is held, why, and how to end it.
func holdWords(name, why string) string {
	return fmt.Sprintf("%s is switched to gemkit, and %s: gemkit holds it in Gemini CLI (disabled in its extension enablement) so that Gemini CLI runs none of it with your rights, and gemkit mcp serves none of what changed; look at what changed, then agree again: gemkit extensions consent %s --grant",
		extension.Printable(name), why, extension.Printable(name))
}

// HoldFindings are doctor's words for the holds of in, and for err,
// the failure of placing one (HoldIfChanged, which doctor runs first).
func (s *Switch) HoldFindings(in *extension.Installed, err error) []Finding {
	var fs []Finding
	if err != nil {
		fs = append(fs, Finding{Level: "warning", Extension: in.Name, Message: "it could not be held in Gemini CLI: " + err.Error()})
	}
	holds, _ := s.Store.Holds()
	h, ok := holds[in.Name]
	if !ok {
		return fs
	}
	since := h.Since.Local().Format(time.DateTime)
	switch {
	case strings.HasPrefix(h.Why, unreadablePrefix):
		fs = append(fs, Finding{Level: "warning", Extension: in.Name,
			Message: fmt.Sprintf("held in Gemini CLI since %s: %s; Gemini CLI runs none of it, so that nothing gemkit did not see runs with your rights", since, extension.Printable(h.Why)),
			Fix:     extension.Printable(cmp.Or(h.Fix, unreadableFix(in.Name)))})
	case h.Fix != "":
		fs = append(fs, Finding{Level: "warning", Extension: in.Name,
			Message: fmt.Sprintf("held in Gemini CLI since %s: %s is switched to gemkit, but %s; Gemini CLI runs none of it, and what the switch took runs in gemkit's sandbox", since, extension.Printable(in.Name), extension.Printable(h.Why)),
			Fix:     extension.Printable(h.Fix)})
	default:
		fs = append(fs, Finding{Level: "warning", Extension: in.Name,
			Message: fmt.Sprintf("held in Gemini CLI since %s: %s is switched to gemkit and %s; Gemini CLI runs none of it until you agree again", since, extension.Printable(in.Name), extension.Printable(h.Why)),
			Fix:     "look at what changed, then `gemkit extensions consent " + in.Name + " --grant`"})
	}
	return fs
}
