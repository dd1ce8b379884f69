// Package extmcp runs the enabled extensions' own MCP servers (the
// manifest's mcpServers entries) for `gemkit mcp` to serve: a stdio
// server (an entry with a command) inside gemkit's sandbox, started
// through sandbox.Launcher.StartServer; a remote one (url, httpUrl) by
// connecting to it as it is (remote.go). Each is started at its first
// use, kept while it is used, stopped when idle and started again once
// if it dies. Its tools, prompts and resources are listed and used
// through internal/mcpclient, and its notifications handed on (Event).
package extmcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/agentplugin"
	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// Spec is one mcpServers entry of an enabled extension, as gemkit starts
// it (Command) or connects to it (URL).
type Spec struct {
	// Extension and Server are the extension's and the entry's names.
	Extension, Server string
	// Agent, for a server one of the extension's sub-agents declares
	// (the mcp_servers of its agents/NAME.md front matter, which Gemini
	// CLI starts when the agent runs), is the agent's name; "" for the
	// manifest's.
	Agent string
	// Dir is the extension's folder.
	Dir string
	// Command and Args are the entry's command and arguments, with the
	// manifest's variables (${extensionPath}, ...) already substituted.
	Command string
	Args    []string
	// Env are the entry's env values as written; Settings are the values
	// of the extension's declared settings, by variable. The server's
	// environment is both (BuildProfile), a $NAME or ${NAME} in an env
	// value taking the value of a declared setting, or of HOME, the
	// server's data folder: never the person's environment.
	Env      map[string]string
	Settings map[string]string
	// Timeout bounds each call: the entry's timeout (milliseconds in the
	// manifest), 0 when it has none.
	Timeout time.Duration
	// Widening is what the person allowed the extension's servers beyond
	// the default profile (gemkit extensions sandbox NAME --allow-host,
	// --allow-write), agreed to with the extension's consent.
	Widening extension.Widening
	// Handed are the files of the person's credentials agreed to for the
	// kinds of Widening (extension.ServerChoice.Handed): each is handed
	// only while it is still that file, and a kind without one is handed
	// nothing.
	Handed []permission.HandedFile `json:",omitempty"`
	// Package, for a package runner's server (npx -y pkg, npm exec,
	// ...), is the runner's line as the manifest writes it. Tree is the
	// tree its package was pinned in (internal/pkgrun), which the server
	// reads, read-only: Command is then the package's program there.
	// Unpinned, when not "", says why it has no pin it may run from:
	// it is not started.
	Package  string `json:",omitempty"`
	Tree     string `json:",omitempty"`
	Unpinned string `json:",omitempty"`
	// URL is a remote server's endpoint (the entry's httpUrl, else its
	// url), Transport how gemkit speaks to it: TransportHTTP
	// (Streamable HTTP), TransportSSE, or "" (the entry's url without a
	// type: Streamable HTTP, then SSE when that fails, as Gemini CLI
	// 0.61 does). Headers are sent with every request, a $NAME or
	// ${NAME} in a value taking the value of a declared setting only.
	URL       string
	Transport string
	Headers   map[string]string
	// Allowed, when set, is asked before each start of the server: an
	// error (in words: the person has not agreed to the extension as it
	// is now) keeps it from starting. It is asked then, not when the
	// specs are made, since it may hash the extension's folder, which
	// would hold up gemkit mcp's first answer.
	Allowed func() error `json:"-"`
	// Agreed, when set, is asked at each start of a stdio server before
	// Allowed: the folder of gemkit's own copy of the extension as the
	// person agreed to it (extension.Store.AgreedCopy), which the server
	// is shown at Dir in place of the extension's folder, with no check
	// of the folder; "" leaves the start to Allowed. Keep, when set,
	// makes that copy after a start Allowed let through, for the starts
	// after it.
	Agreed func() string `json:"-"`
	Keep   func() error  `json:"-"`
	// PinnedTree, when set, is asked at each start of a server that
	// runs from a pinned package's tree (Tree), from the agreed copy
	// too: an error (the tree is not the one agreed to) keeps it from
	// starting.
	PinnedTree func() error `json:"-"`
	// Plugin, for a server of an Agent Plugins plugin's mcp.json, is
	// the entry as written: its args, env and cwd are expanded as the
	// specification says at launch (BuildProfile, agentplugin.Launch),
	// its env and headers taken literally, never as $NAME references.
	Plugin *agentplugin.Server `json:",omitempty"`
}

// The transports of a remote server (Spec.Transport).
const (
	TransportHTTP = "http"
	TransportSSE  = "sse"
)

// Remote reports whether the spec is a remote server, which gemkit
// connects to rather than starts.
func (s Spec) Remote() bool { return s.URL != "" }

