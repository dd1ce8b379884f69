package extension

import "github.com/gemkit/gemkit/internal/permission"

// Host is one parsed entry of permissions.network.allowedHosts; see
// permission.Host.
type Host = permission.Host

// ParseHost reads one allowedHosts entry; see permission.ParseHost.
func ParseHost(s string) (Host, error) { return permission.ParseHost(s) }
