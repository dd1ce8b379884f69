package lspclient

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// LoadError is the server's report that it could not load the workspace,
// "" when it has made none. gopls (v0.23.0) publishes it, once its first
// load has failed and before any file is open, as an error of source "go
// list" on go.mod (or go.work), its words "packages.Load error: err: exit
// status 1: stderr: " and then the go command's ("go:
// github.com/cpuguy83/go-md2man/v2@v2.0.6: module lookup disabled by
// GOPROXY=off"); meanwhile it finds no declaration by name at all. The
// go command's words are what LoadError returns.
func (c *Client) LoadError() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var paths []string
	for p := range c.diags {
		if b := filepath.Base(p); b == "go.mod" || b == "go.work" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		for _, d := range c.diags[p].diags {
			if d.Severity == ide.SevError && d.Source == "go list" {
				return loadErrorText(d.Message)
			}
		}
	}
	return ""
}

// loadErrorText is the go command's words in gopls's load error.
func loadErrorText(msg string) string {
	msg = strings.TrimPrefix(msg, "packages.Load error: ")
	if _, rest, ok := strings.Cut(msg, "stderr: "); ok && strings.HasPrefix(msg, "err: ") {
		msg = rest
	}
	return strings.TrimSpace(msg)
}
