// Package permission holds what an extension's tools may reach, apart from
// the manifest that declares it: filesystem scopes (Access), network hosts
// (Host, ParseHost) and the Policy a sandbox enforces. Both the extension
// package (which reads manifests and asks for consent) and the sandbox
// (which enforces) use it, so the sandbox takes a policy, not a manifest.
package permission

// Access is a filesystem scope an extension may ask for.
type Access string

// The filesystem scopes, narrowest first.
const (
	AccessNone      Access = "none"
	AccessWorkspace Access = "workspace"
	AccessHome      Access = "home"
	AccessFull      Access = "full"
)

// Rank orders the scopes from narrowest (0) to widest (3); an empty Access
// ranks as AccessNone and an unknown one as -1.
func (a Access) Rank() int {
	switch a {
	case AccessNone, "":
		return 0
	case AccessWorkspace:
		return 1
	case AccessHome:
		return 2
	case AccessFull:
		return 3
	}
	return -1
}

// Effective is a with the empty value read as AccessNone.
func (a Access) Effective() Access {
	if a == "" {
		return AccessNone
	}
	return a
}
