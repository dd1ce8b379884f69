package extension

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/permission"
)

func perms(read, write Access, hosts ...string) *Manifest {
	return &Manifest{Name: "p", Version: "1", Permissions: &Permissions{
		Filesystem: &FilesystemPermissions{Read: read, Write: write},
		Network:    &NetworkPermissions{AllowedHosts: hosts},
	}}
}

// guardedWords is the consent line of every write scope.
var guardedWords = "but never change or create " + permission.GuardedWords() + " in your workspace or home folder: they stay read-only whatever an extension declares"

// localWords is the consent line for a loopback host.
const localWords = "reach services running on this computer (localhost): a local server that trusts connections from this machine (a database, a dev server, another program's API) becomes reachable to the tools; gemkit's own servers stay closed"

func TestPermissionsSummary(t *testing.T) {
	for _, tc := range []struct {
		m    *Manifest
		want []string
	}{
		{&Manifest{}, []string{"no access to your files", "no network access"}},
		{perms(AccessWorkspace, ""), []string{"read files in your workspace", "no changes to your files", "no network access"}},
		{perms(AccessFull, AccessHome, "b.example.com", "https://a.example.com"), []string{
			"read any file on this computer", "create, change and delete files in your home directory", guardedWords,
			"connect to b.example.com, https://a.example.com (and no other host)"}},
		{perms("", "", "localhost:11434"), []string{"no access to your files", "connect to localhost:11434 (and no other host)", localWords}},
		{perms("", "", "http://127.0.0.1:8080", "api.example.com"), []string{"no access to your files",
			"connect to api.example.com, http://127.0.0.1:8080 (and no other host)", localWords}},
		{perms("", "", "localhost.example.com"), []string{"no access to your files", "connect to localhost.example.com (and no other host)"}},
	} {
		if got := PermissionsSummary(tc.m); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("PermissionsSummary = %q\nwant %q", got, tc.want)
		}
	}
}

func TestPermissionsHashIsCanonical(t *testing.T) {
	same := []*Manifest{
		{},
		perms("", ""),
		perms(AccessNone, AccessNone),
		{Permissions: &Permissions{}},
		{Permissions: &Permissions{Network: &NetworkPermissions{AllowedHosts: []string{}}}},
	}
	for _, m := range same[1:] {
		if PermissionsHash(m) != PermissionsHash(same[0]) {
			t.Errorf("%+v hashes differently from no permissions", m.Permissions)
		}
	}
	a := perms(AccessWorkspace, "", "https://X.example.com/", "b.example.com")
	b := perms(AccessWorkspace, AccessNone, "b.example.com", "https://x.example.com", "B.example.com")
	if PermissionsHash(a) != PermissionsHash(b) {
		t.Errorf("host order, case and duplicates must not change the hash")
	}
	for _, other := range []*Manifest{perms(AccessHome, ""), perms(AccessWorkspace, AccessWorkspace), perms(AccessWorkspace, "", "b.example.com")} {
		if PermissionsHash(other) == PermissionsHash(a) {
			t.Errorf("%+v hashes like a different set of permissions", other.Permissions.Filesystem)
		}
	}
	if h := PermissionsHash(a); !strings.HasPrefix(h, "sha256:") || len(h) != 7+64 {
		t.Errorf("hash %q", h)
	}
	// The hash ignores everything but permissions.
	c := perms(AccessWorkspace, "", "b.example.com", "https://x.example.com")
	c.Tools = []Tool{{Name: "t"}}
	c.Version = "9"
	if PermissionsHash(c) != PermissionsHash(a) {
		t.Errorf("tools or version changed the permissions hash")
	}
}

func TestConsentChanges(t *testing.T) {
	old := perms(AccessWorkspace, "", "a.example.com")
	old.Tools = []Tool{{Name: "keep", Runtime: RuntimeShell, Executable: "k.sh"}, {Name: "drop", Runtime: RuntimeShell, Executable: "d.sh"},
		{Name: "edit", Runtime: RuntimeShell, Executable: "e.sh"}}
	old.MCPServers = map[string]json.RawMessage{}
	newer := perms(AccessWorkspace, AccessWorkspace, "b.example.com")
	newer.Tools = []Tool{{Name: "keep", Runtime: RuntimeShell, Executable: "k.sh"}, {Name: "edit", Runtime: RuntimePython, Executable: "e.py"},
		{Name: "add", Runtime: RuntimeNode, Executable: "a.js", Args: []Arg{{Name: "x", Type: ArgNumber}}}}
	var whats []string
	for _, c := range ConsentChanges(old, newer) {
		whats = append(whats, c.Area+": "+c.What)
	}
	want := []string{
		"permissions: file write access: none → workspace",
		"permissions: may now connect to b.example.com",
		"permissions: no longer connects to a.example.com",
		"tools: tool edit changed: edit() shell script e.sh → edit() python script e.py",
		"tools: new tool add(x: number) (node script a.js)",
		"tools: tool drop removed",
	}
	if !reflect.DeepEqual(whats, want) {
		t.Errorf("ConsentChanges =\n%s\nwant\n%s", strings.Join(whats, "\n"), strings.Join(want, "\n"))
	}
	if got := ConsentChanges(old, old); len(got) != 0 {
		t.Errorf("no change reported %v", got)
	}
	// Formatting and key order of an MCP server do not count as a change.
	a := &Manifest{MCPServers: map[string]json.RawMessage{"s": []byte(`{"command":"node","args":["x"]}`)}}
	b := &Manifest{MCPServers: map[string]json.RawMessage{"s": []byte(`{ "args": ["x"], "command": "node" }`)}}
	if got := ConsentChanges(a, b); len(got) != 0 {
		t.Errorf("reformatted MCP server counted as a change: %v", got)
	}
}
