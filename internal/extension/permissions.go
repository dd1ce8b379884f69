package extension

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/permission"
)

// Terms are an extension's permissions as a person agrees to them,
// worked out once from its manifest: the declared policy the sandbox
// enforces, the hash consent is recorded against (PermissionsHash) and
// the words the person reads (PermissionsSummary). A tool run takes
// them once and hands them on, rather than going back to the manifest
// for each.
type Terms struct {
	Policy permission.Policy
	Hash   string
	Lines  []string
}

// Terms works out m's permissions: the defaults filled in once, each
// allowed host read once for both the hash and the words.
func (m *Manifest) Terms() Terms {
	p := m.EffectivePermissions()
	c, loopback := canonicalOf(p)
	c.ServersTake = serversTake(m)
	return Terms{Policy: p.Policy(), Hash: c.hash(), Lines: summary(p, c.AllowedHosts, loopback)}
}

// PermissionsSummary says in plain words what the extension's tools may do,
// one line per permission, e.g. "read files in your workspace" or "no
// network access". Absent permissions read as the narrowest ones.
func PermissionsSummary(m *Manifest) []string {
	p := m.EffectivePermissions()
	hosts, loopback := canonicalHosts(p.Network.AllowedHosts)
	return summary(p, hosts, loopback)
}

// summary is PermissionsSummary of the effective permissions p, whose
// hosts in canonical form are hosts; loopback says one of them is this
// machine.
func summary(p Permissions, hosts []string, loopback bool) []string {
	read, write := p.Filesystem.Read, p.Filesystem.Write
	var lines []string
	if read == AccessNone && write == AccessNone {
		lines = append(lines, "no access to your files")
	} else {
		if read != AccessNone {
			lines = append(lines, "read "+scopeWords(read))
			if read.Rank() >= AccessHome.Rank() {
				lines = append(lines, credentialsLine())
				for _, k := range canonicalLifted(p.Filesystem.Credentials) {
					lines = append(lines, Printable("and, all the same, read "+permission.CredentialWords(k)))
				}
			}
		}
		if write != AccessNone {
			lines = append(lines, "create, change and delete "+scopeWords(write))
			lines = append(lines, guardedLine())
			for _, n := range canonicalLifted(p.Filesystem.ProtectedWrites) {
				lines = append(lines, Printable("and, all the same, change or create the protected "+permission.LiftWords(n)+" in your workspace"))
			}
		} else {
			lines = append(lines, "no changes to your files")
		}
	}
	if len(hosts) == 0 {
		return append(lines, "no network access")
	}
	lines = append(lines, Printable("connect to "+strings.Join(hosts, ", ")+" (and no other host)"))
	if loopback {
		lines = append(lines, "reach services running on this computer (localhost): a local server that trusts connections from this machine (a database, a dev server, another program's API) becomes reachable to the tools; gemkit's own servers stay closed")
	}
	return lines
}

// guardedLine is the consent line of every write scope: the protected
// paths, which stay read-only unless the manifest lists them (each then
// on a line of its own).
func guardedLine() string {
	return "but never change or create the files other programs run or obey, in your workspace, your home folder and the folders between them: " +
		permission.GuardedWords() + "; they stay read-only unless listed below"
}

// credentialsLine is the consent line of a read scope that holds the
// home folder: the other programs' credentials stay closed unless the
// manifest lists their kind (each then on a line of its own).
func credentialsLine() string {
	return "but never the credentials other programs keep (kinds: " + permission.CredentialKinds() + "); they stay closed unless listed below"
}

func scopeWords(a Access) string {
	switch a {
	case AccessWorkspace:
		return "files in your workspace"
	case AccessHome:
		return "files in your home directory"
	case AccessFull:
		return "any file on this computer"
	}
	return fmt.Sprintf("files in the unknown scope %q", a)
}

