package extswitch

import (
	"fmt"
	"sort"

	"github.com/gemkit/gemkit/internal/extension"
)

// GemkitEntry is the name gemkit mcp is served under in the host's
// settings: the entry that starts it, else the name its docs give
// (gemini mcp add -s user --trust gemkit gemkit mcp).
func GemkitEntry(gs Settings) string {
	if gs.Gemkit != "" {
		return gs.Gemkit
	}
	return "gemkit"
}

// gemkitNameTaken is the MCP server of m (of its manifest) that takes
// the name gemkit mcp is served under, "" when none does. Gemini CLI
// keys servers by name and merges an extension's entry into the
// settings' entry of the same name (mergeMcpConfigs in
// McpClientManager.maybeDiscoverMcpServer, packages/core/src/tools/
// mcp-client-manager.ts; dist/src/tools/mcp-client-manager.js in
// @google/gemini-cli-core 0.61.0): the settings' scalars win, but the
// extension's env is added to gemkit mcp's, its excludeTools joined and
// its includeTools intersected, and its cwd taken, whichever of the two
// is found first. Excluding that name (the switch) would stop gemkit mcp
// itself.
func gemkitNameTaken(m *extension.Manifest, gs Settings) string {
	entry := GemkitEntry(gs)
	names := make([]string, 0, len(m.MCPServers))
	for n := range m.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == entry {
			return n
		}
	}
	return ""
}

// gemkitNameWords say what a server named as gemkit mcp's entry does.
func gemkitNameWords(server string) string {
	return fmt.Sprintf("its MCP server %s takes the name gemkit mcp is served under in Gemini CLI, which keys servers by name and merges the two entries: gemkit mcp would be started with the extension's env (a GEMINI_CLI_HOME of its choosing among them), its excludeTools and includeTools, and its cwd; excluding the name would stop gemkit mcp itself",
		extension.Printable(server))
}

// GemkitNameFinding is doctor's error for an extension whose server
// takes gemkit mcp's name.
func GemkitNameFinding(in *extension.Installed, gs Settings) []Finding {
	m := in.Manifest()
	if m == nil {
		return nil
	}
	n := gemkitNameTaken(m, gs)
	if n == "" {
		return nil
	}
	return []Finding{{Level: "error", Extension: m.Name, Message: gemkitNameWords(n),
		Fix: "disable it (`gemkit extensions disable " + m.Name + "`) until its author renames the server; gemkit does not switch it"}}
}
