package permission

import (
	"path/filepath"
	"strings"
)

// Where is what a tool's policy is resolved against on this machine: the
// folders of the run, where gemkit's secrets live, and what the other
// installed extensions may write.
type Where struct {
	// Workspace and Home are absolute.
	Workspace, Home string
	// Closed says where the secrets of gemkit and of the programs it
	// serves live (Home is taken from above).
	Closed ClosedInputs
	// OwnFolder is the extension's own folder: it stays readable to its
	// tools even where it is the target of a symlink in
	// ~/.gemini/extensions.
	OwnFolder string
	// OtherWrites are the write scopes of the installed extensions.
	OtherWrites []Access
}

// Resolved is one tool's whole policy on this machine, computed once
// (Resolve): what it declared, and what gemkit adds whatever it declared.
// The runner and the sandbox only read it; describe and the consent text
// name the same rules.
type Resolved struct {
	// Policy is what the manifest declares.
	Policy
	Workspace, Home string
	// Closed are the folders no tool may read or write (ClosedPaths).
	Closed []string
	// Guarded are the paths inside the write scope that stay read-only
	// (GuardedPaths).
	Guarded []Guarded
	// Untrusted are the folders no program is started from, not even to
	// ask it for an interpreter (Untrusted, SearchPath).
	Untrusted []string

	closed ClosedInputs
}

// Resolve resolves the declared policy p for a run described by w.
func Resolve(p Policy, w Where) Resolved {
	w.Closed.Home = w.Home
	r := Resolved{Policy: p, Workspace: w.Workspace, Home: w.Home, closed: w.Closed}
	own := real(w.OwnFolder)
	for _, d := range ClosedPaths(w.Closed) {
		if w.OwnFolder == "" || d != own {
			r.Closed = append(r.Closed, d)
		}
	}
	r.Guarded = GuardedPaths(p.Write, w.Workspace, w.Home)
	r.Untrusted = Untrusted(w.Workspace, w.Home, append([]Access{p.Write}, w.OtherWrites...))
	return r
}

// OwnServer reports whether a loopback port is one of gemkit's own
// servers at the moment of asking (OwnServerPort).
func (r Resolved) OwnServer(port int) bool { return OwnServerPort(r.closed, port) }

// SearchPath is the part of a PATH value the run may search
// (SearchPath), joined again.
func (r Resolved) SearchPath(path string) string {
	kept, _ := SearchPath(path, r.Untrusted)
	return strings.Join(kept, string(filepath.ListSeparator))
}