// canonicalHosts returns the hosts in canonical form, sorted and without
// duplicates; entries that do not parse are kept verbatim so that nothing
// an extension asks for is hidden. loopback says one of them is this
// machine (Host.Loopback).
func canonicalHosts(hosts []string) (out []string, loopback bool) {
	seen := map[string]bool{}
	out = []string{}
	for _, h := range hosts {
		key := h
		if parsed, err := ParseHost(h); err == nil {
			key = parsed.String()
			loopback = loopback || parsed.Loopback()
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out, loopback
}

// canonicalLifted is a protectedWrites list sorted and without
// duplicates.
func canonicalLifted(names []string) []string {
	out := append([]string(nil), names...)
	sort.Strings(out)
	return slices.Compact(out)
}

// canonicalPermissions is the form PermissionsHash hashes: defaults filled
// in, hosts canonical and sorted, protected writes and credential
// kinds sorted (each left out when there are none, so that the hashes of
// manifests without them stay what they were).
type canonicalPermissions struct {
	Read            Access   `json:"read"`
	Write           Access   `json:"write"`
	AllowedHosts    []string `json:"allowedHosts"`
	ProtectedWrites []string `json:"protectedWrites,omitempty"`
	Credentials     []string `json:"credentials,omitempty"`
	// ServersTake: the permissions give the extension's sandboxed MCP
	// servers something too (ServerGrant), which its consent agrees to.
	ServersTake bool `json:"serversTake,omitempty"`
}

func canonical(m *Manifest) canonicalPermissions {
	c, _ := canonicalOf(m.EffectivePermissions())
	c.ServersTake = serversTake(m)
	return c
}

// canonicalOf is the canonical form of the effective permissions p, and
// whether one of its hosts is this machine.
func canonicalOf(p Permissions) (canonicalPermissions, bool) {
	hosts, loopback := canonicalHosts(p.Network.AllowedHosts)
	return canonicalPermissions{Read: p.Filesystem.Read, Write: p.Filesystem.Write, AllowedHosts: hosts,
		ProtectedWrites: canonicalLifted(p.Filesystem.ProtectedWrites), Credentials: canonicalLifted(p.Filesystem.Credentials)}, loopback
}

func (c canonicalPermissions) hash() string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PermissionsHash is a stable hash of the permissions block: two manifests
// whose permissions mean the same thing (absent vs "none", host order,
// "HTTPS://X.com/" vs "https://x.com") hash the same. Consent is recorded
// against it, so a change of permissions asks again.
func PermissionsHash(m *Manifest) string { return canonical(m).hash() }

// ToolSignature renders a tool as the model sees it: name(arg: type, ...).
func ToolSignature(t Tool) string {
	parts := make([]string, len(t.Args))
	for i, a := range t.Args {
		opt := ""
		if a.Optional() {
			opt = "?"
		}
		parts[i] = fmt.Sprintf("%s%s: %s", a.Name, opt, a.Type)
		if len(a.Default) > 0 {
			parts[i] += " = " + string(a.Default)
		}
	}
	return t.Name + "(" + strings.Join(parts, ", ") + ")"
}

// MCPServerSummary says how an MCP server is reached: "local: cmd args" or
// "remote: url", fit to print (see Printable).
func MCPServerSummary(raw json.RawMessage) string { return Printable(mcpServerSummary(raw)) }

func mcpServerSummary(raw json.RawMessage) string {
	var def struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
		URL     string   `json:"url"`
		HTTPURL string   `json:"httpUrl"`
		TCP     string   `json:"tcp"`
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		return "unreadable definition"
	}
	switch {
	case def.Command != "":
		return strings.TrimSpace("local: " + def.Command + " " + strings.Join(def.Args, " "))
	case def.HTTPURL != "":
		return "remote: " + def.HTTPURL
	case def.URL != "":
		return "remote: " + def.URL
	case def.TCP != "":
		return "remote: tcp " + def.TCP
	}
	return "no command or URL"
}

// SandboxedServerWords say what an MCP server can do under the default
// profile gemkit mcp runs it in (internal/extmcp), whether or not its
// extension declares permissions (those are its tools'), for any
// extension: the data folder is named by a placeholder. What a person
// reads about one extension names its folder (ServerProfileWords).
const SandboxedServerWords = "read your workspace, its extension's folder and its runtime; write only its own data folder (~/.local/share/gemkit/extension-data/<extension>), which is also its HOME; no network; none of your environment variables"

// HookProfileWords say what a command hook of an extension switched to
// gemkit can do in gemkit's sandbox (gemkit extensions hook), unless
// the person widened it by name.
const HookProfileWords = "read your workspace, its extension's folder and your system's programs; write nothing but a private temporary folder that goes with the run (its HOME); no network; of your environment only PATH, your user name, the locale and the terminal, with the variables Gemini CLI gives hooks (GEMINI_PROJECT_DIR, GEMINI_SESSION_ID...) and the extension's settings; its input, output, error output and exit code pass through as Gemini CLI gave and expects them, within its timeout"

// SandboxedServerWordsFor are SandboxedServerWords for the servers of
// the extension name: its data folder as it is on disk, which a person
// can open, not a placeholder to fill in.
func SandboxedServerWordsFor(name string) string {
	return strings.Replace(SandboxedServerWords, "<extension>", name, 1)
}

// ServerProfileWords say what an MCP server of the extension name can
// do in gemkit's sandbox under the default profile widened by w.
func ServerProfileWords(name string, w Widening) string {
	words := SandboxedServerWordsFor(name)
	if more := w.Words(); more != "" {
		return words + "; and, as you allowed, " + more
	}
	return words
}

// ServerProfileWordsOf say what an MCP server of m can do in gemkit's
// sandbox: the default profile, what m's permissions give its servers
// (ServerGrant), and what the person allowed on top (w).
func ServerProfileWordsOf(m *Manifest, w Widening) string {
	words := SandboxedServerWordsFor(m.Name)
	if g := ServerGrant(m).Words(); g != "" {
		words += "; and, as its manifest's permissions declare, " + g
	}
	if more := w.Words(); more != "" {
		words += "; and, as you allowed, " + more
	}
	return words
}

// SandboxedServer reports whether gemkit mcp can run the MCP server def
// in its sandbox: a stdio server (a command) that is not gemkit itself.
// Gemini CLI's mcp.excluded names exactly these when the extension is
// switched to gemkit.
func SandboxedServer(def json.RawMessage) bool {
	var d struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(def, &d) != nil || d.Command == "" || ContainerServer(def) {
		return false
	}
	return d.Command != "gemkit" && !strings.HasSuffix(d.Command, "/gemkit")
}

// ContainerEngines are the commands that hand a server to a container
// engine: its daemon (Docker's, containerd's) or, for Podman, its own
// runtime starts the container with what the engine may do, outside any
// sandbox of gemkit's; the command itself only talks to the engine.
var ContainerEngines = []string{"docker", "podman", "nerdctl"}

// ContainerServer reports whether the MCP server def is started by a
// container engine (its command is docker, podman or nerdctl): gemkit
// cannot sandbox what an engine runs, so such a server stays Gemini
// CLI's, switched or not (it is never in mcp.excluded).
func ContainerServer(def json.RawMessage) bool {
	var d struct {
		Command string `json:"command"`
	}
	return json.Unmarshal(def, &d) == nil && slices.Contains(ContainerEngines, filepath.Base(d.Command))
}

// ContainerServers are the names of m's servers ContainerServer, sorted.
func ContainerServers(m *Manifest) []string { return serversWhere(m, ContainerServer) }

// ContainerWords say what happens with a server started by the
// container engine cmd, for the switch, the consent text, list,
// describe and doctor.
func ContainerWords(cmd string) string {
	return "started with " + filepath.Base(cmd) + ": a container engine's daemon runs it, outside any sandbox of gemkit's (with what the engine grants, which reaching Docker's socket makes root's), so gemkit keeps it Gemini CLI's: switching the extension leaves it out, and Gemini CLI starts it as before"
}

// ContainerCommand is the command of the server def, for ContainerWords.
func ContainerCommand(def json.RawMessage) string {
	var d struct {
		Command string `json:"command"`
	}
	json.Unmarshal(def, &d)
	return d.Command
}

// SandboxedServers are the names of m's servers SandboxedServer, sorted.
func SandboxedServers(m *Manifest) []string { return serversWhere(m, SandboxedServer) }

// RemoteServer reports whether the MCP server def is a remote one (a
// url or httpUrl, no command): it runs elsewhere, so no sandbox of this
// computer's confines it. When its extension is switched to gemkit,
// gemkit mcp connects to it in Gemini CLI's place, as Gemini CLI would.
func RemoteServer(def json.RawMessage) bool {
	var d struct {
		Command string `json:"command"`
		URL     string `json:"url"`
		HTTPURL string `json:"httpUrl"`
	}
	return json.Unmarshal(def, &d) == nil && d.Command == "" && (d.URL != "" || d.HTTPURL != "")
}

// RemoteServers are the names of m's servers RemoteServer, sorted.
func RemoteServers(m *Manifest) []string { return serversWhere(m, RemoteServer) }

// SwitchedServers are the names of the servers the switch to gemkit
// takes from Gemini CLI, sorted: the stdio ones gemkit runs in its
// sandbox and the remote ones it connects to. Gemini CLI's mcp.excluded
// names exactly these when the extension is switched; gemkit itself (an
// entry serving the extension's tools) and tcp servers, which Gemini
// CLI does not start, stay as they are.
func SwitchedServers(m *Manifest) []string {
	return serversWhere(m, func(def json.RawMessage) bool { return SandboxedServer(def) || RemoteServer(def) })
}

func serversWhere(m *Manifest, keep func(json.RawMessage) bool) []string {
	var out []string
	for _, n := range sortedKeys(m.MCPServers) {
		if keep(m.MCPServers[n]) {
			out = append(out, n)
		}
	}
	return out
}

// RemoteServerWords say how gemkit mcp reaches a switched extension's
// remote server: as Gemini CLI would, and not sandboxed.
const RemoteServerWords = "it runs elsewhere, so gemkit does not sandbox it: gemkit mcp connects to it from your computer as Gemini CLI would, sending the manifest's headers with only the extension's declared settings in them (none of your environment variables), but signs in to nothing: a server that asks for OAuth fails to connect"

// ServerLines say, for each MCP server of m, where it runs and what it
// can do there, given the person's choice c: the lines of the consent
// text and of describe.
func ServerLines(m *Manifest, c ServerChoice) []string {
	var lines []string
	switchable := len(SandboxedServers(m)) > 0
	for _, name := range sortedKeys(m.MCPServers) {
		def := m.MCPServers[name]
		where := "a remote server (or none), not sandboxed by gemkit"
		var d struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(def, &d) == nil && d.Command != "" {
			where = "gemkit itself, which runs the extension's tools in their own sandbox"
		}
		switch {
		case ContainerServer(def):
			where = ContainerWords(ContainerCommand(def))
		case SandboxedServer(def):
			run := "Gemini CLI starts it unconfined, with your rights and environment, until you switch the extension to gemkit (gemkit extensions sandbox " + m.Name + "); then gemkit mcp runs it in gemkit's sandbox, where it can "
			if c.Switched {
				run = "switched to gemkit: Gemini CLI does not start it, gemkit mcp runs it in gemkit's sandbox, where it can "
			}
			where = run + ServerProfileWordsOf(m, c.Widening)
			if p, ok := c.Packages[name]; ok {
				where += "; " + p.Words()
			}
		case RemoteServer(def) && c.Switched:
			where = "a remote server, switched to gemkit: Gemini CLI does not connect to it; " + RemoteServerWords + "; " + remoteReach(m.Name, def)
		case RemoteServer(def) && switchable:
			where = "a remote server, not sandboxed by gemkit: Gemini CLI connects to it itself until you switch the extension to gemkit (gemkit extensions sandbox " + m.Name + "); then " + RemoteServerWords + "; " + remoteReach(m.Name, def)
		case RemoteServer(def):
			where = "a remote server, not sandboxed by gemkit: Gemini CLI connects to it itself"
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s", name, MCPServerSummary(def), where))
	}
	return lines
}

// AgentServerLines say, for each server the extension name's agents
// declare, where it runs and what it can do there, given the person's
// choice c, as ServerLines says it of the manifest's.
func AgentServerLines(name string, agents []AgentServer, c ServerChoice) []string {
	var lines []string
	for _, s := range agents {
		where := "a remote server (or none), not sandboxed by gemkit"
		switch {
		case SandboxedServer(s.Def) && c.Switched:
			where = "switched to gemkit: Gemini CLI does not start it, gemkit mcp runs it in gemkit's sandbox for the main agent, where it can " + ServerProfileWords(name, c.Widening)
		case SandboxedServer(s.Def):
			where = "Gemini CLI starts it unconfined when the agent runs, with your rights and environment, until you switch the extension to gemkit (gemkit extensions sandbox " + name + "); then gemkit mcp runs it in gemkit's sandbox, where it can " + ServerProfileWords(name, c.Widening)
		case RemoteServer(s.Def) && c.Switched:
			where = "a remote server, switched to gemkit: Gemini CLI does not connect to it; " + RemoteServerWords
		case RemoteServer(s.Def):
			where = "a remote server, not sandboxed by gemkit: Gemini CLI connects to it when the agent runs, until you switch the extension to gemkit"
		}
		lines = append(lines, fmt.Sprintf("%s's %s (%s): %s", s.Agent, s.Server, MCPServerSummary(s.Def), where))
	}
	return lines
}

// HookLines say, for each command hook of the extension name, when it
// runs and where, given the person's choice c.
func HookLines(name string, hooks []CommandHook, c ServerChoice) []string {
	var lines []string
	for _, h := range hooks {
		when := h.Event
		if h.Matcher != "" && h.Matcher != "*" {
			when += " of " + h.Matcher
		}
		where := "Gemini CLI runs it unconfined, through your shell with your rights and environment (its own sandbox never applies to hooks), until you switch the extension to gemkit (gemkit extensions sandbox " + name + "); then gemkit runs it in its sandbox, where it can " + HookProfileWords
		if c.Switched {
			where = "Gemini CLI runs it itself, unconfined: the switch could not take it"
			for _, sh := range c.Hooks {
				if sh.Label != h.Label {
					continue
				}
				where = "switched to gemkit: Gemini CLI does not run it, gemkit runs it in its sandbox, where it can " + HookProfileWords
				if w := c.HookWidening[h.Label]; !w.Empty() {
					where += "; and, as you allowed, " + w.Words()
				}
				if sh.Command == "" {
					where = "off: your hooksConfig.disabled turned it off before the switch, and gemkit does not run it either"
				}
			}
		}
		lines = append(lines, fmt.Sprintf("%s (%s: %s): %s", h.Label, when, h.Command, where))
	}
	return lines
}

// ConsentText is what a person reads before agreeing to install (or link)
// an extension: what it will be able to do, the tools and MCP servers it
// brings, the context it adds, and the warning that nobody vetted it. Each
// line is fit to print (see Printable), so a manifest cannot hide part of
// it behind terminal escape sequences.
func ConsentText(e *Extension, action string) []string {
	return ConsentTextWith(e, action, ServerChoice{})
}

// ConsentTextWith is ConsentText with the person's choice c for the
// extension's MCP servers (its widening is agreed to with the rest).
func ConsentTextWith(e *Extension, action string, c ServerChoice) []string {
	m := e.Manifest
	lines := []string{fmt.Sprintf("%s extension %q version %s.", action, m.Name, m.Version)}
	if m.Description != "" {
		lines = append(lines, "  "+m.Description)
	}
	// The permissions are its tools'. An extension with neither (one
	// that only ships MCP servers, as most published ones do) would read
	// "no access to your files" right above servers that read the
	// workspace: its servers' lines say what they can do.
	if ToolPermissionsShown(m) {
		heading := "Its tools will be able to:"
		if len(m.Tools) == 0 && len(SandboxedServers(m)) > 0 {
			heading = "Its permissions (its MCP servers take what of them a server can have, as said below):"
		}
		lines = append(lines, "", heading)
		for _, l := range PermissionsSummary(m) {
			lines = append(lines, "  - "+l)
		}
	}
	if len(m.Tools) > 0 {
		lines = append(lines, "", "Tools it adds (programs that run on this computer):")
		for _, t := range m.Tools {
			lines = append(lines, fmt.Sprintf("  - %s — %s script %s", ToolSignature(t), t.Runtime, relTo(e.Dir, t.Executable)))
		}
	}
	if len(m.MCPServers) > 0 {
		lines = append(lines, "", "MCP servers it will run:")
		for _, l := range ServerLines(m, c) {
			lines = append(lines, "  - "+l)
		}
	}
	if agents, err := e.AgentServers(""); err == nil && len(agents) > 0 {
		lines = append(lines, "", "MCP servers its agents will run (when Gemini CLI runs the agent):")
		for _, l := range AgentServerLines(m.Name, agents, c) {
			lines = append(lines, "  - "+l)
		}
	}
	if hooks, err := e.CommandHooks(); err == nil && len(hooks) > 0 {
		lines = append(lines, "", "Hooks it runs (hooks/hooks.json), on Gemini CLI's events:")
		for _, l := range HookLines(m.Name, hooks, c) {
			lines = append(lines, "  - "+l)
		}
	}
	if len(e.ContextFiles) > 0 {
		lines = append(lines, "", "Context it adds to every session:")
		for _, f := range e.ContextFiles {
			lines = append(lines, "  - "+relTo(e.Dir, f))
		}
	}
	if len(m.ExcludeTools) > 0 {
		lines = append(lines, "", "Built-in tools it turns off: "+strings.Join(m.ExcludeTools, ", "))
	}
	lines = append(lines, "",
		"Extensions may come from third parties and nobody has vetted this one.",
		"Read its source before you agree.")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return lines
}

// Change is one difference between two versions of an extension that
// matters for consent.
type Change struct {
	// Area is "permissions", "tools", "mcpServers" or, for an update,
	// "files" (Store.Update).
	Area string `json:"area"`
	// What says what changed, in words.
	What string `json:"what"`
}

// ConsentChanges lists what changed between old and new in the parts a
// person consented to: permissions, tools and MCP servers. An empty
// result means the earlier consent still covers the new version. Compare
// manifests as written (Extension.Unexpanded), not with variables
// substituted, or two copies of one version in different folders differ.
func ConsentChanges(old, new *Manifest) []Change {
	var out []Change
	op, np := canonical(old), canonical(new)
	if op.Read != np.Read {
		out = append(out, Change{"permissions", fmt.Sprintf("file read access: %s → %s", op.Read, np.Read)})
	}
	if op.Write != np.Write {
		out = append(out, Change{"permissions", fmt.Sprintf("file write access: %s → %s", op.Write, np.Write)})
	}
	added, removed := diffStrings(op.AllowedHosts, np.AllowedHosts)
	for _, h := range added {
		out = append(out, Change{"permissions", "may now connect to " + h})
	}
	for _, h := range removed {
		out = append(out, Change{"permissions", "no longer connects to " + h})
	}
	added, removed = diffStrings(op.ProtectedWrites, np.ProtectedWrites)
	for _, n := range added {
		out = append(out, Change{"permissions", "may now change the protected " + permission.LiftWords(n)})
	}
	for _, n := range removed {
		out = append(out, Change{"permissions", "no longer changes the protected " + n})
	}
	added, removed = diffStrings(op.Credentials, np.Credentials)
	for _, k := range added {
		out = append(out, Change{"permissions", "may now read " + permission.CredentialWords(k)})
	}
	for _, k := range removed {
		out = append(out, Change{"permissions", "no longer reads the " + k + " credentials"})
	}
	oldTools := map[string]Tool{}
	for _, t := range old.Tools {
		oldTools[t.Name] = t
	}
	newTools := map[string]bool{}
	for _, t := range new.Tools {
		newTools[t.Name] = true
		ot, ok := oldTools[t.Name]
		switch {
		case !ok:
			out = append(out, Change{"tools", fmt.Sprintf("new tool %s (%s script %s)", ToolSignature(t), t.Runtime, t.Executable)})
		case !sameTool(ot, t):
			out = append(out, Change{"tools", fmt.Sprintf("tool %s changed: %s → %s", t.Name, toolLine(ot), toolLine(t))})
		}
	}
	for _, t := range old.Tools {
		if !newTools[t.Name] {
			out = append(out, Change{"tools", "tool " + t.Name + " removed"})
		}
	}
	for _, name := range sortedKeys(new.MCPServers) {
		o, ok := old.MCPServers[name]
		switch {
		case !ok:
			out = append(out, Change{"mcpServers", fmt.Sprintf("new MCP server %s (%s)", name, MCPServerSummary(new.MCPServers[name]))})
		case !jsonEqual(o, new.MCPServers[name]):
			out = append(out, Change{"mcpServers", fmt.Sprintf("MCP server %s changed: %s → %s", name, MCPServerSummary(o), MCPServerSummary(new.MCPServers[name]))})
		}
	}
	for _, name := range sortedKeys(old.MCPServers) {
		if _, ok := new.MCPServers[name]; !ok {
			out = append(out, Change{"mcpServers", "MCP server " + name + " removed"})
		}
	}
	for i := range out {
		out[i].What = Printable(out[i].What)
	}
	return out
}

func sameTool(a, b Tool) bool {
	return toolLine(a) == toolLine(b) && a.Output == b.Output
}

func toolLine(t Tool) string {
	return fmt.Sprintf("%s %s script %s", ToolSignature(t), t.Runtime, t.Executable)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func diffStrings(old, new []string) (added, removed []string) {
	o := map[string]bool{}
	for _, s := range old {
		o[s] = true
	}
	n := map[string]bool{}
	for _, s := range new {
		n[s] = true
		if !o[s] {
			added = append(added, s)
		}
	}
	for _, s := range old {
		if !n[s] {
			removed = append(removed, s)
		}
	}
	return added, removed
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// EnforcementNote says how one permission is enforced on this machine;
// see permission.Note.
type EnforcementNote = permission.Note

// Enforcer explains how an extension's permissions are enforced on this
// machine. The sandbox that runs tools implements it; `describe` prints
// its answer.
type Enforcer interface {
	Enforcement(ctx context.Context, e *Extension) ([]EnforcementNote, error)
}

// ToolPermissionsShown says whether m's permissions are shown as what
// its tools may do: it has tools, or declares permissions. An extension
// with neither (one that only ships MCP servers, as most published ones
// do) would read "no access to your files" beside servers that read the
// workspace, so its servers' own lines say what it can do instead.
func ToolPermissionsShown(m *Manifest) bool { return len(m.Tools) > 0 || m.Permissions != nil }

// remoteReach says where gemkit mcp connects for the remote server def:
// its origin, and only there.
func remoteReach(name string, def json.RawMessage) string {
	var d struct {
		URL     string `json:"url"`
		HTTPURL string `json:"httpUrl"`
	}
	_ = json.Unmarshal(def, &d)
	u := d.HTTPURL
	if u == "" {
		u = d.URL
	}
	o := Origin(u)
	if o == "" {
		return "gemkit mcp does not connect to it: its URL is not an http or https URL with a host"
	}
	return "gemkit mcp reaches " + Printable(o) + " and no other origin: it follows no redirect elsewhere, and an address of this computer or of a private network there is refused unless you allowed that very host and port (gemkit extensions sandbox " + name + " --allow-host HOST:PORT)"
}

// Origin is the origin a remote server's URL reaches: scheme://host:port,
// the port written even when it is the scheme's default, so that a
// person reads where gemkit connects, and nothing else (no user, path or
// query, which a manifest could fill with words). "" when raw is not an
// http or https URL with a host.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return ""
	case port == "" && scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