// Key identifies the spec's server in a Manager.
func (s Spec) Key() string { return KeyOf(s.Extension, s.Label()) }

// KeyOf is the Key of the server label (Spec.Label) of the extension
// ext.
func KeyOf(ext, label string) string { return ext + "\x00" + label }

// Label names the server within its extension: the entry's name, or
// agent/entry for an agent's.
func (s Spec) Label() string {
	if s.Agent != "" {
		return s.Agent + "/" + s.Server
	}
	return s.Server
}

// same reports whether a and b start the same process.
func (s Spec) same(o Spec) bool {
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(o)
	return string(a) == string(b)
}

// Skipped is an mcpServers entry gemkit does not serve, with why.
type Skipped struct {
	Extension, Server, Reason string
}

// entry is the part of Gemini CLI's MCPServerConfig gemkit uses. Of a
// remote server's, not oauth nor authProviderType (gemkit connects
// without signing in: a server that asks is reported as failing), nor
// trust (a client asks before a call as it decides: gemkit passes no
// trust on).
type entry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	// cwd is not followed: a server's working folder is the workspace.
	URL     string            `json:"url"`
	HTTPURL string            `json:"httpUrl"`
	Type    string            `json:"type"`
	Headers map[string]string `json:"headers"`
	TCP     string            `json:"tcp"`
	Timeout *float64          `json:"timeout"`
}

// Choose says whether the servers of the extension e are served, and
// how. gemkit mcp serves the extensions the person switched to gemkit,
// with their consent (internal/cli).
type Choose func(e *disclosure.Extension) Choice

// Choice is what a Choose says of an extension's servers.
type Choice struct {
	// Why, when not "", leaves them all out, for that reason.
	Why string
	// Widening is the widening of the default profile; Allowed is asked
	// before each start (Spec.Allowed; nil: nothing).
	Widening extension.Widening
	Allowed  func() error
	// Handed are the credentials files agreed to (Spec.Handed).
	Handed []permission.HandedFile
	// Agreed and Keep are the specs' (Spec.Agreed, Spec.Keep), for the
	// servers of its manifest; nil: none.
	Agreed func() string
	Keep   func() error
	// Agents serves the servers the extension's agents declare too: the
	// switch takes them from Gemini CLI's sub-agents, and gemkit mcp
	// serves them to the main agent in their place.
	Agents bool
	// Workspace is the workspace their ${workspacePath} names.
	Workspace string
	// Packages are the packages pinned for its package-runner servers,
	// by server: such a server runs only from its pin's tree. Tree,
	// when set, checks the tree pinned for a server (by its label)
	// before each of its starts (Spec.PinnedTree).
	Packages map[string]extension.Pin
	Tree     func(label string) error
}

// Specs are the servers of the set's extensions that choose lets through
// (nil: all, under the default profile), stdio and remote ones alike (a
// switched extension's remote servers are in Gemini CLI's mcp.excluded
// too), sorted by extension and server, and the entries left out with
// why: a tcp server, an entry that starts gemkit itself (an extension
// serving its own tools with `gemkit mcp --extension`), and those choose
// refuses.
func Specs(set *disclosure.Set, choose Choose) ([]Spec, []Skipped) {
	var out []Spec
	var skipped []Skipped
	for _, e := range set.Extensions {
		m := e.Ext.Manifest
		names := make([]string, 0, len(m.MCPServers))
		for n := range m.MCPServers {
			names = append(names, n)
		}
		sort.Strings(names)
		var ch Choice
		if choose != nil {
			// An extension without servers of its manifest may have its
			// agents' to serve (Choice.Agents).
			ch = choose(e)
		}
		for _, n := range names {
			if ch.Why != "" {
				// Not read at all: most extensions are not switched, and
				// this is on the way to gemkit mcp's first answer.
				skipped = append(skipped, Skipped{m.Name, n, ch.Why})
				continue
			}
			sp, why := specOf(e, n, m.MCPServers[n])
			// What the manifest's permissions give its servers, and what
			// the person allowed by name on top.
			sp.Widening, sp.Allowed, sp.Handed = extension.ServerGrant(m).Union(ch.Widening), ch.Allowed, ch.Handed
			// An agent's server is read from its agents/ file, which the
			// copy's manifest does not vouch for: it is checked as its
			// folder is.
			sp.Agreed, sp.Keep = ch.Agreed, ch.Keep
			if why != "" {
				skipped = append(skipped, Skipped{m.Name, n, why})
				continue
			}
			if !sp.Remote() {
				pinned(&sp, n, ch.Packages)
				checkTree(&sp, n, ch.Tree)
			}
			out = append(out, sp)
		}
		if ch.Why != "" || !ch.Agents {
			continue
		}
		agents, err := e.Ext.AgentServers(ch.Workspace)
		if err != nil {
			skipped = append(skipped, Skipped{m.Name, "agents/", fmt.Sprintf("its agents cannot be read: %v", err)})
			continue
		}
		for _, a := range agents {
			label := a.Agent + "/" + a.Server
			if _, clash := m.MCPServers[label]; clash {
				skipped = append(skipped, Skipped{m.Name, label, "a server of its manifest has the same name"})
				continue
			}
			sp, why := specOf(e, a.Server, a.Def)
			if why != "" {
				skipped = append(skipped, Skipped{m.Name, label, why})
				continue
			}
			sp.Agent, sp.Widening, sp.Allowed, sp.Handed = a.Agent, ch.Widening, ch.Allowed, ch.Handed
			if !sp.Remote() {
				// An agent's server is pinned by its label, agent/server.
				pinned(&sp, label, ch.Packages)
				checkTree(&sp, label, ch.Tree)
			}
			out = append(out, sp)
		}
	}
	return out, skipped
}

