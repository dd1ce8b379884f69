package extension

import (
	"regexp"
	"slices"
	"sync"

	"github.com/gemkit/gemkit/internal/agentread"
	"github.com/gemkit/gemkit/internal/permission"
)

// ServerGrant is what m's permissions give its MCP servers in gemkit's
// sandbox beyond the default profile: the plan's permissions are the
// whole extension's, its servers' included, so an author ships what
// the servers need. A server takes the allowed hosts (but a cloud's
// metadata service, which no server is given), a write scope as the
// workspace (its data folder it writes anyway; a wider scope stays its
// tools'), and the kinds of credentials a server can be handed
// (permission.CheckServerCredential). The read scope stays its tools':
// a server reads the workspace, and no wider. What the person allows by
// name (Widening) comes on top.
func ServerGrant(m *Manifest) Widening {
	if m == nil || m.Permissions == nil {
		return Widening{}
	}
	p := m.EffectivePermissions()
	var g Widening
	for _, h := range p.Network.AllowedHosts {
		parsed, err := ParseHost(h)
		if err != nil {
			continue
		}
		if _, meta := permission.MetadataHost(parsed.Name); meta {
			continue
		}
		g.Hosts = append(g.Hosts, parsed.String())
	}
	slices.Sort(g.Hosts)
	g.Hosts = slices.Compact(g.Hosts)
	if p.Filesystem.Write.Rank() >= AccessWorkspace.Rank() {
		g.Write = AccessWorkspace
	}
	for _, k := range canonicalLifted(p.Filesystem.Credentials) {
		if permission.CheckServerCredential(k) == nil {
			g.Credentials = append(g.Credentials, k)
		}
	}
	return g
}

// serversTake reports whether m's permissions give its sandboxed
// servers anything: the permissions hash then says so, so that a consent
// given before the servers took them (when its text said they had none)
// is asked again.
func serversTake(m *Manifest) bool {
	return len(SandboxedServers(m)) > 0 && !ServerGrant(m).Empty()
}

var envRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
})

// A DroppedVar is a variable of the person's that a sandboxed server's
// env asks for ("TFE_TOKEN": "$TFE_TOKEN") and no setting declares:
// Gemini CLI takes it from its own environment, gemkit's sandbox gives
// a server none of the person's variables but those allowed by name.
type DroppedVar struct {
	Server, Key, Var string
}

// DroppedVars are the variables m's sandboxed servers' env values name
// that neither a setting of m declares nor allowed passes (nor HOME,
// which is the server's data folder), by server and variable.
func DroppedVars(m *Manifest, allowed []string) []DroppedVar {
	if m.AgentPlugin {
		// Its env is taken as written, ${PLUGIN_ROOT} and
		// ${PLUGIN_DATA} expanded: no variable is looked up.
		return nil
	}
	declared := map[string]bool{"HOME": true}
	for _, s := range m.Settings {
		declared[s.EnvVar] = true
	}
	var out []DroppedVar
	for _, name := range SandboxedServers(m) {
		var def struct {
			Env map[string]string `json:"env"`
		}
		if agentread.Unmarshal(m.MCPServers[name], &def, true) != nil {
			continue
		}
		for _, k := range sortedKeys(def.Env) {
			for _, ref := range envRef().FindAllStringSubmatch(def.Env[k], -1) {
				v := ref[1] + ref[2]
				if declared[v] || slices.Contains(allowed, v) {
					continue
				}
				d := DroppedVar{Server: name, Key: k, Var: v}
				if !slices.Contains(out, d) {
					out = append(out, d)
				}
			}
		}
	}
	return out
}
