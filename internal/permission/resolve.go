package permission

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
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
	// ExtensionFolders are the folders of the installed extensions and
	// the sources of the linked ones (GuardInputs.ExtensionFolders).
	ExtensionFolders []string
	// Locator finds the running servers whose secrets are closed and
	// whose ports the proxy refuses, wherever their environment put
	// them; nil looks only at the places Closed names and the fixed ones.
	Locator *Locator
	// Getenv reads this process's environment for where git's own
	// configuration is (GuardInputs.Getenv).
	Getenv func(string) string
}

// Resolved is one tool's whole policy on this machine, computed once
// (Resolve): what it declared, and what gemkit adds whatever it declared.
// The runner and the sandbox only read it; describe and the consent text
// name the same rules.
type Resolved struct {
	// Policy is what the manifest declares.
	Policy
	Workspace, Home string
	// Closed are the folders and files no tool may read or write
	// (ClosedPaths), and the other programs' credentials but the kinds
	// the manifest names (CredentialPaths).
	Closed []string
	// Guarded are the paths inside the write scope that stay read-only
	// (ProtectedPaths).
	Guarded []Guarded
	// Untrusted are the folders no program is started from, not even to
	// ask it for an interpreter (Untrusted, SearchPath).
	Untrusted []string

	closed  ClosedInputs
	locator *Locator
}

// Resolve resolves the declared policy p for a run described by w.
//
// The running servers are looked for only when the tool may read or
// write files: with neither, no secret of theirs is in its reach (the
// proxy asks again for each connection, OwnServer).
func Resolve(p Policy, w Where) Resolved {
	w.Closed.Home = w.Home
	r := Resolved{Policy: p, Workspace: w.Workspace, Home: w.Home, closed: w.Closed, locator: w.Locator}
	if p.Read.Effective() != AccessNone || p.Write.Effective() != AccessNone {
		w.Closed.Writers = append(w.Closed.Writers, w.Locator.Writers()...)
	}
	own := fsutil.RealPath(w.OwnFolder)
	// The kinds of credentials the manifest names are reopened: their
	// paths, unless another kind closes the same path.
	reopened := map[string]bool{}
	if len(p.Credentials) > 0 {
		still := CredentialPaths(w.Closed, p.Credentials)
		for _, d := range OpenedCredentialPaths(w.Closed, p.Credentials) {
			reopened[d] = !slices.Contains(still, d)
		}
	}
	for _, d := range ClosedPaths(w.Closed) {
		if (w.OwnFolder == "" || d != own) && !reopened[d] {
			r.Closed = append(r.Closed, d)
		}
	}
	r.Guarded = ProtectedPaths(GuardInputs{Write: p.Write, Workspace: w.Workspace, Home: w.Home,
		Lifted: p.ProtectedWrites, ExtensionFolders: w.ExtensionFolders, Getenv: w.Getenv})
	r.Untrusted = Untrusted(w.Workspace, w.Home, append([]Access{p.Write}, w.OtherWrites...))
	return r
}

// OwnServer reports whether a loopback port is one of the servers gemkit
// serves or runs at the moment of asking (OwnServerPort), the servers
// running then included.
func (r Resolved) OwnServer(port int) bool {
	in := r.closed
	in.Writers = append(append([]Env(nil), in.Writers...), r.locator.Writers()...)
	return OwnServerPort(in, port)
}

// SearchPath is the part of a PATH value the run may search
// (SearchPath), joined again.
func (r Resolved) SearchPath(path string) string {
	kept, _ := SearchPath(path, r.Untrusted)
	return strings.Join(kept, string(filepath.ListSeparator))
}
