package cli

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// An extension switched to gemkit whose files changed since the person
// agreed to them is held in Gemini CLI (extension.Store.HoldInGemini:
// its own enablement, disabled in every folder) until the person agrees
// again: gemkit mcp does not start its servers without that consent, and
// Gemini CLI must not run, with the person's rights, what the change
// brought besides them (a server under a new name, a hook, an agent's
// server). gemkit mcp watches the switched extensions' folders while it
// runs (it runs beside every Gemini CLI session that uses them) and
// holds one as soon as it changes; every gemkit command that checks
// consent (doctor, gemkit mcp's start) holds one found changed; consent
// given again (consent --grant, the switch) releases it.

// switchedChoice is what the person chose for the servers of the
// installed extension in, whichever of its names the choice was
// recorded under (its folder's, its manifest's: a change may have
// renamed it).
func switchedChoice(in *extension.Installed, choices map[string]extension.ServerChoice) (extension.ServerChoice, bool) {
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

// holdIfChanged holds in in Gemini CLI when it is switched to gemkit and
// the person's consent no longer covers it as it is now. It returns the
// words of a new hold, "" when nothing changed.
func holdIfChanged(st *extension.Store, in *extension.Installed, choices map[string]extension.ServerChoice) (string, error) {
	if _, ok := switchedChoice(in, choices); !ok {
		return "", nil
	}
	if in.Extension == nil {
		// A manifest gemkit cannot read as Gemini CLI does, which Gemini
		// CLI may still load, with servers under names the switch does
		// not know: held.
		if !agentread.IsUnreadable(in.Err) {
			return "", nil
		}
		why := unreadablePrefix + extension.ManifestFile + " exactly as Gemini CLI does: " + agentread.Why(in.Err)
		if _, err := st.HoldInGeminiFor(in.Name, nil, why, unreadableFix(in.Name)); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s is switched to gemkit, and %s: gemkit holds it in Gemini CLI so that Gemini CLI runs none of it with your rights; fix the file, then switch it again: gemkit extensions sandbox %s",
			extension.Printable(in.Name), extension.Printable(why), extension.Printable(in.Name)), nil
	}
	m := in.Extension.Manifest
	if parts, err := partsOf(&app{}, st, in.Extension); err == nil && len(parts.Unreadable) > 0 {
		// Changed into files gemkit cannot read as Gemini CLI does
		// (an update through Gemini CLI, say): held, whatever the
		// consent says.
		words, err := holdFor(st, in, m, unreadableWhy(parts.Unreadable), unreadableFix(in.Name))
		if words != "" {
			words = fmt.Sprintf("%s is switched to gemkit, and %s: gemkit holds it in Gemini CLI (disabled in its extension enablement) so that Gemini CLI runs none of it with your rights; fix the file, then switch it again: gemkit extensions sandbox %s",
				extension.Printable(in.Name), extension.Printable(unreadableWhy(parts.Unreadable)), extension.Printable(in.Name))
		}
		return words, err
	}
	state, err := st.Consent(in.Extension)
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
		if why, fix = policyHoldWhy(in.Extension); why == "" {
			return "", nil
		}
	case state.PermissionsChanged:
		why = "what it runs or may do changed since you agreed to it (its manifest, or its servers' widening)"
	}
	return holdFor(st, in, m, why, fix)
}

