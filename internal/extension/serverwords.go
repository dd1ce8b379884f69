package extension

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
)

// The words a person reads about an extension's MCP servers and hooks
// before agreeing to it: how each is reached, what it can do in gemkit's
// sandbox with what they allowed, and where a remote one connects.
// ConsentTextWith puts them under the extension's permissions.

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
	if err := agentread.Unmarshal(raw, &def, true); err != nil {
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

// RemoteServerWords say how gemkit mcp reaches a switched extension's
// remote server: as Gemini CLI would, and not sandboxed.
const RemoteServerWords = "it runs elsewhere, so gemkit does not sandbox it: gemkit mcp connects to it from your computer as Gemini CLI would, sending the manifest's headers with only the extension's declared settings in them (none of your environment variables), but signs in to nothing: a server that asks for OAuth fails to connect"

// ServerLines say, for each MCP server of m, where it runs and what it
// can do there, given the person's choice c: the lines of the consent
// text and of describe.
func ServerLines(m *Manifest, c ServerChoice) []string {
	return serverLines(m, c, RunnerRefused(m, nil))
}

// RunnerRefused are the labels of m's servers and its agents' servers
// (agent/server) whose package runner's line gemkit cannot run
// (RunnerRefusal): while one is left, the switch refuses the whole
// extension, so no line may promise a sandbox after a switch.
func RunnerRefused(m *Manifest, agents []AgentServer) []string {
	var out []string
	for _, name := range sortedKeys(m.MCPServers) {
		if RunnerRefusal(m.MCPServers[name]) != "" {
			out = append(out, name)
		}
	}
	for _, a := range agents {
		if RunnerRefusal(a.Def) != "" {
			out = append(out, a.Agent+"/"+a.Server)
		}
	}
	return out
}

// PluginServerWords begin the line of an Agent Plugins plugin's local
// server, before what it can do.
const PluginServerWords = "an Agent Plugins server: Gemini CLI never starts it; gemkit mcp runs it in gemkit's sandbox, where it can "

// notSwitchable says of a local server that Gemini CLI keeps it,
// because the servers in blocked keep the switch from being made.
func notSwitchable(blocked []string, when string) string {
	return "Gemini CLI starts it unconfined" + when + ", with your rights and environment; gemkit cannot switch the extension's servers to its sandbox while " + strings.Join(blocked, ", ") + " cannot run there (said on its line)"
}

func serverLines(m *Manifest, c ServerChoice, blocked []string) []string {
	var lines []string
	switchable := len(SandboxedServers(m)) > 0 && len(blocked) == 0
	for _, name := range sortedKeys(m.MCPServers) {
		def := m.MCPServers[name]
		where := "a remote server (or none), not sandboxed by gemkit"
		var d struct {
			Command string `json:"command"`
		}
		if agentread.Unmarshal(def, &d, true) == nil && d.Command != "" {
			where = "gemkit itself, which runs the extension's tools in their own sandbox"
		}
		switch {
		case m.AgentPlugin && SandboxedServer(def):
			where = PluginServerWords + ServerProfileWordsOf(m, c.Widening) + " (its PLUGIN_DATA)"
		case m.AgentPlugin:
			where = "a remote server of an Agent Plugins plugin: Gemini CLI never connects to it; " + RemoteServerWords + "; " + remoteReach(m.Name, def)
		case ContainerServer(def):
			where = ContainerWords(ContainerCommand(def))
		case RunnerRefusal(def) != "" && c.Switched:
			where = "switched to gemkit, but gemkit mcp does not start it: " + RunnerRefusal(def) + "; to have it run again, give it back to Gemini CLI (gemkit extensions sandbox " + m.Name + " --off)"
		case RunnerRefusal(def) != "":
			where = "Gemini CLI starts it unconfined, with your rights and environment; gemkit cannot run it in its sandbox, and cannot switch the extension to gemkit while this line stays: " + RunnerRefusal(def)
		case SandboxedServer(def) && !c.Switched && len(blocked) > 0:
			where = notSwitchable(blocked, "")
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
	return agentServerLines(name, agents, c, RunnerRefused(&Manifest{}, agents))
}

func agentServerLines(name string, agents []AgentServer, c ServerChoice, blocked []string) []string {
	var lines []string
	for _, s := range agents {
		where := "a remote server (or none), not sandboxed by gemkit"
		switch {
		case RunnerRefusal(s.Def) != "" && c.Switched:
			where = "switched to gemkit, but gemkit mcp does not start it: " + RunnerRefusal(s.Def) + "; to have it run again, give it back to Gemini CLI (gemkit extensions sandbox " + name + " --off)"
		case RunnerRefusal(s.Def) != "":
			where = "Gemini CLI starts it unconfined when the agent runs, with your rights and environment; gemkit cannot run it in its sandbox, and cannot switch the extension to gemkit while this line stays: " + RunnerRefusal(s.Def)
		case SandboxedServer(s.Def) && !c.Switched && len(blocked) > 0:
			where = notSwitchable(blocked, " when the agent runs")
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
// runs and where, given the person's choice c; dir and settings are the
// extension's folder and settings, which tell a hook the switch cannot
// take (CommandHook.DisableKey).
func HookLines(name, dir string, settings []Setting, hooks []CommandHook, c ServerChoice) []string {
	var lines []string
	for _, h := range hooks {
		when := h.Event
		if h.Matcher != "" && h.Matcher != "*" {
			when += " of " + h.Matcher
		}
		where := "Gemini CLI runs it unconfined, through your shell with your rights and environment (its own sandbox never applies to hooks), until you switch the extension to gemkit (gemkit extensions sandbox " + name + "); then gemkit runs it in its sandbox, where it can " + HookProfileWords
		if key, why := h.DisableKey(dir, settings); key == "" {
			where = "Gemini CLI runs it unconfined, through your shell with your rights and environment (its own sandbox never applies to hooks), even once the extension is switched to gemkit: the switch cannot take it (" + why + ")"
		}
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

// remoteReach says where gemkit mcp connects for the remote server def:
// its origin, and only there.
func remoteReach(name string, def json.RawMessage) string {
	var d struct {
		URL     string `json:"url"`
		HTTPURL string `json:"httpUrl"`
	}
	_ = agentread.Unmarshal(def, &d, true)
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
