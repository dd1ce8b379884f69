package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/geminisettings"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// environ is the app's environment as a list, for what takes one (the
// process's own by default): with an environment of the app's own, the
// variables a server's profile reads.
func (a *app) environ() []string {
	if a.lookupEnv == nil {
		return os.Environ()
	}
	var out []string
	for _, k := range append([]string{"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMPDIR", "TMP", "TEMP"}, permission.CredentialVariables()...) {
		if v, ok := a.lookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// servePolicy is the policy of which of st's extensions' servers
// gemkit mcp serves, and whether they may start (extmcp.Policy), for the
// person whose home the app's environment names.
func servePolicy(a *app, st *extension.Store) extmcp.Policy {
	return extmcp.Policy{Store: st, Home: a.getenv("HOME")}
}

// withWritable is st with the folders a program other than the person
// may write (extmcp.Policy.Writable) known to its consent checks, so
// that every command takes the one check the start of a server makes
// (extension.Store.CheckFiles).
func withWritable(a *app, st *extension.Store) *extension.Store {
	return servePolicy(a, st).WithWritable()
}

// notServed says why gemkit mcp does not start the servers of the
// extension name, whose consent stands as state (extmcp.NotServed).
func notServed(state extension.ConsentState, name string) error {
	return extmcp.NotServed(state, name, nil)
}

// serverState is where an extension's MCP servers run, as list,
// describe and doctor show it: its stdio ones unconfined in Gemini CLI,
// or in gemkit's sandbox once switched (`gemkit extensions sandbox
// NAME`); its remote ones, which the switch takes from Gemini CLI too,
// connected to by Gemini CLI or by gemkit mcp, sandboxed by neither.
type serverState struct {
	// Sandboxable are the servers gemkit can run in its sandbox (stdio
	// servers other than gemkit itself).
	Sandboxable []string `json:"sandboxable"`
	// Remote are the remote servers (url, httpUrl), which go with the
	// switch: gemkit mcp connects to them in Gemini CLI's place.
	Remote []string `json:"remote"`
	// Container are the servers a container engine starts (docker,
	// podman): outside any sandbox of gemkit's, they stay Gemini CLI's.
	Container []string `json:"container,omitempty"`
	// containerCmd is the first one's command, for the words.
	containerCmd string
	// Switched: gemkit mcp serves them, and Gemini CLI was told not to
	// start them or connect to them.
	Switched bool `json:"switched"`
	// Unconfined are the stdio servers Gemini CLI starts itself, with the
	// person's rights and environment: all when not switched but those
	// its mcp.excluded names; when switched, those missing from it.
	Unconfined []string `json:"unconfined"`
	// RemoteInGemini are the remote servers Gemini CLI connects to
	// itself: those its mcp.excluded does not name.
	RemoteInGemini []string `json:"remoteInGemini"`
	// Widening is what the person allowed them beyond the default
	// profile.
	Widening extension.Widening `json:"widening"`
	// Packages are the packages pinned for its package-runner servers,
	// by server (gemkit runs each from its tree).
	Packages map[string]extension.Pin `json:"packages,omitempty"`
	// Unpinnable are the servers among Sandboxable whose package-runner
	// line gemkit cannot pin (several packages, a git or URL package,
	// PyPI): the switch refuses the extension while they are in it, so
	// it is not offered; why is the first one's reason.
	Unpinnable []string `json:"unpinnable,omitempty"`
	why        string
	// Command switches them (back, when switched).
	Command string `json:"command"`
	// Grant is what the manifest's permissions give them
	// (extension.ServerGrant), beside the person's Widening.
	Grant extension.Widening `json:"grant"`
	// Notes are what they lack or get wrong of what is passed to them
	// (widenNotes): variables dropped, credentials missing.
	Notes []widenNote `json:"notes,omitempty"`
	// NotServed says, for switched servers, why gemkit mcp does not
	// serve them, with what to do (notServed, extmcp.Check); "" when it
	// does.
	NotServed string `json:"notServed,omitempty"`
	// Agreed says, for switched servers whose extension's files changed
	// since the person agreed to them, that gemkit mcp serves them as
	// agreed to, from its copy, and how to run the change (agreedWords);
	// "" otherwise.
	Agreed string `json:"servedAsAgreed,omitempty"`
	// Untold says why whether Gemini CLI starts the servers cannot be
	// told: its settings file cannot be read. Then Unconfined and
	// RemoteInGemini say nothing.
	Untold string `json:"untold,omitempty"`
	// Listed are, for switched servers, what gemkit mcp found the last
	// time it listed each, by label (extmcp.Policy.LastListings): its
	// tools, or why it could not serve it. A server not listed since
	// it was switched as it is now is absent.
	Listed map[string]extmcp.Listing `json:"listed,omitempty"`
}

// untold marks s as not telling what Gemini CLI starts: its settings
// could not be read (err).
func (s *serverState) untold(err error) {
	if s == nil || err == nil {
		return
	}
	s.Untold = err.Error()
	s.Unconfined, s.RemoteInGemini = []string{}, []string{}
}

// serverStateOf is m's server state given the person's choice c and
// Gemini CLI's mcp.excluded; nil when m has no server to sandbox.
func serverStateOf(m *extension.Manifest, c extension.ServerChoice, excluded []string) *serverState {
	names := extension.SandboxedServers(m)
	containers := extension.ContainerServers(m)
	if len(names) == 0 && len(containers) == 0 {
		return nil
	}
	if names == nil {
		names = []string{}
	}
	s := &serverState{Sandboxable: names, Remote: extension.RemoteServers(m), Switched: c.Switched, Widening: c.Widening, Container: containers, Packages: c.Packages,
		Unconfined: []string{}, RemoteInGemini: []string{}, Command: "gemkit extensions sandbox " + m.Name, Grant: extension.ServerGrant(m)}
	if s.Remote == nil {
		s.Remote = []string{}
	}
	if len(containers) > 0 {
		s.containerCmd = extension.ContainerCommand(m.MCPServers[containers[0]])
	}
	if c.Switched {
		s.Command += " --off"
	}
	for _, n := range names {
		var d struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if agentread.Unmarshal(m.MCPServers[n], &d, true) != nil {
			continue
		}
		if inv, ok, err := runnerline.Parse(d.Command, d.Args); ok && (err != nil || inv.Ecosystem == runnerline.PyPI) {
			s.Unpinnable = append(s.Unpinnable, n)
			if s.why == "" {
				s.why = cannotPin(m.Name, runnerServer{name: n, line: strings.Join(append([]string{filepath.Base(d.Command)}, d.Args...), " "), inv: inv, err: err}).Message
			}
		}
	}
	for _, n := range names {
		if !slices.Contains(excluded, n) {
			s.Unconfined = append(s.Unconfined, n)
		}
	}
	for _, n := range s.Remote {
		if !slices.Contains(excluded, n) {
			s.RemoteInGemini = append(s.RemoteInGemini, n)
		}
	}
	return s
}

// serverSettings reads what the server states need: every extension's
// choice and Gemini CLI's mcp.excluded. A file that cannot be read is an
// error the caller reports (err, either's), and reads as nothing chosen;
// gsErr is the settings file's alone, with which what Gemini CLI starts
// cannot be told (serverState.untold).
func serverSettings(st *extension.Store) (choices map[string]extension.ServerChoice, gs geminisettings.Settings, gsErr, err error) {
	choices, err = st.ServerChoices()
	gs, gsErr = geminisettings.Read(geminiSettingsPath(st))
	return choices, gs, gsErr, cmp.Or(err, gsErr)
}

// fillServers sets the server state of each readable item, and for the
// switched ones whether gemkit mcp can serve them.
func fillServers(a *app, st *extension.Store, items []listItem, all []*extension.Installed, choices map[string]extension.ServerChoice, excluded []string, settingsErr error) {
	for i, in := range all {
		if m := in.Manifest(); m != nil {
			items[i].ServerSandbox = serverStateOf(m, choices[m.Name], excluded)
			items[i].ServerSandbox.untold(settingsErr)
			if s := items[i].ServerSandbox; s != nil && s.Switched && in.Extension != nil {
				s.NotServed, s.Agreed = whyNotServed(a, st, in, choices[m.Name])
				s.Listed = servePolicy(a, st).LastListings(in.Extension)
			}
		}
	}
}

// whyNotServed says why gemkit mcp would not serve the switched servers
// of ext, with what to do, as the switch checks it: consent (given, to
// files it can bind), each stdio server's start as far as it can be
// told without starting it, and each package-runner server's pin (c's,
// pinProblems); "" when nothing stands in the way. agreed, when not "",
// says that they are served as the person agreed to them, not as the
// folder is now (agreedWords).
func whyNotServed(a *app, st *extension.Store, in *extension.Installed, c extension.ServerChoice) (why, agreed string) {
	ext := in.Extension
	reasons, agreed := startProblems(a, st, ext, c)
	if w := notLoaded(in); w != "" {
		reasons = append([]string{w}, reasons...)
	}
	for _, p := range pinProblems(st, ext, c) {
		reasons = append(reasons, p.Message+": "+p.Fix)
	}
	return extension.Printable(strings.Join(reasons, ". ")), agreed
}

// startProblems are whyNotServed's reasons but the pins: consent, and
// each stdio server's start with c's widening and credentials files,
// from its pinned package's tree (c's pins) when it has one; and its
// agreed.
func startProblems(a *app, st *extension.Store, ext *extension.Extension, c extension.ServerChoice) (why []string, agreed string) {
	state, err := st.Consent(ext)
	if err == nil {
		if agreed = agreedWords(st, ext, state); agreed == "" {
			err = extmcp.NotServed(state, ext.Manifest.Name, extmcp.CopiedLinks(st, ext, state))
		}
	}
	if err != nil {
		why = append(why, err.Error())
	}
	for _, s := range extension.SandboxedServers(ext.Manifest) {
		if err := extmcp.Check(ext, s, c.Widening, c.Handed, c.Packages, ext.Dir, a.environ()); err != nil {
			why = append(why, fmt.Sprintf("its MCP server %s would not start: %v", s, err))
		}
	}
	return append(why, listingProblems(servePolicy(a, st).LastListings(ext))...), agreed
}

// agreedWords say, of ext whose consent stands as state, that its files
// changed since the person agreed to them, its manifest not, and that
// gemkit mcp serves its stdio servers as agreed to, from gemkit's copy
// (extension.Store.AgreedCopy), with how to run the change; "" when
// consent holds for the folder as it is, or no copy serves it.
func agreedWords(st *extension.Store, ext *extension.Extension, state extension.ConsentState) string {
	if state.Granted || state.PermissionsChanged || !state.FilesChanged && state.Unbound == nil || st.AgreedCopy(ext) == "" {
		return ""
	}
	changed := state.Notice
	if changed == "" {
		changed = "Its files changed since you agreed to them."
	}
	return fmt.Sprintf("served as you agreed to it on %s, from gemkit's copy, not as it is now. %s To run it as it is now, agree to it: %s", state.GrantedAt.Local().Format(time.DateTime), changed, consentHint(ext.Manifest.Name))
}

// serverWords say where s's servers run and the command that changes
// it, in one line.
func serverWords(name string, s *serverState) string {
	words := sandboxWords(name, s)
	if len(s.Container) > 0 {
		c := printableNames(s.Container) + ": " + extension.ContainerWords(s.containerCmd)
		if len(s.Sandboxable) == 0 {
			return c
		}
		words += "; " + c
	}
	return words
}

// sandboxWords are serverWords of the servers gemkit can sandbox.
func sandboxWords(name string, s *serverState) string {
	switch {
	case s.Switched && s.Untold != "":
		return fmt.Sprintf("%s: switched to gemkit; whether Gemini CLI also starts them cannot be told until its settings file can be read (%s)", printableNames(s.Sandboxable), s.Untold)
	case s.Untold != "":
		return fmt.Sprintf("%s: not switched; whether Gemini CLI starts them cannot be told until its settings file can be read (%s); to run them in gemkit's sandbox: %s", printableNames(s.Sandboxable), s.Untold, s.Command)
	case s.Switched && s.NotServed != "":
		return fmt.Sprintf("%s: switched to gemkit, but NOT SERVED by gemkit mcp, nor started by Gemini CLI: %s", printableNames(s.Sandboxable), s.NotServed)
	case s.Switched && len(s.Unconfined) == 0 && len(s.RemoteInGemini) == 0:
		words := fmt.Sprintf("%s: in gemkit's sandbox (gemkit mcp), not started by Gemini CLI", printableNames(s.Sandboxable))
		if len(s.Remote) > 0 {
			words += fmt.Sprintf("; %s: remote, connected to by gemkit mcp, not by Gemini CLI (not sandboxed: it runs elsewhere)", printableNames(s.Remote))
		}
		if s.Agreed != "" {
			words += "; " + s.Agreed
		}
		return words + "; back: " + s.Command
	case s.Switched:
		return fmt.Sprintf("switched to gemkit, but Gemini CLI's mcp.excluded lacks %s: run gemkit extensions sandbox %s again", missingWords(s), name)
	case len(s.Unpinnable) > 0 && len(s.Unconfined) == 0:
		return fmt.Sprintf("%s: not started by Gemini CLI (your mcp.excluded names them) nor by gemkit; gemkit's sandbox cannot run them: %s", printableNames(s.Sandboxable), s.why)
	case len(s.Unpinnable) > 0:
		return fmt.Sprintf("%s: unconfined in Gemini CLI (your rights, your whole environment); gemkit's sandbox cannot run them: %s", printableNames(s.Unconfined), s.why)
	case len(s.Unconfined) == 0:
		return fmt.Sprintf("%s: not started by Gemini CLI (your mcp.excluded names them) nor by gemkit; to run them in gemkit's sandbox: %s", printableNames(s.Sandboxable), s.Command)
	}
	return fmt.Sprintf("%s: unconfined in Gemini CLI (your rights, your whole environment); to run them in gemkit's sandbox: %s", printableNames(s.Unconfined), s.Command)
}

// missingWords name the switched servers s's mcp.excluded lacks, with
// what Gemini CLI does with them.
func missingWords(s *serverState) string {
	var parts []string
	if len(s.Unconfined) > 0 {
		parts = append(parts, strings.Join(s.Unconfined, ", ")+", which Gemini CLI starts unconfined beside gemkit's sandboxed copy")
	}
	if len(s.RemoteInGemini) > 0 {
		parts = append(parts, strings.Join(s.RemoteInGemini, ", ")+", which Gemini CLI connects to itself beside gemkit mcp")
	}
	return strings.Join(parts, ", and ")
}

// writeServerNotes writes, under the list's table, where each
// extension's MCP servers run.
func writeServerNotes(w io.Writer, items []listItem) {
	for _, it := range items {
		if it.ServerSandbox != nil {
			fmt.Fprintf(w, "servers of %s: %s\n", it.Name, serverWords(it.Name, it.ServerSandbox))
		}
	}
}

// serversSandbox writes describe's lines on where the servers run, what
// they can do in gemkit's sandbox, and whether consent lets gemkit mcp
// serve them.
func (d *describer) serversSandbox(consent consentInfo) {
	s := d.it.ServerSandbox
	if s == nil {
		return
	}
	w := d.w
	fmt.Fprintf(w, "  Where they run: %s\n", serverWords(d.m.Name, s))
	if len(s.Sandboxable) == 0 {
		return
	}
	fmt.Fprintf(w, "  In gemkit's sandbox each can: %s\n", extension.ServerProfileWordsOf(d.m, s.Widening))
	if !s.Widening.Empty() {
		fmt.Fprintf(w, "      widened by you; back to the default profile: gemkit extensions sandbox %s --default-profile\n", d.m.Name)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "  Note: %s\n      fix: %s\n", n.Message, n.Fix)
	}
	if len(s.Remote) > 0 {
		fmt.Fprintf(w, "  Its remote servers (%s) go with the switch, not sandboxed, since they run elsewhere: switched, gemkit mcp connects to them from your computer as Gemini CLI would, sending the manifest's headers with only the extension's declared settings in them, but signs in to nothing (a server that asks for OAuth fails to connect)\n", strings.Join(s.Remote, ", "))
	}
	for _, n := range sortedPins(s.Packages) {
		fmt.Fprintf(w, "  %s: %s\n", n, extension.Printable(s.Packages[n].Words()))
	}
	if s.Switched && s.Untold == "" {
		for _, n := range s.Sandboxable {
			fmt.Fprintf(w, "  %s: %s\n", n, listedWords(s.Listed, n))
		}
	}
	switch {
	case s.Switched && s.NotServed == "" && s.Agreed != "":
		// Said where they run (serverWords).
	case s.Switched && s.NotServed == "" && (!consent.Granted || consent.FilesChanged):
		fmt.Fprintf(w, "      not served until you agree to the extension as it is now: %s\n", consentHint(d.m.Name))
	}
	writeRefusals(w, stillRefused(recentRefusals()[d.m.Name], s.Grant.Union(s.Widening), d.it.choice.HookWidening, consent.since))
}

// serverFindings are doctor's findings on where in's MCP servers run.
func serverFindings(a *app, st *extension.Store, in *extension.Installed, choices map[string]extension.ServerChoice, gs geminisettings.Settings, getenv func(string) string) []finding {
	if in.Extension == nil {
		return nil
	}
	m := in.Extension.Manifest
	s := serverStateOf(m, choices[m.Name], gs.Excluded)
	if s == nil {
		return nil
	}
	name := m.Name
	var fs []finding
	if len(s.Container) > 0 {
		fs = append(fs, finding{Level: "note", Extension: name,
			Message: "its MCP server" + plural(len(s.Container)) + " " + strings.Join(s.Container, ", ") + ": " + extension.ContainerWords(s.containerCmd)})
		// Excluded by an earlier switch, before gemkit left them to
		// Gemini CLI: then nothing starts them.
		if stuck := sharedNames(sharedNames(s.Container, addedFor(st, name)), gs.Excluded); len(stuck) > 0 {
			fs = append(fs, finding{Level: "warning", Extension: name,
				Message: "an earlier switch put " + strings.Join(stuck, ", ") + " in Gemini CLI's mcp.excluded, and gemkit mcp does not serve a server a container engine starts: nothing starts " + them(len(stuck)),
				Fix:     "`gemkit extensions sandbox " + name + "` gives " + them(len(stuck)) + " back to Gemini CLI"})
		}
	}
	if len(s.Sandboxable) == 0 {
		return fs
	}
	if !s.Switched {
		if len(s.Unconfined) == 0 {
			return fs
		}
		f := finding{Level: "note", Extension: name,
			Message: "its MCP servers " + strings.Join(s.Unconfined, ", ") + " run unconfined in Gemini CLI, with your rights and your whole environment",
			Fix:     "run them in gemkit's sandbox: `" + "gemkit extensions sandbox " + name + "`"}
		if len(s.Unpinnable) > 0 {
			// The switch would refuse: not a fix to offer.
			f.Message += "; gemkit's sandbox cannot run them: " + s.why
			f.Fix = "the extension's author can start them with a package gemkit can pin (npx -y PACKAGE)"
		}
		return append(fs, f)
	}
	if w := s.Grant.Union(s.Widening); len(w.Credentials) > 0 || len(w.Env) > 0 {
		// What of yours its servers are handed: said wherever you look.
		handed := extension.Widening{Credentials: w.Credentials, Env: w.Env}
		fs = append(fs, finding{Level: "note", Extension: name,
			Message: "its servers are handed, in gemkit's sandbox: " + handed.Words(),
			Fix:     "take back what you allowed: `gemkit extensions sandbox " + name + " --default-profile`"})
	}
	for _, n := range widenNotes(m, s.Grant.Union(s.Widening), choices[m.Name].Handed, gs, getenv, in.Settings(st.Dir(), st.Workspace())) {
		fs = append(fs, finding{Level: "warning", Extension: name, Message: n.Message, Fix: n.Fix})
	}
	if len(s.Unconfined) > 0 || len(s.RemoteInGemini) > 0 {
		fix := "`gemkit extensions sandbox " + name + "` adds them again"
		if yours := sharedNames(append(slices.Clone(s.Unconfined), s.RemoteInGemini...), gs.Servers); len(yours) > 0 {
			// The switch refuses a name of the person's own servers,
			// which exclusion would take from them too.
			fix = "your own mcpServers in " + geminiSettingsPath(st) + " have " + printableNames(yours) + " too, which the switch does not exclude (Gemini CLI keys servers by name): rename yours, then run `gemkit extensions sandbox " + name + "`"
		}
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "switched to gemkit, but Gemini CLI's mcp.excluded (" + geminiSettingsPath(st) + ") lacks " + missingWords(s),
			Fix:     fix})
	}
	// A client sees none of the servers' tools, only a placeholder that
	// says the same.
	state, err := st.Consent(in.Extension)
	// The pins' problems are findings of their own (pinFindings), each
	// with its fix.
	problems, agreed := startProblems(a, st, in.Extension, choices[m.Name])
	if w := notLoaded(in); w != "" {
		problems = append([]string{w}, problems...)
	}
	if agreed != "" {
		fs = append(fs, finding{Level: "note", Extension: name, Message: "switched to gemkit, and " + extension.Printable(agreed)})
	}
	switch why := extension.Printable(strings.Join(problems, ". ")); {
	case err == nil && state.Unbound == nil && !state.Granted && !state.FilesChanged && why == notServed(state, name).Error():
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "switched to gemkit, but without your consent to it as it is now gemkit mcp does not serve its servers, and Gemini CLI does not start them",
			Fix:     "agree with " + consentHint(name) + ", or give them back to Gemini CLI with `gemkit extensions sandbox " + name + " --off`"})
	case why != "":
		fs = append(fs, finding{Level: "warning", Extension: name,
			Message: "switched to gemkit, but gemkit mcp does not serve its MCP servers, and Gemini CLI does not start them: " + why,
			Fix:     "do what it says, or give them back to Gemini CLI with `gemkit extensions sandbox " + name + " --off`"})
	}
	fs = append(fs, pinFindings(st, in.Extension, choices[name])...)
	if gs.Gemkit == "" {
		fs = append(fs, finding{Level: "note", Extension: name,
			Message: "switched to gemkit, but Gemini CLI's settings have no gemkit mcp entry, so Gemini CLI sees none of its servers' tools",
			Fix:     "`gemini mcp add -s user --trust gemkit gemkit mcp`"})
	}
	return fs
}

