package extension

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// AgentServer is an MCP server an extension's sub-agent declares in the
// front matter of its agents/NAME.md (mcp_servers), which Gemini CLI
// 0.61 starts when the sub-agent runs: LocalAgentExecutor.create
// (packages/core/src/agents/local-executor.ts) hands each to the same
// McpClientManager.maybeDiscoverMcpServer as the manifest's, into the
// sub-agent's own tool registry, and mcp.excluded stops it as it stops
// the manifest's (the check is by name). agentLoader.ts reads the
// entry: command, args, env, cwd, url, http_url, headers, tcp, type,
// timeout, trust; the extension's loader replaces ${extensionPath},
// ${workspacePath}, ${/} and ${pathSeparator} in its strings
// (recursivelyHydrateStrings, as for the manifest).
type AgentServer struct {
	// Agent is the sub-agent's name (its front matter's name), File
	// the agents/ file that declares it.
	Agent, File string
	// Server is the entry's name, the key of mcp_servers.
	Server string
	// Def is the entry in the manifest's mcpServers form (http_url
	// becomes httpUrl), variables replaced.
	Def json.RawMessage
}

// AgentServers are the MCP servers the extension's sub-agents declare,
// sorted by agent and server, for the workspace ws (${workspacePath}).
// It reads the agent files Gemini CLI reads (agents/*.md, regular
// files, not starting with "_") through the extension's Root; a file
// whose front matter does not parse declares none (Gemini CLI loads no
// agent from it either), and one that names servers but not itself is
// named by its file.
func (e *Extension) AgentServers(ws string) ([]AgentServer, error) {
	if e.IsPlugin() {
		return nil, nil
	}
	root, err := e.Root()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return agentServers(root, Variables{ExtensionPath: e.Dir, WorkspacePath: ws})
}

// maxAgentBytes bounds an agent file gemkit reads. Gemini CLI reads one
// of any size; past this bound the switch holds the extension rather
// than leave out the servers it may declare.
const maxAgentBytes = 64 << 20

func agentServers(root *fsutil.Root, vars Variables) ([]AgentServer, error) {
	entries, _ := root.ReadDir("agents")
	var out []AgentServer
	for _, d := range entries {
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), "_") || !strings.HasSuffix(d.Name(), ".md") {
			continue
		}
		rel := filepath.Join("agents", d.Name())
		servers, err := agentFileServers(root, rel, vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		out = append(out, servers...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Server < out[j].Server
	})
	return out, nil
}

// agentFileServers are the servers the agent file rel declares, read as
// agentLoader.ts reads it: its front matter (FRONTMATTER_REGEX) through
// js-yaml (agentread.ParseYAML). A file Gemini CLI loads no agent from
// declares none; one gemkit cannot read as Gemini CLI does, or larger
// than it reads, is an agentread.Unreadable error. Every entry of an
// mcp_servers object counts, whether or not the rest of the front
// matter passes Gemini CLI's schema: what the switch takes is then
// never less than what Gemini CLI may start.
func agentFileServers(root *fsutil.Root, rel string, vars Variables) ([]AgentServer, error) {
	data, err := root.ReadFile(rel, maxAgentBytes)
	if errors.Is(err, fsutil.ErrTooLarge) {
		return nil, &agentread.Unreadable{Why: fmt.Sprintf("it is larger than the %d MiB gemkit reads, and Gemini CLI reads it whole", maxAgentBytes>>20)}
	}
	if err != nil {
		return nil, nil
	}
	m := frontMatter().FindSubmatch(data)
	if m == nil {
		return nil, nil
	}
	front, err := agentread.ParseYAML(m[1])
	if agentread.IsUnreadable(err) {
		// A key is spelt by the text's own letters unless an escape
		// (a backslash, in a double-quoted key) spells it: without
		// either, no reading of it has servers.
		if !bytes.Contains(m[1], []byte("mcp_servers")) && !bytes.ContainsRune(m[1], '\\') {
			return nil, nil
		}
		return nil, fmt.Errorf("its front matter: %w", err)
	}
	if err != nil || !front.IsObject() {
		return nil, nil
	}
	if kind, _ := member(front, "kind").Str(); kind == "remote" {
		return nil, nil
	}
	servers := member(front, "mcp_servers")
	agent, _ := member(front, "name").Str()
	if agent == "" {
		agent = strings.TrimSuffix(filepath.Base(rel), ".md")
	}
	var out []AgentServer
	for _, name := range servers.Keys() {
		def := member(servers, name)
		if agentread.DroppedKey(name) || !def.IsObject() {
			continue
		}
		entry := map[string]any{}
		for _, k := range def.Keys() {
			if agentread.DroppedKey(k) {
				continue
			}
			v, _ := def.Get(k)
			if k == "http_url" {
				k = "httpUrl"
			}
			entry[k] = v.Interface()
		}
		raw, err := json.Marshal(entry)
		if err != nil {
			return nil, fmt.Errorf("the mcp_servers entry %s: %w", name, err)
		}
		if raw, err = vars.ExpandJSON(raw); err != nil {
			return nil, fmt.Errorf("the mcp_servers entry %s: %w", name, err)
		}
		out = append(out, AgentServer{Agent: agent, File: root.Path(rel), Server: name, Def: raw})
	}
	return out, nil
}

// SwitchedAgentServers are the names of the agents' servers the switch
// takes from Gemini CLI, as SwitchedServers names the manifest's: the
// stdio ones (not gemkit itself) and the remote ones.
func SwitchedAgentServers(servers []AgentServer) []string {
	var out []string
	for _, s := range servers {
		if (SandboxedServer(s.Def) || RemoteServer(s.Def)) && !contains(out, s.Server) {
			out = append(out, s.Server)
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
