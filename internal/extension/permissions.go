package extension

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/gemkit/gemkit/internal/agentread"
	"slices"
	"sort"
	"strings"
	"time"

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
	if meta := metadataNames(hosts); len(meta) > 0 {
		lines = append(lines, Printable("reach a cloud's metadata service ("+strings.Join(meta, ", ")+"): on a cloud machine it hands the machine's own credentials (its service account, its instance role) to whatever asks, so the tools could act as this machine in its cloud"))
	}
	return lines
}

// metadataNames are the hosts of hosts (canonical allowedHosts) that are
// a cloud's metadata service (permission.MetadataHost): a tool's proxy
// reaches one its manifest lists, as any special address listed, and
// the consent text says what it hands out. (An extension's servers are
// never given one.)
func metadataNames(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		parsed, err := ParseHost(h)
		if err != nil {
			continue
		}
		if _, ok := permission.MetadataHost(parsed.Name); ok && !slices.Contains(out, parsed.Name) {
			out = append(out, parsed.Name)
		}
	}
	return out
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

// ReadBeforeAgreeing is said after the consent text by a command that
// then asks the person to agree, before its question; a command that
// asks nothing (consent given already, or with --consent) does not say
// it.
const ReadBeforeAgreeing = "Read its source before you agree."

// ConsentText is what a person reads before agreeing to install (or link)
// an extension: what it will be able to do, the tools and MCP servers it
// brings, the context it adds, and the warning that nobody vetted it. Each
// line is fit to print (see Printable), so a manifest cannot hide part of
// it behind terminal escape sequences. It asks nothing (see
// ReadBeforeAgreeing).
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
	agents, err := e.AgentServers("")
	if err != nil {
		agents = nil
	}
	blocked := RunnerRefused(m, agents)
	if len(m.MCPServers) > 0 {
		lines = append(lines, "", "MCP servers it will run:")
		for _, l := range serverLines(m, c, blocked) {
			lines = append(lines, "  - "+l)
		}
	}
	if len(agents) > 0 {
		lines = append(lines, "", "MCP servers its agents will run (when Gemini CLI runs the agent):")
		for _, l := range agentServerLines(m.Name, agents, c, blocked) {
			lines = append(lines, "  - "+l)
		}
	}
	lines = append(lines, handedLines(c.Handed)...)
	hooks, err := e.CommandHooks()
	switch {
	case agentread.IsUnreadable(err):
		lines = append(lines, "", "gemkit cannot read its hooks file (hooks/hooks.json) exactly as Gemini CLI does: "+agentread.Why(err)+". Gemini CLI may run hooks from it that gemkit does not see: switched to gemkit's sandbox, the extension is held in Gemini CLI until the file is one gemkit reads.")
	case err != nil:
		lines = append(lines, "", "Its hooks file cannot be read ("+strings.TrimPrefix(err.Error(), "hooks/hooks.json: ")+"): Gemini CLI runs none of its hooks, and says so only in its debug log.")
	}
	if len(hooks) > 0 {
		lines = append(lines, "", "Hooks it runs (hooks/hooks.json), on Gemini CLI's events:")
		for _, l := range HookLines(m.Name, e.Dir, m.Settings, hooks, c) {
			lines = append(lines, "  - "+l)
		}
	}
	// Its policies run nothing of its own (an external checker Gemini
	// CLI 0.61 does not start); what they change is named all the same.
	policies := e.Policies()
	lines = append(lines, policies.PolicyLines()...)
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
		"Extensions may come from third parties and nobody has vetted this one.")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return lines
}

// handedLines say which files of the person's credentials the servers
// are handed, as they are now: a file changed after is not handed.
func handedLines(handed []permission.HandedFile) []string {
	if len(handed) == 0 {
		return nil
	}
	lines := []string{"", "Your credentials its servers are handed, read-only, each only while it stays the file it is now:"}
	for _, f := range handed {
		id := f.Identity
		digest := strings.TrimPrefix(id.Digest, "sha256:")
		digest = digest[:min(12, len(digest))]
		lines = append(lines, fmt.Sprintf("  - %s: %s (%s, sha256 %s…, written %s)", f.Kind, f.Source, Size(id.Size), digest,
			time.Unix(0, id.ModTime).Local().Format(time.DateTime)))
	}
	return lines
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