// pinFindings are doctor's findings on a switched extension's
// package-runner servers (pinProblems).
func pinFindings(st *extension.Store, ext *extension.Extension, c extension.ServerChoice) []finding {
	var fs []finding
	for _, p := range pinProblems(st, ext, c) {
		fs = append(fs, finding{Level: "warning", Extension: ext.Manifest.Name, Message: p.Message, Fix: p.Fix})
	}
	return fs
}

// pinProblem is why gemkit mcp does not start one of an extension's
// package-runner servers, and what to do.
type pinProblem struct {
	Message, Fix string
}

// pinProblems are the package-runner servers of ext that gemkit mcp
// does not start with the choice c: one whose line cannot be pinned, one
// that fetches from PyPI, one with no pin for what its manifest asks
// now, one whose pinned tree is gone or not the one pinned (written
// since by some process of the person's, or swapped for a link). The
// switch refuses the first two (cannotPin); a pin gone stale (a linked
// extension's edited manifest, an update refused) or a tree changed is
// told by list, describe and doctor.
func pinProblems(st *extension.Store, ext *extension.Extension, c extension.ServerChoice) []pinProblem {
	name := ext.Manifest.Name
	var ps []pinProblem
	for _, r := range runnerServers(ext, st.Workspace()) {
		p, ok := c.Packages[r.name]
		switch {
		case r.err != nil, r.inv.Ecosystem == runnerline.PyPI:
			ps = append(ps, cannotPin(name, r))
		case !ok || p.Request != r.inv.Request() || p.Runner != r.inv.Runner:
			ps = append(ps, pinProblem{
				Message: fmt.Sprintf("its MCP server %s (%s) fetches %s through a package runner, and gemkit has not pinned it for what the manifest asks now, so gemkit mcp does not start it", r.name, r.line, r.inv.Request()),
				Fix:     "`gemkit extensions sandbox " + name + "` installs it once, at an exact version, for you to agree to"})
		case !pinnedTreeExists(p):
			// Removed by hand, or by a cleaner of caches: gemkit mcp's
			// start would fail on the missing program, its fix unsaid.
			ps = append(ps, pinProblem{
				Message: fmt.Sprintf("the package pinned for its MCP server %s (%s %s) is no longer in %s, so gemkit mcp cannot start it", r.name, p.Package, p.Version, p.Tree),
				Fix:     "`gemkit extensions sandbox " + name + "` pins it again, for you to agree to"})
			continue
		}
		if err := extmcp.PinnedTreeChanged(st, name, p); err != nil {
			ps = append(ps, pinProblem{
				Message: fmt.Sprintf("the package pinned for its MCP server %s (%s %s) is not as you agreed to it: %v, so gemkit mcp does not start it", r.name, p.Package, p.Version, err),
				Fix:     "`gemkit extensions sandbox " + name + "` installs it again from the registry and pins the new tree, for you to agree to"})
		}
	}
	return ps
}

