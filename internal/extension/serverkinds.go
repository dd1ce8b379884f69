package extension

import (
	"encoding/json"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/runnerline"
)

// What kind of MCP server a manifest's entry is, which decides who runs
// it: a stdio server gemkit can sandbox, a container engine's (left to
// Gemini CLI), or a remote one (connected to, at its URL's origin only).

// SandboxedServer reports whether gemkit mcp can run the MCP server def
// in its sandbox: a stdio server (a command) that is not gemkit itself.
// Gemini CLI's mcp.excluded names exactly these when the extension is
// switched to gemkit.
func SandboxedServer(def json.RawMessage) bool {
	var d struct {
		Command string `json:"command"`
	}
	if agentread.Unmarshal(def, &d, true) != nil || d.Command == "" || ContainerServer(def) {
		return false
	}
	return d.Command != "gemkit" && !strings.HasSuffix(d.Command, "/gemkit")
}

// RunnerRefusal says why gemkit mcp never starts the local server def,
// though gemkit sandboxes local servers: its command is a package
// runner's line that cannot be pinned, or one that fetches from PyPI
// (internal/runnerline). "" for any other server. The words a person
// reads before agreeing say it, where they would otherwise promise a
// sandbox the switch then refuses.
func RunnerRefusal(def json.RawMessage) string {
	var d struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	if !SandboxedServer(def) || agentread.Unmarshal(def, &d, true) != nil {
		return ""
	}
	in, ok, err := runnerline.Parse(d.Command, d.Args)
	switch {
	case !ok:
		return ""
	case err != nil:
		return err.Error()
	case in.Ecosystem == runnerline.PyPI:
		return (&runnerline.PyPIError{Invocation: in}).Error()
	}
	return ""
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
	return agentread.Unmarshal(def, &d, true) == nil && slices.Contains(ContainerEngines, filepath.Base(d.Command))
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
	agentread.Unmarshal(def, &d, true)
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
	return agentread.Unmarshal(def, &d, true) == nil && d.Command == "" && (d.URL != "" || d.HTTPURL != "")
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
