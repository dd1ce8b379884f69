package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// The switch is internal/extswitch's; here are its words: what it did,
// said from what it returns.

// switcher is the switch of st's extensions, with Gemini CLI as the host
// and npm's registry for the pins, in the app's environment.
func (a *app) switcher(st *extension.Store) *extswitch.Switch {
	return &extswitch.Switch{Store: st, Host: extswitch.GeminiCLI(st),
		Ecosystems: map[string]extswitch.Ecosystem{runnerline.NPM: extswitch.NPM(st, a.getenv("HOME"), a.Err, isTerminal(a.Err))},
		Binary:     gemkitBinary(a), Getenv: a.getenv, Environ: a.environ(), Version: buildVersion()}
}

// switchErr is err with the exit code it calls for: 1 for the switch's
// no (extswitch.Refused), the error's own otherwise.
func switchErr(err error) error {
	var r *extswitch.Refused
	if errors.As(err, &r) {
		return withExitCode(ExitNo, err)
	}
	return err
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

// tellOff says what giving the servers and hooks of name back to Gemini
// CLI did (extswitch.Switch.Off). uninstalling says the extension is
// about to go: then nobody starts its servers after this, and switching
// again is no choice, so only the change to the settings is said.
func tellOff(a *app, name string, off extswitch.Off, uninstalling bool) {
	if off.NotSwitched {
		fmt.Fprintf(a.Out, "%s's MCP servers are not switched to gemkit: Gemini CLI starts them itself.\n", extension.Printable(name))
		return
	}
	if len(off.Included) > 0 {
		fmt.Fprintf(a.Out, "Removed %s from mcp.excluded in %s.\n", extswitch.PrintableNames(off.Included), off.Path)
	}
	for _, n := range off.Shared {
		fmt.Fprintf(a.Out, "Kept %s in mcp.excluded: the switched extension %s needs it too (Gemini CLI keys servers by name), so Gemini CLI starts neither's, and gemkit mcp serves %s's.\n", extension.Printable(n.Name), extswitch.PrintableNames(n.Needs), extswitch.PrintableNames(n.Needs))
	}
	if uninstalling {
		return
	}
	if len(off.Back) > 0 {
		fmt.Fprintf(a.Out, "Gemini CLI runs its hooks %s itself again, unconfined; gemkit's hooks for them are gone from %s.\n", extswitch.PrintableNames(off.Back), off.Path)
	}
	if len(off.Yours) > 0 {
		fmt.Fprintf(a.Out, "%s's MCP servers are no longer served by gemkit mcp; your own mcp.excluded in %s still names %s (it did before the switch), so Gemini CLI does not start them either. Switch again: gemkit extensions sandbox %s\n",
			extension.Printable(name), off.Path, extswitch.PrintableNames(off.Yours), extension.Printable(name))
		return
	}
	fmt.Fprintf(a.Out, "%s's MCP servers are Gemini CLI's again, which starts them unconfined, with your rights and environment; gemkit mcp no longer serves them. Switch again: gemkit extensions sandbox %s\n", extension.Printable(name), extension.Printable(name))
}

// forgetServers gives the servers and hooks of the extension name back
// to Gemini CLI, if they were switched, and forgets what the person
// chose for them: the extension is being uninstalled.
func forgetServers(a *app, st *extension.Store, name string) error {
	off, err := a.switcher(st).Forget(name)
	if off != nil {
		tellOff(a, name, *off, true)
	}
	return err
}

// tellKept says on stderr what keeping an updated extension switched
// did (extswitch.Switch.KeepSwitched).
func tellKept(a *app, k extswitch.Kept) {
	name := extension.Printable(k.Name)
	if len(k.HookClashes) > 0 {
		fmt.Fprintf(a.Err, "%s stays switched to gemkit, but its hooks were not changed: %s\n", name, joinSemi(k.HookClashes))
	}
	if len(k.Excluded) > 0 {
		fmt.Fprintf(a.Err, "%s stays switched to gemkit: Gemini CLI does not start or connect to its new server(s) %s either (mcp.excluded in %s).\n", name, extswitch.PrintableNames(k.Excluded), k.Path)
	}
	if len(k.Included) > 0 {
		fmt.Fprintf(a.Err, "Removed %s from mcp.excluded in %s: no switched extension has a server of that name any more.\n", extswitch.PrintableNames(k.Included), k.Path)
	}
	if len(k.Disabled) > 0 {
		fmt.Fprintf(a.Err, "%s's new hooks run in gemkit's sandbox too (hooksConfig.disabled in %s).\n", name, k.Path)
	}
}

// keepSwitched keeps the updated extension name switched, saying so.
func keepSwitched(a *app, st *extension.Store, name string) error {
	k, err := a.switcher(st).KeepSwitched(name)
	tellKept(a, k)
	return err
}

// releaseHold ends the hold of the extension name, whose consent was
// just recorded, saying so (extswitch.Switch.ReleaseHold).
func releaseHold(a *app, st *extension.Store, name string) error {
	r, err := a.switcher(st).ReleaseHold(name)
	tellReleased(a, name, r)
	return switchErr(err)
}

// tellReleased says what ending a hold of name did.
func tellReleased(a *app, name string, r extswitch.Released) {
	if r.PolicyHold != "" {
		fmt.Fprintln(a.Out, r.PolicyHold)
	}
	for _, h := range r.Holds {
		tellKept(a, h.Kept)
		since, why := h.Hold.Since.Local().Format(time.DateTime), extension.Printable(h.Hold.Why)
		switch {
		case !h.Ended:
		case h.Disabled:
			fmt.Fprintf(a.Out, "gemkit no longer holds %s in Gemini CLI (held since %s: %s); it stays disabled there as you set it: gemkit extensions enable %s\n", extension.Printable(name), since, why, extension.Printable(h.Entry))
		default:
			fmt.Fprintf(a.Out, "Gemini CLI runs %s again: gemkit held it there since %s (%s).\n", extension.Printable(name), since, why)
		}
	}
}

// switchOff gives in's servers and hooks back to Gemini CLI (--off),
// and ends its hold, saying what each did.
func switchOff(a *app, st *extension.Store, in *extension.Installed) error {
	sw := a.switcher(st)
	name := in.Extension.Manifest.Name
	off, err := sw.Off(name)
	if err != nil {
		return err
	}
	tellOff(a, name, off, false)
	r, err := sw.ReleaseHoldOff(in)
	if err != nil || r.Hold == nil {
		return err
	}
	if len(r.Removed) > 0 {
		// The switch's own removals were said; these are the hold's (a
		// server the change added), which Gemini CLI starts from now on
		// too (a tour's finding: they went unsaid).
		fmt.Fprintf(a.Out, "Removed %s from mcp.excluded in %s: gemkit's hold had put %s there.\n", extswitch.PrintableNames(r.Removed), off.Path, extswitch.Them(len(r.Removed)))
	}
	since, why := r.Hold.Since.Local().Format(time.DateTime), extension.Printable(r.Hold.Why)
	if r.Disabled {
		fmt.Fprintf(a.Out, "gemkit no longer holds %s in Gemini CLI (held since %s: %s) now that its servers are Gemini CLI's; it stays disabled there as you set it: gemkit extensions enable %s\n",
			extension.Printable(in.Name), since, why, extension.Printable(in.Name))
		return nil
	}
	fmt.Fprintf(a.Out, "Gemini CLI runs %s again, as it is now and unconfined: gemkit held it there since %s (%s), and no longer does now that its servers are Gemini CLI's.\n",
		extension.Printable(in.Name), since, why)
	return nil
}

// forgetOrphan removes what gemkit keeps of name, an extension that is
// not installed, and says what it removed; removed is false when it
// kept nothing.
func forgetOrphan(a *app, st *extension.Store, name string) (removed bool, err error) {
	o, err := a.switcher(st).ForgetOrphan(name)
	if o.Off != nil {
		tellOff(a, name, *o.Off, true)
	}
	if len(o.Parts) == 0 || err != nil {
		return false, err
	}
	if o.TreesErr != nil {
		fmt.Fprintf(a.Err, "gemkit: removing the packages pinned for %s: %v\n", extension.Printable(name), o.TreesErr)
	}
	if o.RefusalsErr != nil {
		fmt.Fprintf(a.Err, "gemkit: forgetting what the sandbox refused %s's servers: %v\n", extension.Printable(name), o.RefusalsErr)
	}
	fmt.Fprintf(a.Out, "%s is not installed (Gemini CLI's own uninstall removes its folder, not what gemkit keeps of it); removed %s\n", extension.Printable(name), joinSemi(o.Parts))
	return true, nil
}

// removeTrees removes the trees of the extension name, being
// uninstalled.
func removeTrees(a *app, st *extension.Store, name string) {
	if err := a.switcher(st).RemoveTrees(name); err != nil {
		fmt.Fprintf(a.Err, "gemkit: removing the packages pinned for %s: %v\n", extension.Printable(name), err)
	}
}

// keepAgreed makes gemkit's copy of ext as the person just agreed to it
// (extswitch.Switch.KeepAgreed); one that cannot be made is said on
// stderr: gemkit mcp then checks the folder at each start, as it would
// without one.
func keepAgreed(ctx context.Context, a *app, st *extension.Store, ext *extension.Extension) {
	tellAgreedErr(a, a.switcher(st).KeepAgreed(ctx, ext))
}

func tellAgreedErr(a *app, err error) {
	if err != nil {
		fmt.Fprintf(a.Err, "gemkit: %s; gemkit mcp checks its folder at each start of its servers instead.\n", extension.Printable(err.Error()))
	}
}

// keepAgreedNamed is keepAgreed of the installed extension name.
func keepAgreedNamed(ctx context.Context, a *app, st *extension.Store, name string) {
	if in, err := st.Get(name); err == nil {
		keepAgreed(ctx, a, st, in.Extension)
	}
}

func joinSemi(s []string) string { return strings.Join(s, "; ") }
