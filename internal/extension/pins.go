package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Pin is the package a package-runner server (`npx -y pkg`, npm exec,
// pnpm dlx, bunx, yarn dlx) runs, as gemkit resolved and installed it
// when the person switched the extension or agreed to it
// (internal/pkgrun): the version, the tree it lies in and what binds
// that tree. gemkit mcp runs the server from the tree, read-only, with
// no registry access; the pin is part of the consent hash, so a new
// version runs only after `gemkit extensions update` and a new consent.
type Pin struct {
	// Runner and Request are the runner and the package as the manifest
	// names them ("npx", "@upstash/context7-mcp" or "pkg@1.2.3"): a pin
	// holds only while the manifest still asks for the same.
	Runner  string `json:"runner"`
	Request string `json:"request"`
	// Package and Version are what was installed; Newest that the
	// manifest asked for no version.
	Package string `json:"package"`
	Version string `json:"version"`
	Newest  bool   `json:"newest,omitempty"`
	// Choice says why that version, when the node that starts the
	// server made npm take another than the latest ("the newest that
	// runs on Node 20.20.2; 3.26.0, the latest, needs node >=22").
	Choice string `json:"choice,omitempty"`
	// Integrity is the package's own (the registry's SHA-512).
	Integrity string `json:"integrity"`
	// Tree is the tree's folder, Program the slash path in it of the
	// program the server runs.
	Tree    string `json:"tree"`
	Program string `json:"program"`
	// Lock is the SHA-256 of the tree's package-lock.json (every
	// package's version and integrity); Digest the ContentDigest of the
	// tree, the bytes that run, checked at each start.
	Lock   string `json:"lock"`
	Digest string `json:"digest"`
	// Registry is where it came from; Packages, Files and Bytes count
	// the tree.
	Registry string `json:"registry"`
	Packages int    `json:"packages"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	// ScriptsRun: the packages' install scripts ran, in the install's
	// sandbox, as the person allowed; ScriptsNotRun are the packages
	// that have some, which did not.
	ScriptsRun    bool     `json:"scriptsRun,omitempty"`
	ScriptsNotRun []string `json:"scriptsNotRun,omitempty"`
}

// Words say what p runs, for the consent text and describe.
func (p Pin) Words() string {
	detail := fmt.Sprintf("%d packages, %s", p.Packages, sizeWords(p.Bytes))
	if p.Packages == 1 {
		detail = "1 package, " + sizeWords(p.Bytes)
	}
	switch {
	case p.Choice != "":
		detail = "when pinned, " + p.Choice + "; " + detail
	case p.Newest:
		detail = "the newest when pinned; " + detail
	}
	s := fmt.Sprintf("pinned: it runs %s %s (%s) from the tree gemkit installed from %s (%s), read-only, with no registry access; a new version runs only after `gemkit extensions update` and your consent",
		p.Package, p.Version, detail, p.Registry, p.Tree)
	switch {
	case p.ScriptsRun:
		s += "; its install scripts ran, in the install's sandbox, as you allowed"
	case len(p.ScriptsNotRun) > 0:
		s += "; the install scripts of " + strings.Join(p.ScriptsNotRun, ", ") + " did not run"
	}
	return s
}

// sizeWords is n bytes in words.
func sizeWords(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// pinsHash binds c's pins to h, the hash of the permissions and the
// widenings: h itself when nothing is pinned, so that every consent
// recorded before pins existed still holds.
func (c ServerChoice) pinsHash(h string) string {
	if len(c.Packages) == 0 && !c.InstallScripts {
		return h
	}
	// A map marshals with its keys sorted: the same pins, the same hash.
	b, _ := json.Marshal(struct {
		Packages       map[string]Pin `json:"packages"`
		InstallScripts bool           `json:"installScripts"`
	}{c.Packages, c.InstallScripts})
	sum := sha256.Sum256(append([]byte(h+"\x00packages\x00"), b...))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PinnedTrees are the trees c's pins run from, sorted.
func (c ServerChoice) PinnedTrees() []string {
	var out []string
	for _, p := range c.Packages {
		out = append(out, p.Tree)
	}
	sort.Strings(out)
	return out
}
