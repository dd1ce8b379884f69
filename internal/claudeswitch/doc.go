// Package claudeswitch switches a Claude Code plugin to gemkit's sandbox
// by converting it into two twins gemkit owns (docs/claude-code-plugins.md):
//
//   - the twin extension, in gemkit's plugin home TH
//     (gemkitdir.ClaudePluginHome): a copy of the plugin's folder as
//     consent saw it, read through fsutil.Root, with a gemini-extension.json
//     holding its MCP servers and a hooks/hooks.json holding its command
//     hooks, converted; the extension switch (internal/extswitch on
//     extension.OpenStore(TH)) then records consent, pins, widenings and
//     holds for it as for any extension, and `gemkit mcp --home TH --only X`
//     serves its servers in the sandbox;
//   - the twin plugin, in gemkit's directory marketplace TM
//     (gemkitdir.ClaudePluginMarketplace, named gemkit-sandbox), which
//     Claude Code loads in place of the original: the same name, so every
//     skill, agent and command keeps its name, with the consented bytes of
//     those, and hooks, LSP servers, monitors and one MCP server that are
//     all gemkit's runners.
//
// It also edits Claude Code's user settings (the original disabled, the
// twin enabled, the original's servers denied by name, the marketplace
// known), keeping the bytes it replaced so that the switch off restores
// them, and records the digest of the plugin's files at consent, so that
// a plugin Claude Code updated is held, with what changed, until the
// person agrees again. Variables are expanded as Claude Code 2.1.330
// expands them; whatever gemkit cannot convert exactly refuses the
// switch, in words.
package claudeswitch
