package extswitch

import (
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// ServerFindings are doctor's findings on where in's MCP servers run.
func (sw *Switch) ServerFindings(in *extension.Installed, choices map[string]extension.ServerChoice, gs Settings) []Finding {
	if in.Extension == nil {
		return nil
	}
	m := in.Extension.Manifest
	s := sw.StateOf(m, choices[m.Name], gs.Excluded)
	if s == nil {
		return nil
	}
	name := m.Name
	fs := sw.containerFindings(name, s, gs)
	if len(s.Sandboxable) == 0 {
		return fs
	}
	if !s.Switched {
		if len(s.Unconfined) == 0 {
			return fs
		}
		f := Finding{Level: "note", Extension: name,
			Message: "its MCP servers " + strings.Join(s.Unconfined, ", ") + " run unconfined in Gemini CLI, with your rights and your whole environment",
			Fix:     "run them in gemkit's sandbox: `" + "gemkit extensions sandbox " + name + "`"}
		if len(s.Unpinnable) > 0 {
			// The switch would refuse: not a fix to offer.
			f.Message += "; gemkit's sandbox cannot run them: " + s.UnpinnableWhy
			f.Fix = "the extension's author can start them with a package gemkit can pin (npx -y PACKAGE)"
		}
		return append(fs, f)
	}
	if w := s.Grant.Union(s.Widening); len(w.Credentials) > 0 || len(w.Env) > 0 {
		// What of yours its servers are handed: said wherever you look.
		handed := extension.Widening{Credentials: w.Credentials, Env: w.Env}
		fs = append(fs, Finding{Level: "note", Extension: name,
			Message: "its servers are handed, in gemkit's sandbox: " + handed.Words(),
			Fix:     "take back what you allowed: `gemkit extensions sandbox " + name + " --default-profile`"})
	}
	for _, n := range WidenNotes(m, s.Grant.Union(s.Widening), choices[m.Name].Handed, gs, sw.Getenv, in.Settings(sw.Store.Dir(), sw.Store.Workspace())) {
		fs = append(fs, Finding{Level: "warning", Extension: name, Message: n.Message, Fix: n.Fix})
	}
	if len(s.Unconfined) > 0 || len(s.RemoteInGemini) > 0 {
		fix := "`gemkit extensions sandbox " + name + "` adds them again"
		if yours := SharedNames(append(slices.Clone(s.Unconfined), s.RemoteInGemini...), gs.Servers); len(yours) > 0 {
			// The switch refuses a name of the person's own servers,
			// which exclusion would take from them too.
			fix = "your own mcpServers in " + sw.Host.SettingsPath() + " have " + PrintableNames(yours) + " too, which the switch does not exclude (Gemini CLI keys servers by name): rename yours, then run `gemkit extensions sandbox " + name + "`"
		}
		fs = append(fs, Finding{Level: "warning", Extension: name,
			Message: "switched to gemkit, but Gemini CLI's mcp.excluded (" + sw.Host.SettingsPath() + ") lacks " + MissingWords(s),
			Fix:     fix})
	}
	fs = append(fs, sw.servingFindings(in, choices[name])...)
	fs = append(fs, sw.PinFindings(in.Extension, choices[name])...)
	if gs.Gemkit == "" {
		fs = append(fs, Finding{Level: "note", Extension: name,
			Message: "switched to gemkit, but Gemini CLI's settings have no gemkit mcp entry, so Gemini CLI sees none of its servers' tools",
			Fix:     "`gemini mcp add -s user --trust gemkit gemkit mcp`"})
	}
	return fs
}

// containerFindings are doctor's findings on s's servers a container
// engine starts.
func (sw *Switch) containerFindings(name string, s *ServerState, gs Settings) []Finding {
	if len(s.Container) == 0 {
		return nil
	}
	fs := []Finding{{Level: "note", Extension: name,
		Message: "its MCP server" + Plural(len(s.Container)) + " " + strings.Join(s.Container, ", ") + ": " + extension.ContainerWords(s.ContainerCommand)}}
	// Excluded by an earlier switch, before gemkit left them to Gemini
	// CLI: then nothing starts them.
	if stuck := SharedNames(SharedNames(s.Container, sw.AddedFor(name)), gs.Excluded); len(stuck) > 0 {
		fs = append(fs, Finding{Level: "warning", Extension: name,
			Message: "an earlier switch put " + strings.Join(stuck, ", ") + " in Gemini CLI's mcp.excluded, and gemkit mcp does not serve a server a container engine starts: nothing starts " + Them(len(stuck)),
			Fix:     "`gemkit extensions sandbox " + name + "` gives " + Them(len(stuck)) + " back to Gemini CLI"})
	}
	return fs
}

// servingFindings say, of in's switched servers under the choice c,
// what keeps gemkit mcp from serving them: a client sees none of the
// servers' tools then, only a placeholder that says the same. The pins'
// problems are findings of their own (PinFindings), each with its fix.
func (sw *Switch) servingFindings(in *extension.Installed, c extension.ServerChoice) []Finding {
	name := in.Extension.Manifest.Name
	var fs []Finding
	state, err := sw.Store.Consent(in.Extension)
	problems, agreed := sw.startProblems(in.Extension, c)
	if w := NotLoaded(in); w != "" {
		problems = append([]string{w}, problems...)
	}
	if agreed != "" {
		fs = append(fs, Finding{Level: "note", Extension: name, Message: "switched to gemkit, and " + extension.Printable(agreed)})
	}
	switch why := extension.Printable(strings.Join(problems, ". ")); {
	case err == nil && state.Unbound == nil && !state.Granted && !state.FilesChanged && why == extmcp.NotServed(state, name, nil).Error():
		fs = append(fs, Finding{Level: "warning", Extension: name,
			Message: "switched to gemkit, but without your consent to it as it is now gemkit mcp does not serve its servers, and Gemini CLI does not start them",
			Fix:     "agree with " + consentHint(name) + ", or give them back to Gemini CLI with `gemkit extensions sandbox " + name + " --off`"})
	case why != "":
		fs = append(fs, Finding{Level: "warning", Extension: name,
			Message: "switched to gemkit, but gemkit mcp does not serve its MCP servers, and Gemini CLI does not start them: " + why,
			Fix:     "do what it says, or give them back to Gemini CLI with `gemkit extensions sandbox " + name + " --off`"})
	}
	return fs
}

// PinFindings are doctor's findings on a switched extension's
// package-runner servers (PinProblems).
func (sw *Switch) PinFindings(ext *extension.Extension, c extension.ServerChoice) []Finding {
	var fs []Finding
	for _, p := range sw.PinProblems(ext, c) {
		fs = append(fs, Finding{Level: "warning", Extension: ext.Manifest.Name, Message: p.Message, Fix: p.Fix})
	}
	return fs
}