// holdFor holds in, whose manifest is m, for why (with fix, what ends
// the hold, when consent given again does not), and returns the words
// of a new hold ("" when it was held already).
func holdFor(st *extension.Store, in *extension.Installed, m *extension.Manifest, why, fix string) (string, error) {
	held, err := st.HoldInGeminiFor(in.Name, []string{m.Name}, why, fix)
	if err != nil {
		return "", err
	}
	// Its servers as they are now, by name, in mcp.excluded as well:
	// `gemini mcp list` starts a disabled extension's servers.
	if err := excludeHeld(st, in.Name, m); err != nil {
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

// excludeHeld adds the servers of m, held as entry, to Gemini CLI's
// mcp.excluded, but for a name of the person's own servers (whose entry
// Gemini CLI starts instead of the extension's) and gemkit mcp's.
func excludeHeld(st *extension.Store, entry string, m *extension.Manifest) error {
	path := geminiSettingsPath(st)
	gs, err := geminisettings.Read(path)
	if err != nil {
		return err
	}
	var names []string
	for _, n := range extension.SwitchedServers(m) {
		if !slices.Contains(gs.Servers, n) && n != gemkitEntry(gs) && !slices.Contains(gs.Excluded, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	added, created, err := geminisettings.Exclude(path, names)
	if err != nil {
		return err
	}
	return st.NoteHoldExclusions(entry, added, created)
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
// Gemini CLI does, each with why (switchParts.Unreadable).
func unreadableWhy(files []string) string {
	return unreadablePrefix + strings.Join(files, "; nor ")
}

// holdUnreadable holds ext in Gemini CLI, whose files gemkit cannot read
// as Gemini CLI does, rather than switch it: Gemini CLI may run from
// them what gemkit would not take. It says so, with the ways on, and
// fails.
func holdUnreadable(a *app, st *extension.Store, ext *extension.Extension, files []string) error {
	m := ext.Manifest
	entry := filepath.Base(ext.Dir)
	why := unreadableWhy(files)
	if _, err := st.HoldInGeminiFor(entry, []string{m.Name}, why, unreadableFix(m.Name)); err != nil {
		return err
	}
	if err := excludeHeld(st, entry, m); err != nil {
		return err
	}
	name := extension.Printable(m.Name)
	return withExitCode(ExitNo, fmt.Errorf("%s is not switched: %s; Gemini CLI may run from it what gemkit would not see or take. gemkit holds %s in Gemini CLI (disabled in its extension enablement) so that none of it runs with your rights. Fix the file (or ask the extension's author to), then switch it again: `gemkit extensions sandbox %s`; or give it back to Gemini CLI, to run as it is and unconfined: `gemkit extensions sandbox %s --off`",
		name, extension.Printable(why), name, name, name))
}

// holdWords say that name is held, why, and how to end it.
func holdWords(name, why string) string {
	return fmt.Sprintf("%s is switched to gemkit, and %s: gemkit holds it in Gemini CLI (disabled in its extension enablement) so that Gemini CLI runs none of it with your rights, and gemkit mcp serves none of what changed; look at what changed, then agree again: gemkit extensions consent %s --grant",
		extension.Printable(name), why, extension.Printable(name))
}

// holdChanged holds every switched extension of st that consent no
// longer covers, logging each new hold.
func holdChanged(st *extension.Store, log *slog.Logger) {
	all, err := st.List()
	if err != nil {
		return
	}
	choices, err := st.ServerChoices()
	if err != nil {
		return
	}
	for _, in := range all {
		if words, err := holdIfChanged(st, in, choices); err != nil {
			log.Warn("holding a changed extension in Gemini CLI", "extension", in.Name, "err", err)
		} else if words != "" {
			log.Warn(words)
		}
	}
}

// releaseHold ends the hold of the extension name, whose consent was
// just recorded, saying so on out; a server the change added is then
// kept switched like the others (keepSwitched), so that Gemini CLI does
// not start it unconfined once the extension runs again.
func releaseHold(a *app, st *extension.Store, name string) error {
	if held, err := keepPolicyHold(a.Out, st, name); held || err != nil {
		return err
	}
	holds, err := st.Holds()
	if err != nil {
		return err
	}
	if in, err := st.Get(name); err == nil && in.Extension != nil {
		if parts, err := partsOf(a, st, in.Extension); err == nil && len(parts.Unreadable) > 0 {
			if _, held := holds[in.Name]; held {
				return withExitCode(ExitNo, fmt.Errorf("gemkit still holds %s in Gemini CLI: %s; fix the file, then switch it again (`gemkit extensions sandbox %s`), or give it back to Gemini CLI as it is (`gemkit extensions sandbox %s --off`)",
					extension.Printable(name), extension.Printable(unreadableWhy(parts.Unreadable)), extension.Printable(name), extension.Printable(name)))
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
		// added among them); then Gemini CLI runs the extension again.
		if _, err := handOver(st, h); err != nil {
			return err
		}
		if err := keepSwitched(a, st, name); err != nil {
			return err
		}
		if _, err := st.ReleaseInGemini(entry); err != nil {
			return err
		}
		if !st.IsEnabled(entry) {
			// The person's own disabling stays (a tour's finding: "runs
			// again" of an extension still disabled).
			fmt.Fprintf(a.Out, "gemkit no longer holds %s in Gemini CLI (held since %s: %s); it stays disabled there as you set it: gemkit extensions enable %s\n", extension.Printable(name), h.Since.Local().Format(time.DateTime), extension.Printable(h.Why), extension.Printable(entry))
			continue
		}
		fmt.Fprintf(a.Out, "Gemini CLI runs %s again: gemkit held it there since %s (%s).\n", extension.Printable(name), h.Since.Local().Format(time.DateTime), extension.Printable(h.Why))
	}
	return nil
}

// releaseHoldOff ends the hold of in when the person gives its servers
// back to Gemini CLI (--off): the hold kept Gemini CLI from running
// changed code that gemkit's consent no longer covered while gemkit
// claimed the extension; once the person undoes the switch, Gemini CLI
// runs the extension as it is, unconfined, which is what --off says, and
// the settings are left as they were before the switch.
func releaseHoldOff(a *app, st *extension.Store, in *extension.Installed) error {
	holds, err := st.Holds()
	if err != nil {
		return err
	}
	h, ok := holds[in.Name]
	if !ok {
		return nil
	}
	removed, err := handOver(st, h)
	if err != nil {
		return err
	}
	if len(removed) > 0 {
		// The switch's own removals were said; these are the hold's (a
		// server the change added), which Gemini CLI starts from now on
		// too (a tour's finding: they went unsaid).
		fmt.Fprintf(a.Out, "Removed %s from mcp.excluded in %s: gemkit's hold had put %s there.\n", printableNames(removed), geminiSettingsPath(st), them(len(removed)))
	}
	if _, err := st.ReleaseInGemini(in.Name); err != nil {
		return err
	}
	if !st.IsEnabled(in.Name) {
		fmt.Fprintf(a.Out, "gemkit no longer holds %s in Gemini CLI (held since %s: %s) now that its servers are Gemini CLI's; it stays disabled there as you set it: gemkit extensions enable %s\n",
			extension.Printable(in.Name), h.Since.Local().Format(time.DateTime), extension.Printable(h.Why), extension.Printable(in.Name))
		return nil
	}
	fmt.Fprintf(a.Out, "Gemini CLI runs %s again, as it is now and unconfined: gemkit held it there since %s (%s), and no longer does now that its servers are Gemini CLI's.\n",
		extension.Printable(in.Name), h.Since.Local().Format(time.DateTime), extension.Printable(h.Why))
	return nil
}

// handOver takes the names the hold h added out of mcp.excluded again
// (and the keys it made, when they are left empty), before the switch
// puts back those the extension's servers need as its own
// (keepSwitched): left there, they would read to the switch as the
// person's, which --off never removes.
// It returns the names it removed.
func handOver(st *extension.Store, h extension.Hold) ([]string, error) {
	if len(h.Excluded) == 0 && len(h.Created) == 0 {
		return nil, nil
	}
	return geminisettings.Include(geminiSettingsPath(st), h.Excluded, h.Created)
}

// holdFindings are doctor's words for the holds of in, and for err,
// the failure of placing one (holdIfChanged, which doctor runs first).
func holdFindings(st *extension.Store, in *extension.Installed, err error) []finding {
	var fs []finding
	if err != nil {
		fs = append(fs, finding{Level: "warning", Extension: in.Name, Message: "it could not be held in Gemini CLI: " + err.Error()})
	}
	holds, _ := st.Holds()
	if h, ok := holds[in.Name]; ok && strings.HasPrefix(h.Why, unreadablePrefix) {
		fs = append(fs, finding{Level: "warning", Extension: in.Name,
			Message: fmt.Sprintf("held in Gemini CLI since %s: %s; Gemini CLI runs none of it, so that nothing gemkit did not see runs with your rights", h.Since.Local().Format(time.DateTime), extension.Printable(h.Why)),
			Fix:     extension.Printable(cmp.Or(h.Fix, unreadableFix(in.Name)))})
	} else if ok && h.Fix != "" {
		fs = append(fs, finding{Level: "warning", Extension: in.Name,
			Message: fmt.Sprintf("held in Gemini CLI since %s: %s is switched to gemkit, but %s; Gemini CLI runs none of it, and what the switch took runs in gemkit's sandbox", h.Since.Local().Format(time.DateTime), extension.Printable(in.Name), extension.Printable(h.Why)),
			Fix:     extension.Printable(h.Fix)})
	} else if ok {
		fs = append(fs, finding{Level: "warning", Extension: in.Name,
			Message: fmt.Sprintf("held in Gemini CLI since %s: %s is switched to gemkit and %s; Gemini CLI runs none of it until you agree again", h.Since.Local().Format(time.DateTime), extension.Printable(in.Name), extension.Printable(h.Why)),
			Fix:     "look at what changed, then `gemkit extensions consent " + in.Name + " --grant`"})
	}
	return fs
}

// extensionFolder is the folder of in's files: its linked source, else
// its entry; "" when neither is known.
func extensionFolder(in *extension.Installed) string {
	switch {
	case in.Extension != nil:
		return in.Extension.Dir
	case in.Metadata != nil && in.Metadata.Type == extension.SourceLink && filepath.IsAbs(in.Metadata.Source):
		return in.Metadata.Source
	}
	return in.Entry
}

// holdsAfter is how long after its start gemkit mcp first looks for
// changed switched extensions and begins to watch them (watchHolds):
// after a client's first list and the starts of the servers behind it.
const holdsAfter = 3 * time.Second

// watchHolds holds a switched extension as soon as its files change
// while gemkit mcp runs, until ctx ends: it watches the folder of every
// switched extension (fsutil.WatchTree), checks consent once the changes
// settle, and looks for newly switched extensions when the choices
// change.
func watchHolds(ctx context.Context, st *extension.Store, log *slog.Logger) {
	const settle = 300 * time.Millisecond
	type watch struct {
		stop  context.CancelFunc
		timer *time.Timer
	}
	var mu sync.Mutex
	watches := map[string]*watch{}
	// checking is held by a check under way, which the end waits for:
	// a hold is written whole (enablement, mcp.excluded, records) or
	// not begun, whenever gemkit mcp ends.
	var checking sync.Mutex
	checkOne := func(entry string) {
		checking.Lock()
		defer checking.Unlock()
		if ctx.Err() != nil {
			return
		}
		in, err := st.Get(entry)
		if err != nil {
			return
		}
		choices, err := st.ServerChoices()
		if err != nil {
			return
		}
		if words, err := holdIfChanged(st, in, choices); err != nil {
			log.Warn("holding a changed extension in Gemini CLI", "extension", entry, "err", err)
		} else if words != "" {
			log.Warn(words)
		}
	}
	scan := func() {
		all, err := st.List()
		if err != nil {
			return
		}
		choices, err := st.ServerChoices()
		if err != nil {
			return
		}
		now := map[string]string{}
		for _, in := range all {
			if _, ok := switchedChoice(in, choices); ok {
				// Watched even while it cannot be read (a manifest
				// being written): the watch sees it readable again.
				if d := extensionFolder(in); d != "" {
					now[in.Name] = d
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for entry, w := range watches {
			if _, ok := now[entry]; !ok {
				w.stop()
				delete(watches, entry)
			}
		}
		for entry, dir := range now {
			if watches[entry] != nil {
				continue
			}
			wctx, stop := context.WithCancel(ctx)
			w := &watch{stop: stop}
			w.timer = time.AfterFunc(time.Hour, func() { checkOne(entry) })
			w.timer.Stop()
			watches[entry] = w
			go fsutil.WatchTree(filepath.Clean(dir), wctx.Done(), func() bool {
				w.timer.Reset(settle)
				return false
			})
		}
	}
	// The first look and the watches wait for gemkit mcp's start to be
	// over: both walk each switched extension's folder (a node_modules'
	// thousands of files), whose CPU the servers' first starts, on the
	// machine's few cores, would pay. The look finds a change made
	// meanwhile; a gemkit mcp that ends first looks as it ends.
	select {
	case <-ctx.Done():
		holdChanged(st, log)
		return
	case <-time.After(holdsAfter):
	}
	scan()
	holdChanged(st, log)
	stamp := st.ServerChoicesStamp()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			mu.Lock()
			for _, w := range watches {
				w.stop()
				w.timer.Stop()
			}
			mu.Unlock()
			checking.Lock()
			checking.Unlock()
			return
		case <-t.C:
			if s := st.ServerChoicesStamp(); s != stamp {
				stamp = s
				scan()
			}
		}
	}
}
