// Package pkgrun pins the packages that an extension's MCP server
// fetches at each start through a package runner (internal/runnerline
// reads the line). A manifest such as
// `"command": "npx", "args": ["-y", "@upstash/context7-mcp"]` makes
// Gemini CLI fetch the newest version of the package from the registry
// at every start, with the person's rights, and run whatever bytes came:
// nobody agreed to them. gemkit instead installs the package once, when
// the person switches the extension to its sandbox or consents, at an
// exact version, with lifecycle scripts off, inside the sandbox with no
// network but the registry of the person's npm configuration, reached
// as their machine reaches it; the tree it
// installed (its lock, and the bytes that run) is bound into the consent,
// and the server then runs from that tree, read-only, with no registry
// access. A new version is taken only by `gemkit extensions update` and a
// new consent.
//
// npm's use lives behind this package: Installer.Install installs what a
// line names, and the lock of a tree says what changed from another
// (Diff); Verify says whether a pinned tree is still the one pinned.
//
// # What an install's package code can reach
//
// npm itself is trusted to fetch and unpack; the packages' code (their
// install scripts, run only when the person allowed them) is not, and
// it is kept from the two things it could turn against the person:
//
//   - Another extension's pins. Each extension's installs have an npm
//     cache of their own, in its folder of trees (cacheName), and no
//     install script ever runs with a cache it can write. The red team
//     showed why a shared cache is not enough to trust: a script that
//     could write it rewrote a cached packument (npm's own cacache,
//     the registry's ETag kept) to name its own tarball and integrity,
//     and the registry's 304 to npm's revalidation made every later
//     install of that package, any extension's, take those bytes, with
//     an integrity that matched them. Checking every pinned file
//     against the registry instead would mean fetching every packument
//     again with no cache, at each install, and trusting nothing npm
//     unpacked: a cache per extension costs only what two extensions
//     share fetched twice, and keeps what one extension's install did
//     in that extension's folder, which uninstall removes. The cache
//     all extensions shared before (Root's .npm-cache) is removed at
//     the next install.
//   - The person's registry credentials. npm fetches with the
//     configuration gemkit writes from the person's (tokens included)
//     and --ignore-scripts; only then, when the person allowed them,
//     the scripts run (`npm rebuild`) in a second sandbox: no network
//     at all (so no publish, with a token or without), no configuration
//     of the person's, an empty cache in its own temporary folder, and
//     nothing to write but the tree. The configuration's folder is
//     removed before.
//
// # Which version
//
// What the person's npx would run on the node that will run it
// (engine.go): npm runs with the first node on their PATH, the server's
// interpreter, and is asked for the package as the line names it, so
// that npm's own rule picks (a bare name is the range *, for which the
// latest tag's version is taken only when its engines fit). gemkit adds
// the words: which version, why not the latest (Engine), and a warning
// when the newest needs another runtime.
//
// # How an install reaches and trusts the registry
//
// As the person's own npx would (reach.go): the certificates node
// trusts through NODE_EXTRA_CA_CERTS, copied into the configuration's
// folder, and npm's cafile, ca and strict-ssl (which replace node's
// authorities, NODE_EXTRA_CA_CERTS's among them, as for npx); and the
// proxy npm would take for the registry (https-proxy, proxy, then
// HTTPS_PROXY and the others as @npmcli/agent reads them, unless
// noproxy or NO_PROXY names it). npm still reaches only the sandbox's
// proxy, which reaches the registry through the person's (an http://
// one), asking it for the registries alone, with the credentials of its
// URL, which npm never sees. The install names each of these settings
// (Tree.Network); they are the install's only, gone with its
// configuration's folder: the server that runs from the tree gets none.
//
// What an install writes is bounded while npm writes (bound.go), and a
// tree that holds a link out of it, or an entry that is neither a file,
// a folder nor a link, is refused (inspect): nothing of it is kept.
package pkgrun
