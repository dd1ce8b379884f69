package extswitch

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// ServerState is where an extension's MCP servers run, as list,
// describe and doctor show it: its stdio ones unconfined in Gemini CLI,
// or in gemkit's sandbox once switched (`gemkit extensions sandbox
// NAME`); its remote ones, which the switch takes from Gemini CLI too,
// connected to by Gemini CLI or by gemkit mcp, sandboxed by neither.
type ServerState struct {
	// Sandboxable are the servers gemkit can run in its sandbox (stdio
	// servers other than gemkit itself).
	Sandboxable []string `json:"sandboxable"`
	// Remote are the remote servers (url, httpUrl), which go with the
	// switch: gemkit mcp connects to them in Gemini CLI's place.
	Remote []string `json:"remote"`
	// Container are the servers a container engine starts (docker,
	// podman): outside any sandbox of gemkit's, they stay Gemini CLI's.
	Container []string `json:"container,omitempty"`
	// ContainerCommand is the first one's command, for the words.
	ContainerCommand string `json:"-"`
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
	// it is not offered; UnpinnableWhy is the first one's reason.
	Unpinnable    []string `json:"unpinnable,omitempty"`
	UnpinnableWhy string   `json:"-"`
	// Command switches them (back, when switched); for an Agent
	// Plugins plugin (Plugin), whose servers gemkit mcp alone serves, it
	// removes the plugin.
	Command string `json:"command"`
	Plugin  bool   `json:"agentPlugin,omitempty"`
	// Grant is what the manifest's permissions give them
	// (extension.ServerGrant), beside the person's Widening.
	Grant extension.Widening `json:"grant"`
	// Notes are what they lack or get wrong of what is passed to them
	// (WidenNotes): variables dropped, credentials missing.
	Notes []Note `json:"notes,omitempty"`
	// NotServed says, for switched servers, why gemkit mcp does not
	// serve them, with what to do (WhyNotServed); "" when it does.
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

// SetUntold marks s as not telling what Gemini CLI starts: its
// settings could not be read (err).
func (s *ServerState) SetUntold(err error) {
	if s == nil || err == nil {
		return
	}
	s.Untold = err.Error()
	s.Unconfined, s.RemoteInGemini = []string{}, []string{}
}

// StateOf is m's server state given the person's choice c and the
// host's excluded names; nil when m has no server to sandbox.
func (sw *Switch) StateOf(m *extension.Manifest, c extension.ServerChoice, excluded []string) *ServerState {
	names := extension.SandboxedServers(m)
	containers := extension.ContainerServers(m)
	if len(names) == 0 && len(containers) == 0 {
		return nil
	}
	if names == nil {
		names = []string{}
	}
	s := &ServerState{Sandboxable: names, Remote: extension.RemoteServers(m), Switched: c.Switched, Widening: c.Widening, Container: containers, Packages: c.Packages,
		Unconfined: []string{}, RemoteInGemini: []string{}, Command: "gemkit extensions sandbox " + m.Name, Grant: extension.ServerGrant(m)}
	if s.Remote == nil {
		s.Remote = []string{}
	}
	if len(containers) > 0 {
		s.ContainerCommand = extension.ContainerCommand(m.MCPServers[containers[0]])
	}
	if c.Switched {
		s.Command += " --off"
	}
	if m.AgentPlugin {
		// Served by gemkit mcp from its install on, never by Gemini CLI
		// (extension/plugin.go): nothing to switch, nothing unconfined.
		s.Switched, s.Plugin, s.Command = true, true, "gemkit extensions uninstall "+m.Name
		return s
	}
	for _, n := range names {
		var d struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}
		if agentread.Unmarshal(m.MCPServers[n], &d, true) != nil {
			continue
		}
		inv, ok, err := runnerline.Parse(d.Command, d.Args)
		if _, pins := sw.pinsFrom(inv.Ecosystem); ok && (err != nil || !pins) {
			s.Unpinnable = append(s.Unpinnable, n)
			if s.UnpinnableWhy == "" {
				s.UnpinnableWhy = cannotPin(m.Name, RunnerServer{Name: n, Line: strings.Join(append([]string{filepath.Base(d.Command)}, d.Args...), " "), Inv: inv, Err: err}).Message
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

// ServerSettings reads what the server states need: every extension's
// choice and the host's settings. A file that cannot be read is an
// error the caller reports (err, either's), and reads as nothing chosen;
// gsErr is the settings file's alone, with which what Gemini CLI starts
// cannot be told (ServerState.SetUntold).
func (sw *Switch) ServerSettings() (choices map[string]extension.ServerChoice, gs Settings, gsErr, err error) {
	choices, err = sw.Store.ServerChoices()
	gs, gsErr = sw.Host.Read()
	return choices, gs, gsErr, cmp.Or(err, gsErr)
}

// Served fills in s, in's switched server state under the choice c,
// whether gemkit mcp serves its servers and what it listed of them.
func (sw *Switch) Served(s *ServerState, in *extension.Installed, c extension.ServerChoice) {
	if s == nil || !s.Switched || in.Extension == nil {
		return
	}
	s.NotServed, s.Agreed = sw.WhyNotServed(in, c)
	s.Listed = sw.policy().LastListings(in.Extension)
}

// WhyNotServed says why gemkit mcp would not serve the switched servers
// of ext, with what to do, as the switch checks it: consent (given, to
// files it can bind), each stdio server's start as far as it can be
// told without starting it, and each package-runner server's pin (c's,
// PinProblems); "" when nothing stands in the way. agreed, when not "",
// says that they are served as the person agreed to them, not as the
// folder is now (agreedWords).
func (sw *Switch) WhyNotServed(in *extension.Installed, c extension.ServerChoice) (why, agreed string) {
	ext := in.Extension
	reasons, agreed := sw.startProblems(ext, c)
	if w := NotLoaded(in); w != "" {
		reasons = append([]string{w}, reasons...)
	}
	for _, p := range sw.PinProblems(ext, c) {
		reasons = append(reasons, p.Message+": "+p.Fix)
	}
	return extension.Printable(strings.Join(reasons, ". ")), agreed
}

// startProblems are WhyNotServed's reasons but the pins: consent, and
// each stdio server's start with c's widening and credentials files,
// from its pinned package's tree (c's pins) when it has one; and its
// agreed.
func (sw *Switch) startProblems(ext *extension.Extension, c extension.ServerChoice) (why []string, agreed string) {
	st := sw.Store
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
		if err := extmcp.Check(ext, s, c.Widening, c.Handed, c.Packages, ext.Dir, sw.Environ); err != nil {
			why = append(why, fmt.Sprintf("its MCP server %s would not start: %v", s, err))
		}
	}
	return append(why, listingProblems(sw.policy().LastListings(ext))...), agreed
}

// listingProblems say, of the last listings of an extension's servers
// (extmcp.Policy.LastListings), those gemkit mcp could not serve, with
// why: when and how the start or listing failed, its cause first.
func listingProblems(listed map[string]extmcp.Listing) []string {
	var why []string
	for _, label := range slices.Sorted(maps.Keys(listed)) {
		if l := listed[label]; l.Failed != "" {
			why = append(why, fmt.Sprintf("the last time gemkit mcp started it (%s), %s", l.At.Local().Format(time.DateTime), l.Failed))
		}
	}
	return why
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

// consentHint is how every refusal for want of consent says to give it:
// one command that shows what the person agrees to and runs nothing.
func consentHint(name string) string { return "`" + extmcp.AgreeCommand(name) + "`" }

// MissingWords name the switched servers s's excluded names lack, with
// what Gemini CLI does with them.
func MissingWords(s *ServerState) string {
	var parts []string
	if len(s.Unconfined) > 0 {
		parts = append(parts, strings.Join(s.Unconfined, ", ")+", which Gemini CLI starts unconfined beside gemkit's sandboxed copy")
	}
	if len(s.RemoteInGemini) > 0 {
		parts = append(parts, strings.Join(s.RemoteInGemini, ", ")+", which Gemini CLI connects to itself beside gemkit mcp")
	}
	return strings.Join(parts, ", and ")
}