func specOf(e *disclosure.Extension, name string, raw json.RawMessage) (Spec, string) {
	m := e.Ext.Manifest
	var ent entry
	if err := agentread.Unmarshal(raw, &ent, true); err != nil {
		return Spec{}, fmt.Sprintf("its definition cannot be read: %v", err)
	}
	switch {
	case ent.Command == "" && (ent.HTTPURL != "" || ent.URL != ""):
		return remoteSpec(e, name, ent)
	case ent.Command == "" && ent.TCP != "":
		return Spec{}, "a tcp server, which Gemini CLI does not start either; gemkit serves stdio and remote (url, httpUrl) servers"
	case ent.Command == "":
		return Spec{}, "it has no command"
	case filepath.Base(ent.Command) == "gemkit":
		return Spec{}, "it is gemkit itself"
	case extension.ContainerServer(raw):
		return Spec{}, extension.ContainerWords(ent.Command)
	}
	sp := Spec{Extension: m.Name, Server: name, Dir: e.Ext.Dir, Command: ent.Command, Args: ent.Args, Env: ent.Env}
	common(e, ent, &sp)
	pluginServer(e, name, &sp)
	return sp, ""
}

// pluginServer marks sp, the server name of e, as a plugin's when e is
// an Agent Plugins plugin (Spec.Plugin).
func pluginServer(e *disclosure.Extension, name string, sp *Spec) {
	if !e.Ext.IsPlugin() {
		return
	}
	if s, ok := e.Ext.Plugin.Servers[name]; ok {
		sp.Plugin = &s
	}
}

// pinned runs a package runner's server (npx -y pkg, ...) from the tree
// its package was pinned in: the command becomes the package's program
// there, with the line's arguments. A line that cannot be pinned, or
// that has no pin for what it asks now, leaves the server unstarted,
// with why: it would fetch code nobody agreed to at each start.
//
// key names the server among the pins: its name in the manifest, or
// agent/server for an agent's.
func pinned(sp *Spec, key string, pins map[string]extension.Pin) {
	inv, ok, err := runnerline.Parse(sp.Command, sp.Args)
	if !ok {
		return
	}
	sp.Package = strings.Join(append([]string{filepath.Base(sp.Command)}, sp.Args...), " ")
	pinIt := fmt.Sprintf("`gemkit extensions sandbox %s` (or `gemkit extensions consent %s --grant` once switched) installs it once, at an exact version, in gemkit's sandbox, for you to agree to", Printable(sp.Extension), Printable(sp.Extension))
	if err != nil {
		sp.Unpinned = err.Error() + "; gemkit runs a package runner's server only from a package it pinned, so it does not start it"
		return
	}
	if inv.Ecosystem == runnerline.PyPI {
		sp.Unpinned = (&runnerline.PyPIError{Invocation: inv}).Error()
		return
	}
	p, ok := pins[key]
	switch {
	case !ok:
		sp.Unpinned = fmt.Sprintf("its command (%s) fetches %s from the registry, and gemkit has not pinned it: %s", Printable(sp.Package), Printable(inv.Request()), pinIt)
		return
	case p.Request != inv.Request() || p.Runner != inv.Runner || p.Tree == "" || p.Program == "":
		sp.Unpinned = fmt.Sprintf("its manifest now asks for %s (%s), not %s as pinned: %s", Printable(inv.Request()), Printable(inv.Runner), Printable(p.Request), pinIt)
		return
	}
	sp.Tree = p.Tree
	sp.Command = filepath.Join(p.Tree, filepath.FromSlash(p.Program))
	sp.Args = inv.Args
}

// checkTree has a server that runs from a pinned tree checked by tree
// (Choice.Tree) before each start, as the server label.
func checkTree(sp *Spec, label string, tree func(string) error) {
	if sp.Tree != "" && tree != nil {
		sp.PinnedTree = func() error { return tree(label) }
	}
}

