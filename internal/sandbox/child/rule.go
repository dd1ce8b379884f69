// Package child is the sandbox child: the re-executed copy of gemkit that
// sets up Landlock, seccomp, resource limits and the network namespace's
// loopback before it execs a tool. It is its own package, importing only
// the standard library and x/sys/unix, so that its init takes over the
// process before gemkit's heavier dependencies initialize; the launcher
// in package sandbox starts it.
package child

// PathRule grants access beneath one path. Rules only ever add access;
// everything not beneath a rule is denied.
type PathRule struct {
	Path  string `json:"path"`
	Write bool   `json:"write,omitempty"` // read, write, create, remove; else read and execute
	// ListOnly grants listing directories beneath the path, not reading
	// files: the ancestors of a protected folder inside a readable scope.
	ListOnly bool   `json:"listOnly,omitempty"`
	File     bool   `json:"file,omitempty"` // the path is a single file, not a directory
	Why      string `json:"why,omitempty"`  // the reason, for describe and debugging
	// Optional rules are skipped when the path has vanished by the time
	// the sandbox is built (a sibling split out of a writable scope that
	// another program removed); skipping a rule only takes access away.
	Optional bool `json:"optional,omitempty"`
}
