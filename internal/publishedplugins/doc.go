// Package publishedplugins holds published Claude Code plugins that
// carry MCP servers or hooks, vendored unchanged in
// testdata/claude-plugins-official (its README names each plugin's
// repository, path, commit and licence), and the tests that install
// each with the real Claude Code 2.1.330 and show its server answering
// or its hook running: the plugins the switch of issue 74 is proven
// on, bare first, then switched.
package publishedplugins
