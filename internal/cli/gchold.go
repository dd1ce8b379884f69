package cli

import (
	"sync"
	"time"
)

// gcHoldFor is how long gemkit mcp holds its collector off (holdGC):
// its start, and the first start of an extension's server behind the
// client's first list, up to the server's exec (120 to 160 ms here with
// the two cores shared by some twenty runnable processes, far less on a
// quiet machine); after it the collector runs as before, so that a
// gemkit mcp measured or left idle after its start does not keep what
// the start left.
const gcHoldFor = time.Second

// startHeapLimit bounds the memory of a process whose collector holdGC
// holds off: the runtime collects anyway as its memory nears it.
const startHeapLimit = 128 << 20

// holdGC holds off the garbage collector (GOGC=off, bounded by
// startHeapLimit through the memory limit) until the returned func is
// called, once or more; that func puts the collector back as it was.
//
// gemkit mcp's start allocates a few MB that mostly die at once (the
// store's manifests, the tool list encoded, a consent check's walk of an
// extension's node_modules and its digest cache), from the runtime's
// first heap goal of 4 MB: three collections in the first 110 ms of a
// cold start of server-everything (GODEBUG=gctrace=1), their mark
// assists charged to the consent check's walk, which the sandboxed
// server's exec waits for, and each from 2 to tens of milliseconds of
// CPU on the machine's two cores at load. A person who set GOGC or
// GOMEMLIMIT keeps their setting; so does a process that is not
// gemkit's own (Run, tests: the hooks are nil).
func (a *app) holdGC() (end func()) {
	if a.setGCPercent == nil || a.setMemoryLimit == nil || a.tunedGC() {
		return func() {}
	}
	limit := a.setMemoryLimit(startHeapLimit)
	percent := a.setGCPercent(-1)
	var once sync.Once
	return func() {
		once.Do(func() {
			a.setGCPercent(percent)
			a.setMemoryLimit(limit)
		})
	}
}

// tunedGC reports whether the person set the collector's target or
// memory limit in the environment.
func (a *app) tunedGC() bool {
	if a.lookupGCEnv == nil {
		return false
	}
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, ok := a.lookupGCEnv(k); ok {
			return true
		}
	}
	return false
}
