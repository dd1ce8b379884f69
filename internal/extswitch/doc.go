// Package extswitch is the switch: an extension's MCP servers, its
// agents' servers and its command hooks taken from the agent that loads
// it (its host) into gemkit's sandbox, where `gemkit mcp` serves them,
// and given back. It keeps what the switch did (which switched
// extensions need each name it wrote into the host's settings), holds a
// switched extension whose files changed in the host until the person
// agrees again, pins the packages its package-runner servers fetch, says
// where each part of an extension that runs code runs, finds what an
// uninstall by the host left behind, and lists a switched server as
// gemkit mcp would before saying it is served.
//
// It has two seams. The host (Host) is the agent whose settings the
// switch changes: Gemini CLI today (GeminiCLI: mcp.excluded,
// hooksConfig.disabled and gemkit's hooks in its settings file, its
// extension enablement for a hold); Claude Code's deniedMcpServers and
// enabledPlugins fit the same interface. The ecosystem (Ecosystem) is a
// package runner's registry: npm's today (NPM, internal/pkgrun); PyPI's
// uvx and pipx run fit the same interface, and are refused until then.
//
// It says nothing on a terminal: it returns what it did (structured
// results), its refusals as errors (Refused), and doctor's findings with
// their fix; internal/cli says them. It imports neither internal/cli nor
// cobra.
package extswitch
