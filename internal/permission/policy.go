package permission

import "fmt"

// Policy is what one extension's tools may reach, as declared: the
// filesystem scopes and the allowed hosts. The manifest declares it
// (extension.Permissions.Policy); the sandbox enforces it.
type Policy struct {
	// Read and Write are the filesystem scopes; empty is AccessNone.
	Read, Write Access
	// AllowedHosts are network.allowedHosts entries (see ParseHost);
	// empty means no network at all.
	AllowedHosts []string
	// ProtectedWrites are protected names at the workspace's top that
	// the tools may write all the same (CheckLiftable): the manifest
	// names them and the consent text says so in words.
	ProtectedWrites []string
	// Credentials are the kinds of other programs' credentials
	// (Credentials, CheckCredential) the tools may read all the same:
	// the manifest names them and the consent text says so in words.
	Credentials []string
}

// Check validates p: known scopes, a write scope no wider than the read
// scope, well-formed hosts.
func (p Policy) Check() error {
	r, w := p.Read.Rank(), p.Write.Rank()
	if r < 0 {
		return fmt.Errorf("filesystem.read: unknown filesystem scope %q (want none, workspace, home or full)", p.Read)
	}
	if w < 0 {
		return fmt.Errorf("filesystem.write: unknown filesystem scope %q (want none, workspace, home or full)", p.Write)
	}
	if w > r {
		return fmt.Errorf("filesystem.write %q is wider than filesystem.read %q; a tool cannot write what it may not read", p.Write, p.Read.Effective())
	}
	if len(p.ProtectedWrites) > 0 && w < AccessWorkspace.Rank() {
		return fmt.Errorf("filesystem.protectedWrites needs filesystem.write \"workspace\" or wider; it is %q", p.Write.Effective())
	}
	for _, n := range p.ProtectedWrites {
		if err := CheckLiftable(n); err != nil {
			return fmt.Errorf("filesystem.protectedWrites entry %q %v", n, err)
		}
	}
	if len(p.Credentials) > 0 && r < AccessHome.Rank() {
		return fmt.Errorf("filesystem.credentials needs filesystem.read \"home\" or \"full\", where the credentials lie; it is %q", p.Read.Effective())
	}
	for _, k := range p.Credentials {
		if err := CheckCredential(k); err != nil {
			return fmt.Errorf("filesystem.credentials entry %q %v", k, err)
		}
	}
	for _, h := range p.AllowedHosts {
		if _, err := ParseHost(h); err != nil {
			return fmt.Errorf("network.allowedHosts entry %q %v", h, err)
		}
	}
	return nil
}
