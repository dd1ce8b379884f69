package extension

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

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

// agentFront is the part of an agent's front matter gemkit reads.
type agentFront struct {
	Name       string                    `yaml:"name"`
	Kind       string                    `yaml:"kind"`
	MCPServers map[string]map[string]any `yaml:"mcp_servers"`
}

// agentFrontMatter is Gemini CLI's FRONTMATTER_REGEX (skillLoader.ts),
// which agentLoader.ts uses too.
var agentFrontMatter = frontMatter

// AgentServers are the MCP servers the extension's sub-agents declare,
// sorted by agent and server, for the workspace ws (${workspacePath}).
// It reads the agent files Gemini CLI reads (agents/*.md, regular
// files, not starting with "_") through the extension's Root; a file
// whose front matter does not parse declares none (Gemini CLI loads no
// agent from it either), and one that names servers but not itself is
// named by its file.
func (e *Extension) AgentServers(ws string) ([]AgentServer, error) {
	root, err := e.Root()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return agentServers(root, Variables{ExtensionPath: e.Dir, WorkspacePath: ws})
}

func agentServers(root *fsutil.Root, vars Variables) ([]AgentServer, error) {
	entries, _ := root.ReadDir("agents")
	var out []AgentServer
	for _, d := range entries {
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), "_") || !strings.HasSuffix(d.Name(), ".md") {
			continue
		}
		rel := filepath.Join("agents", d.Name())
		data, err := root.ReadFile(rel, MaxSkillBytes)
		if err != nil {
			continue
		}
		m := agentFrontMatter().FindSubmatch(data)
		if m == nil {
			continue
		}
		var front agentFront
		if yaml.Unmarshal(m[1], &front) != nil || front.Kind == "remote" || len(front.MCPServers) == 0 {
			continue
		}
		agent := front.Name
		if agent == "" {
			agent = strings.TrimSuffix(d.Name(), ".md")
		}
		for name, def := range front.MCPServers {
			if def == nil {
				continue
			}
			entry := map[string]any{}
			for k, v := range def {
				if k == "http_url" {
					k = "httpUrl"
				}
				entry[k] = v
			}
			raw, err := json.Marshal(entry)
			if err != nil {
				return nil, fmt.Errorf("%s: the mcp_servers entry %s: %w", rel, name, err)
			}
			if raw, err = vars.ExpandJSON(raw); err != nil {
				return nil, fmt.Errorf("%s: the mcp_servers entry %s: %w", rel, name, err)
			}
			out = append(out, AgentServer{Agent: agent, File: root.Path(rel), Server: name, Def: raw})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Server < out[j].Server
	})
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
