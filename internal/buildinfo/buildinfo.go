// Package buildinfo says which gemkit is running, the same way for every
// part that reports it (--version, the companion's serverInfo, the client's
// clientInfo, gemkit mcp), so that a person compares one string.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Version is the module version of the running binary when it was built
// from a published version; otherwise, as for a clone built with go build
// or go install ./cmd/gemkit, "devel" with the VCS revision Go recorded
// (the first 12 hex digits, "-dirty" when the tree had changes), or
// "devel" alone when the build recorded none.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(bi)
})

func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel-" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}