// common fills in what stdio and remote specs share: the timeout and
// the declared settings' values.
func common(e *disclosure.Extension, ent entry, sp *Spec) {
	sp.Settings = map[string]string{}
	if ent.Timeout != nil && *ent.Timeout > 0 {
		sp.Timeout = time.Duration(*ent.Timeout * float64(time.Millisecond))
	}
	for _, s := range e.Ext.Manifest.Settings {
		if v, ok := e.Settings[s.EnvVar]; ok {
			sp.Settings[s.EnvVar] = v
		}
	}
}

// remoteSpec is the spec of a remote entry: httpUrl before url, as
// Gemini CLI 0.61 takes them (createUrlTransport in its mcp-client.js):
// httpUrl is Streamable HTTP, url with type "sse" SSE, url with type
// "http" Streamable HTTP, url alone Streamable HTTP then SSE.
func remoteSpec(e *disclosure.Extension, name string, ent entry) (Spec, string) {
	sp := Spec{Extension: e.Ext.Manifest.Name, Server: name, Dir: e.Ext.Dir, Headers: ent.Headers}
	switch {
	case ent.HTTPURL != "":
		sp.URL, sp.Transport = ent.HTTPURL, TransportHTTP
	case ent.Type == TransportHTTP || ent.Type == TransportSSE:
		sp.URL, sp.Transport = ent.URL, ent.Type
	case ent.Type != "":
		return Spec{}, fmt.Sprintf("its type %q is neither %q nor %q", Printable(ent.Type), TransportHTTP, TransportSSE)
	default:
		sp.URL = ent.URL
	}
	if u, err := url.Parse(sp.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Spec{}, fmt.Sprintf("its URL %s is not an http or https URL", Printable(sp.URL))
	}
	common(e, ent, &sp)
	pluginServer(e, name, &sp)
	return sp, ""
}

var varRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
})

// expand substitutes $NAME and ${NAME} in v with the values of vars; a
// name not in vars becomes "" (Gemini CLI would take it from the
// person's environment, which a sandboxed server does not get).
func expand(v string, vars map[string]string) string {
	if !strings.Contains(v, "$") {
		return v
	}
	return varRef().ReplaceAllStringFunc(v, func(ref string) string {
		n := strings.Trim(ref, "${}")
		return vars[n]
	})
}

// DataRoot is the folder of the servers' private data folders,
// ~/.local/share/gemkit/extension-data: inside ~/.local/share/gemkit,
// which is closed to every sandboxed process (permission.ClosedPaths)
// but its own extension's servers. It does not follow XDG_DATA_HOME,
// which the closed folders do not follow either.
func DataRoot(env map[string]string) (string, error) {
	home := env["HOME"]
	if !filepath.IsAbs(home) {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder for the extensions' data folders: %w", err)
		}
		home = h
	}
	return gemkitdir.ExtensionData(home), nil
}

// Printable is s fit to print in words a person reads.
func Printable(s string) string { return extension.Printable(s) }

// Check says whether the stdio server called server of ext would start
// in the sandbox for the workspace ws, with what its manifest grants,
// the person's widening w and the credentials files agreed to (handed),
// as far as can be told without starting it: its entry read, its
// command found where gemkit looks for it (for a package runner's line,
// the program of its package pinned in pins), its profile built (its
// runtime, its data folder, its credentials still as agreed); nil for a
// remote server, whose start is a connection. The switch asks it before
// it says a server is served.
func Check(ext *extension.Extension, server string, w extension.Widening, handed []permission.HandedFile, pins map[string]extension.Pin, ws string, environ []string) error {
	raw, ok := ext.Manifest.MCPServers[server]
	if !ok {
		return fmt.Errorf("%s has no MCP server %s", Printable(ext.Manifest.Name), Printable(server))
	}
	sp, why := specOf(&disclosure.Extension{Name: ext.Manifest.Name, Ext: ext}, server, raw)
	if why != "" {
		return errors.New(why)
	}
	if sp.Remote() {
		return nil
	}
	// A package runner's server runs its pinned package's program, not
	// the runner (`bunx` need not be installed for a package gemkit
	// runs with node): checked as it starts. One without a pin for what
	// it asks is told by the pins' own checks.
	pinned(&sp, server, pins)
	if sp.Unpinned != "" {
		return nil
	}
	sp.Widening, sp.Handed = extension.ServerGrant(ext.Manifest).Union(w), handed
	root, err := DataRoot(envmap.Of(environ))
	if err != nil {
		return err
	}
	folders, err := extension.EnvFolders(envmap.Of(environ))
	if err != nil {
		return fmt.Errorf("listing the extensions, whose folders a server finds read-only: %w", err)
	}
	_, err = BuildProfile(sp, ws, root, environ, folders)
	return err
}
