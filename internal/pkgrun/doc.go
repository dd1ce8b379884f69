// Package pkgrun pins the packages that an extension's MCP server
// fetches at each start through a package runner (internal/runnerline
// reads the line). A manifest such as
// `"command": "npx", "args": ["-y", "@upstash/context7-mcp"]` makes
// Gemini CLI fetch the newest version of the package from the registry
// at every start, with the person's rights, and run whatever bytes came:
// nobody agreed to them. gemkit instead installs the package once, when
// the person switches the extension to its sandbox or consents, at an
// exact version, with lifecycle scripts off, inside the sandbox with no
// network but the registry of the person's npm configuration; the tree it
// installed (its lock, and the bytes that run) is bound into the consent,
// and the server then runs from that tree, read-only, with no registry
// access. A new version is taken only by `gemkit extensions update` and a
// new consent.
//
// npm's use lives behind this package: Installer.Install installs what a
// line names, and the lock of a tree says what changed from another
// (Diff).
package pkgrun
