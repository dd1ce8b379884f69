package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
)

// widenNote is one thing the switch, describe and doctor say about what
// an extension's servers get beyond the default profile, or lack: a
// variable dropped, a variable allowed that gemkit mcp will not have,
// credentials allowed that are not there.
type widenNote struct {
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// widenNotes are the notes on m's servers under the effective widening
// w (its manifest's grant with the person's on top) and the credentials
// files agreed to (handed), given Gemini CLI's settings gs (what its
// gemkit mcp entry passes), the person's environment getenv (where
// their credentials are) and m's settings as installed (keychain's).
func widenNotes(m *extension.Manifest, w extension.Widening, handed []permission.HandedFile, gs geminisettings.Settings, getenv func(string) string, settings []extension.SettingState) []widenNote {
	var out []widenNote
	name := extension.Printable(m.Name)
	for _, s := range keychainSettings(settings) {
		if contains(w.Env, s.EnvVar) {
			continue
		}
		out = append(out, widenNote{
			Message: extension.Printable("its setting " + s.Name + " ($" + s.EnvVar + ") is sensitive and no .env of the extension's gives it a value: Gemini CLI keeps such a value in your keychain, which gemkit does not read, so its servers in gemkit's sandbox get it empty"),
			Fix:     "pass it by name from the environment gemkit mcp starts in: `gemkit extensions sandbox " + name + " --allow-env " + extension.Printable(s.EnvVar) + "`"})
	}
	if ds := extension.DroppedVars(m, w.Env); len(ds) > 0 {
		var what, vars []string
		for _, d := range ds {
			what = append(what, d.Server+"'s "+d.Key+" ($"+d.Var+")")
			if !contains(vars, d.Var) {
				vars = append(vars, d.Var)
			}
		}
		fix := "gemkit extensions sandbox " + name
		for _, v := range vars {
			fix += " --allow-env " + v
		}
		out = append(out, widenNote{
			Message: extension.Printable("its servers' env asks for variables of yours that no setting declares, which gemkit's sandbox does not pass (Gemini CLI takes them from its own environment): " + strings.Join(what, ", ") + "; each arrives empty"),
			Fix:     "pass " + them(len(vars)) + " by name: `" + fix + "`"})
	}
	var missing []string
	for _, v := range w.Env {
		if geminisettings.Redacted(v) && !contains(gs.GemkitEnv, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
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
		out = append(out, widenNote{
			Message: "passed by name, " + strings.Join(missing, ", ") + " come" + sIf(len(missing) == 1) + " from the environment of the gemkit mcp that starts the servers, and Gemini CLI 0.61 leaves every variable whose name holds TOKEN, KEY, SECRET, AUTH, PASSWORD, CREDENTIAL or the like out of the environment it starts gemkit mcp with, unless gemkit's entry in its settings names it",
			Fix:     fix})
	}
	home := getenv("HOME")
	for _, k := range w.Credentials {
		if n, ok := credentialNote(name, k, home, handed); ok {
			out = append(out, n)
		}
	}
	return out
}

// credentialNote says, when m's servers (m named name) are handed the
// credentials of kind and no file of them is agreed to (handed), why
// and how the person hands one; ok is false when one is. A file agreed
// to that changed since, or a variable naming another, keeps the
// servers from starting, which whyNotServed says (extmcp.Check).
func credentialNote(name, kind, home string, handed []permission.HandedFile) (n widenNote, ok bool) {
	if slices.ContainsFunc(handed, func(f permission.HandedFile) bool { return f.Kind == kind }) {
		return widenNote{}, false
	}
	why, fix := permission.NotHanded(kind, home, "gemkit extensions sandbox "+name)
	return widenNote{Message: "its servers are handed your " + kind + " credentials, but " + why, Fix: fix}, true
}

func sIf(one bool) string {
	if one {
		return "s"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// check checks each widening flag of o on its own, so that a bad value
// is said with the one flag that gave it, in the words of the check that
// refuses it (Widening.Canonical); it returns --data-limit's bytes.
func (o sandboxFlags) check() (dataBytes int64, err error) {
	type flagged struct {
		flag string
		w    extension.Widening
	}
	var each []flagged
	for _, h := range o.hosts {
		if _, err := extension.ParseHost(h); err != nil {
			return 0, fmt.Errorf("--allow-host %q: the host %v; give one host to each --allow-host, as permissions.network.allowedHosts takes it: api.example.com, *.example.com, localhost:8080", h, err)
		}
		each = append(each, flagged{"--allow-host", extension.Widening{Hosts: []string{h}}})
	}
	if o.write != "" {
		each = append(each, flagged{"--allow-write", extension.Widening{Write: extension.Access(o.write)}})
	}
	for _, k := range o.credentials {
		each = append(each, flagged{"--allow-credentials", extension.Widening{Credentials: []string{k}}})
	}
	for _, v := range o.env {
		each = append(each, flagged{"--allow-env", extension.Widening{Env: []string{v}}})
	}
	if o.dataLimit != "" {
		if dataBytes, err = extension.ParseSize(o.dataLimit); err != nil {
			return 0, fmt.Errorf("--data-limit: %w", err)
		}
		each = append(each, flagged{"--data-limit", extension.Widening{DataBytes: dataBytes}})
	}
	for _, f := range each {
		if _, err := f.w.Canonical(); err != nil {
			return 0, fmt.Errorf("%s: %w", f.flag, err)
		}
	}
	return dataBytes, nil
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
