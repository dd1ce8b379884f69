package extswitch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
)

// WidenNotes are the notes on m's servers under the effective widening
// w (its manifest's grant with the person's on top) and the credentials
// files agreed to (handed), given the host's settings gs (what its
// gemkit mcp entry passes), the person's environment getenv (where
// their credentials are) and m's settings as installed (keychain's).
func WidenNotes(m *extension.Manifest, w extension.Widening, handed []permission.HandedFile, gs Settings, getenv func(string) string, settings []extension.SettingState) []Note {
	var out []Note
	name := extension.Printable(m.Name)
	for _, s := range keychainSettings(settings) {
		if slices.Contains(w.Env, s.EnvVar) {
			continue
		}
		out = append(out, Note{
			Message: extension.Printable("its setting " + s.Name + " ($" + s.EnvVar + ") is sensitive and no .env of the extension's gives it a value: Gemini CLI keeps such a value in your keychain, which gemkit does not read, so its servers in gemkit's sandbox get it empty"),
			Fix:     "pass it by name from the environment gemkit mcp starts in: `gemkit extensions sandbox " + name + " --allow-env " + extension.Printable(s.EnvVar) + "`"})
	}
	if n, ok := droppedNote(m, w, name); ok {
		out = append(out, n)
	}
	if n, ok := redactedNote(w, gs); ok {
		out = append(out, n)
	}
	home := getenv("HOME")
	for _, k := range w.Credentials {
		if n, ok := credentialNote(name, k, home, handed); ok {
			out = append(out, n)
		}
	}
	return out
}

// droppedNote says which variables of the person's m's servers' env
// asks for that no setting declares, which arrive empty.
func droppedNote(m *extension.Manifest, w extension.Widening, name string) (Note, bool) {
	ds := extension.DroppedVars(m, w.Env)
	if len(ds) == 0 {
		return Note{}, false
	}
	var what, vars []string
	for _, d := range ds {
		what = append(what, d.Server+"'s "+d.Key+" ($"+d.Var+")")
		if !slices.Contains(vars, d.Var) {
			vars = append(vars, d.Var)
		}
	}
	fix := "gemkit extensions sandbox " + name
	for _, v := range vars {
		fix += " --allow-env " + v
	}
	return Note{
		Message: extension.Printable("its servers' env asks for variables of yours that no setting declares, which gemkit's sandbox does not pass (Gemini CLI takes them from its own environment): " + strings.Join(what, ", ") + "; each arrives empty"),
		Fix:     "pass " + Them(len(vars)) + " by name: `" + fix + "`"}, true
}

// redactedNote says which variables allowed by name Gemini CLI leaves
// out of gemkit mcp's environment, unless its entry names them.
func redactedNote(w extension.Widening, gs Settings) (Note, bool) {
	var missing []string
	for _, v := range w.Env {
		if geminisettings.Redacted(v) && !slices.Contains(gs.GemkitEnv, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return Note{}, false
	}
	var env []string
	for _, v := range missing {
		env = append(env, fmt.Sprintf("%q: %q", v, "$"+v))
	}
	fix := "in ~/.gemini/settings.json, give the mcpServers entry " + gs.Gemkit + " `\"env\": {" + strings.Join(env, ", ") + "}` (Gemini CLI fills each $NAME from its own environment); other clients: docs/mcp.md"
	if gs.Gemkit == "" {
		// No entry to give it to: the entry comes first (a tour's
		// finding: advice about an entry that is not there).
		fix = "Gemini CLI has no mcpServers entry for gemkit mcp yet: add it (`gemini mcp add -s user --trust gemkit gemkit mcp`), then in ~/.gemini/settings.json give it `\"env\": {" + strings.Join(env, ", ") + "}` (Gemini CLI fills each $NAME from its own environment); other clients: docs/mcp.md"
	}
	s := ""
	if len(missing) == 1 {
		s = "s"
	}
	return Note{
		Message: "passed by name, " + strings.Join(missing, ", ") + " come" + s + " from the environment of the gemkit mcp that starts the servers, and Gemini CLI 0.61 leaves every variable whose name holds TOKEN, KEY, SECRET, AUTH, PASSWORD, CREDENTIAL or the like out of the environment it starts gemkit mcp with, unless gemkit's entry in its settings names it",
		Fix:     fix}, true
}

// credentialNote says, when m's servers (m named name) are handed the
// credentials of kind and no file of them is agreed to (handed), why
// and how the person hands one; ok is false when one is. A file agreed
// to that changed since, or a variable naming another, keeps the
// servers from starting, which WhyNotServed says (extmcp.Check).
func credentialNote(name, kind, home string, handed []permission.HandedFile) (n Note, ok bool) {
	if slices.ContainsFunc(handed, func(f permission.HandedFile) bool { return f.Kind == kind }) {
		return Note{}, false
	}
	why, fix := permission.NotHanded(kind, home, "gemkit extensions sandbox "+name)
	return Note{Message: "its servers are handed your " + kind + " credentials, but " + why, Fix: fix}, true
}

// keychainSettings are the sensitive settings of those given that no
// .env gives a value gemkit passes (extension.SettingState.Passed) and
// whose value gemkit cannot tell: Gemini CLI keeps it in the person's
// keychain, out of gemkit's reach, and a switched server gets it empty
// (a tour's finding: silently, before).
func keychainSettings(settings []extension.SettingState) []extension.SettingState {
	var out []extension.SettingState
	for _, s := range settings {
		if s.Sensitive && s.Set == nil && !s.Passed {
			out = append(out, s)
		}
	}
	return out
}

// Widens reports whether to gives the servers more than from: a host
// from did not allow, the workspace to write, or Unix sockets.
func Widens(from, to extension.Widening) bool {
	for _, h := range to.Hosts {
		if !slices.Contains(from.Hosts, h) {
			return true
		}
	}
	for _, k := range to.Credentials {
		if !slices.Contains(from.Credentials, k) {
			return true
		}
	}
	for _, v := range to.Env {
		if !slices.Contains(from.Env, v) {
			return true
		}
	}
	return to.Write != "" && from.Write == "" || to.UnixSockets && !from.UnixSockets || to.DataBound() > from.DataBound()
}

// hooksWiden reports whether to gives a hook more than from did.
func hooksWiden(from, to map[string]extension.Widening) bool {
	for label, w := range to {
		if Widens(from[label], w) {
			return true
		}
	}
	return false
}
