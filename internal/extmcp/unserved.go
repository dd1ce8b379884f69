package extmcp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
)

// A switched extension's servers are Gemini CLI's no longer (its
// mcp.excluded names them), so one that gemkit mcp does not serve is
// served by nobody: without a word from gemkit the agent finds nothing
// of it. gemkit mcp serves each such server as a placeholder tool whose
// description says why and what to do, as it does a server that cannot
// start (Failure). google-maps-platform, installed by Gemini CLI with a
// manifest key gemkit refused, was switched, and gemkit mcp listed
// nothing of it: gemkit does not load an extension whose manifest it
// refuses (disclosure.Set.Skipped), so no server of it was ever made.

// Unserved are the servers of the extensions switched to gemkit that
// gemkit mcp does not serve for the set: those of an extension the set
// leaves out but for being disabled in its workspace (which leaves it
// out of Gemini CLI too), and those whose entry gemkit cannot serve
// (Specs' skipped), each with why and what to do in its Reason. specs
// and skipped are Specs' answer for the set. A server the extension no
// longer has is nobody's to serve, and left out.
func (p Policy) Unserved(set *disclosure.Set, specs []Spec, skipped []Skipped) []Skipped {
	choices, err := p.Store.ServerChoices()
	if err != nil {
		// Every extension is left out for it (Choose): said there.
		return nil
	}
	var out []Skipped
	enabled, _ := p.Store.Enablements()
	for _, k := range set.Skipped {
		c := choices[k.Name]
		if !c.Switched || !enabled(k.Name).Workspace {
			continue
		}
		for _, n := range c.Names {
			out = append(out, Skipped{k.Name, n, NotLoadedWords(k.Name, k.Reason) + "; or " + giveBack(k.Name)})
		}
	}
	for _, e := range set.Extensions {
		c := choices[e.Name]
		if !c.Switched {
			continue
		}
		for _, n := range c.Names {
			served := slices.ContainsFunc(specs, func(sp Spec) bool { return sp.Extension == e.Name && sp.Server == n })
			i := slices.IndexFunc(skipped, func(k Skipped) bool { return k.Extension == e.Name && k.Server == n })
			if !served && i >= 0 {
				out = append(out, Skipped{e.Name, n, fmt.Sprintf("%s, so gemkit mcp cannot serve it; %s", skipped[i].Reason, giveBack(e.Name))})
			}
		}
	}
	return out
}

// NotLoadedWords say why gemkit mcp serves none of the servers of the
// extension name, which gemkit does not load (why: its manifest
// refused, its settings unreadable), and what to do about it. The
// placeholders, list, describe, doctor and the switch say it in the
// same words.
func NotLoadedWords(name, why string) string {
	// A manifest's problems come a line each: put on one.
	var lines []string
	for _, l := range strings.Split(why, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	why = strings.Join(lines, "; ")
	return fmt.Sprintf("the extension %s is not one gemkit loads (%s), so gemkit mcp serves none of its servers; fix what is said (`gemkit extensions validate` names each problem of a manifest)",
		Printable(name), Printable(why))
}

// giveBack is the way back to Gemini CLI for the servers of the
// extension name, in words.
func giveBack(name string) string {
	return "give its servers back to Gemini CLI, which starts them unconfined: `gemkit extensions sandbox " + extension.Printable(name) + " --off`"
}
