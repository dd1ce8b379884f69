package extension

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gemkit/gemkit/internal/permission"
)

// What changed between two versions of an extension that consent must
// be asked again for (ConsentChanges): permissions, tools, MCP servers,
// each by name.

// Change is one difference between two versions of an extension that
// matters for consent.
type Change struct {
	// Area is "permissions", "tools", "mcpServers" or, for an update,
	// "files" (Store.Update) and "packages" (a switched extension's
	// package-runner servers' pins, which gemkit extensions update adds).
	Area string `json:"area"`
	// What says what changed, in words.
	What string `json:"what"`
}

// ConsentChanges lists what changed between old and new in the parts a
// person consented to: permissions, tools and MCP servers. An empty
// result means the earlier consent still covers the new version. Compare
// manifests as written (Extension.Unexpanded), not with variables
// substituted, or two copies of one version in different folders differ.
func ConsentChanges(old, new *Manifest) []Change {
	var out []Change
	op, np := canonical(old), canonical(new)
	if op.Read != np.Read {
		out = append(out, Change{"permissions", fmt.Sprintf("file read access: %s → %s", op.Read, np.Read)})
	}
	if op.Write != np.Write {
		out = append(out, Change{"permissions", fmt.Sprintf("file write access: %s → %s", op.Write, np.Write)})
	}
	added, removed := diffStrings(op.AllowedHosts, np.AllowedHosts)
	for _, h := range added {
		out = append(out, Change{"permissions", "may now connect to " + h})
	}
	for _, h := range removed {
		out = append(out, Change{"permissions", "no longer connects to " + h})
	}
	added, removed = diffStrings(op.ProtectedWrites, np.ProtectedWrites)
	for _, n := range added {
		out = append(out, Change{"permissions", "may now change the protected " + permission.LiftWords(n)})
	}
	for _, n := range removed {
		out = append(out, Change{"permissions", "no longer changes the protected " + n})
	}
	added, removed = diffStrings(op.Credentials, np.Credentials)
	for _, k := range added {
		out = append(out, Change{"permissions", "may now read " + permission.CredentialWords(k)})
	}
	for _, k := range removed {
		out = append(out, Change{"permissions", "no longer reads the " + k + " credentials"})
	}
	oldTools := map[string]Tool{}
	for _, t := range old.Tools {
		oldTools[t.Name] = t
	}
	newTools := map[string]bool{}
	for _, t := range new.Tools {
		newTools[t.Name] = true
		ot, ok := oldTools[t.Name]
		switch {
		case !ok:
			out = append(out, Change{"tools", fmt.Sprintf("new tool %s (%s script %s)", ToolSignature(t), t.Runtime, t.Executable)})
		case !sameTool(ot, t):
			out = append(out, Change{"tools", fmt.Sprintf("tool %s changed: %s → %s", t.Name, toolLine(ot), toolLine(t))})
		}
	}
	for _, t := range old.Tools {
		if !newTools[t.Name] {
			out = append(out, Change{"tools", "tool " + t.Name + " removed"})
		}
	}
	for _, name := range sortedKeys(new.MCPServers) {
		o, ok := old.MCPServers[name]
		switch {
		case !ok:
			out = append(out, Change{"mcpServers", fmt.Sprintf("new MCP server %s (%s)", name, MCPServerSummary(new.MCPServers[name]))})
		case !jsonEqual(o, new.MCPServers[name]):
			out = append(out, Change{"mcpServers", fmt.Sprintf("MCP server %s changed: %s → %s", name, MCPServerSummary(o), MCPServerSummary(new.MCPServers[name]))})
		}
	}
	for _, name := range sortedKeys(old.MCPServers) {
		if _, ok := new.MCPServers[name]; !ok {
			out = append(out, Change{"mcpServers", "MCP server " + name + " removed"})
		}
	}
	for i := range out {
		out[i].What = Printable(out[i].What)
	}
	return out
}

func sameTool(a, b Tool) bool {
	return toolLine(a) == toolLine(b) && a.Output == b.Output
}

func toolLine(t Tool) string {
	return fmt.Sprintf("%s %s script %s", ToolSignature(t), t.Runtime, t.Executable)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func diffStrings(old, new []string) (added, removed []string) {
	o := map[string]bool{}
	for _, s := range old {
		o[s] = true
	}
	n := map[string]bool{}
	for _, s := range new {
		n[s] = true
		if !o[s] {
			added = append(added, s)
		}
	}
	for _, s := range old {
		if !n[s] {
			removed = append(removed, s)
		}
	}
	return added, removed
}