// pinnedTreeExists reports whether something is at the path of a pin's
// tree (a folder, or what replaced it).
func pinnedTreeExists(p extension.Pin) bool {
	_, err := os.Lstat(p.Tree)
	return err == nil
}

// pinnedProgramThere reports whether the program a pin runs is still in
// its tree (a regular file, as the install left it), looked at through
// the tree's Root: npm wrote the tree from what the registry sent.
func pinnedProgramThere(p extension.Pin) bool {
	if !treeThere(p.Tree) || p.Program == "" {
		return false
	}
	root, err := fsutil.OpenRoot(p.Tree)
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Lstat(p.Program)
	return err == nil && fi.Mode().IsRegular()
}

// cannotPin says why the server r of the extension name, whose line
// cannot be pinned or fetches from PyPI, is not started by gemkit mcp.
func cannotPin(name string, r runnerServer) pinProblem {
	if r.err != nil {
		return pinProblem{
			Message: fmt.Sprintf("its MCP server %s (%s): %v, so gemkit mcp does not start it", r.name, r.line, r.err),
			Fix:     "the extension's author can start it with a package gemkit can pin (npx -y PACKAGE), or give it back to Gemini CLI: `gemkit extensions sandbox " + name + " --off`"}
	}
	return pinProblem{
		Message: fmt.Sprintf("its MCP server %s: %v", r.name, &runnerline.PyPIError{Invocation: r.inv}),
		Fix:     "give it back to Gemini CLI: `gemkit extensions sandbox " + name + " --off`"}
}
