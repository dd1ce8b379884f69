package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
var guardedWords = guardedLine()

// localWords is the consent line for a loopback host.
const localWords = "reach services running on this computer (localhost): a local server that trusts connections from this machine (a database, a dev server, another program's API) becomes reachable to the tools; gemkit's own servers stay closed"

// metadataWords is the consent line for cloud metadata services.
func metadataWords(hosts string) string {
	return "reach a cloud's metadata service (" + hosts + "): on a cloud machine it hands the machine's own credentials (its service account, its instance role) to whatever asks, so the tools could act as this machine in its cloud"
}

func TestPermissionsSummary(t *testing.T) {
	for _, tc := range []struct {
		m    *Manifest
		want []string
	}{
		{&Manifest{}, []string{"no access to your files", "no network access"}},
		{perms(AccessWorkspace, ""), []string{"read files in your workspace", "no changes to your files", "no network access"}},
		{perms(AccessFull, AccessHome, "b.example.com", "https://a.example.com"), []string{
			"read any file on this computer", credentialsLine(), "create, change and delete files in your home directory", guardedWords,
			"connect to b.example.com, https://a.example.com (and no other host)"}},
		{perms("", "", "localhost:11434"), []string{"no access to your files", "connect to localhost:11434 (and no other host)", localWords}},
		{perms("", "", "http://127.0.0.1:8080", "api.example.com"), []string{"no access to your files",
			"connect to api.example.com, http://127.0.0.1:8080 (and no other host)", localWords}},
		{perms("", "", "localhost.example.com"), []string{"no access to your files", "connect to localhost.example.com (and no other host)"}},
		// A cloud's metadata service, which a tool's proxy reaches when
		// listed (tried in the tour: the request left this machine), is
		// said for what it hands out.
		{perms("", "", "169.254.169.254", "http://metadata.google.internal"), []string{"no access to your files",
			"connect to 169.254.169.254, http://metadata.google.internal (and no other host)", metadataWords("169.254.169.254, metadata.google.internal")}},
		{perms("", "", "metadata.example.com"), []string{"no access to your files", "connect to metadata.example.com (and no other host)"}},
	} {
		if got := PermissionsSummary(tc.m); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("PermissionsSummary = %q\nwant %q", got, tc.want)
		}
	}
}

// TestCredentialsOptIn: a manifest that names a kind of credentials in
// permissions.filesystem.credentials is validated (a known kind, once, a
// read scope that holds the home folder), its consent text names the kind
// in words, the kind is part of the consent hash (adding one asks again),
// and the policy carries it to the sandbox.
func TestCredentialsOptIn(t *testing.T) {
	m := perms(AccessHome, "")
	base := PermissionsHash(m)
	m.Permissions.Filesystem.Credentials = []string{"npm"}
	lines := PermissionsSummary(m)
	want := []string{"read files in your home directory", credentialsLine(), "and, all the same, read " + permission.CredentialWords("npm"), "no changes to your files", "no network access"}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("summary %q\nwant %q", lines, want)
	}
	if !strings.Contains(lines[2], "~/.npmrc") {
		t.Errorf("the consent line does not name the file: %q", lines[2])
	}
	if PermissionsHash(m) == base {
		t.Error("the credentials kinds are not part of the consent hash")
	}
	if got := m.Terms().Policy.Credentials; !reflect.DeepEqual(got, []string{"npm"}) {
		t.Errorf("policy credentials %q", got)
	}
	changes := ConsentChanges(perms(AccessHome, ""), m)
	if len(changes) != 1 || !strings.Contains(changes[0].What, "may now read npm") {
		t.Errorf("changes %v", changes)
	}
	if err := m.Terms().Policy.Check(); err != nil {
		t.Errorf("a valid opt-in refused: %v", err)
	}
	for _, tc := range []struct {
		read  Access
		kinds []string
		want  string
	}{
		{AccessHome, []string{"npmrc"}, `"npmrc" is not a kind of credentials`},
		{AccessHome, []string{"gh", "gh"}, "repeats credentials[0]"},
		{AccessWorkspace, []string{"gh"}, "the read scope is \"workspace\""},
	} {
		bad := perms(tc.read, "")
		bad.Permissions.Filesystem.Credentials = tc.kinds
		v := &validator{}
		v.permissions(bad.Permissions)
		if !strings.Contains(fmt.Sprint(v.probs), tc.want) {
			t.Errorf("credentials %q with read %s: %v, want %q", tc.kinds, tc.read, v.probs, tc.want)
		}
	}
}

// TestTerms: the terms worked out once are the hash, the words and the
// policy each would give on its own.
func TestTerms(t *testing.T) {
	lifted := perms(AccessWorkspace, AccessWorkspace, "localhost:1", "https://X.example.com/")
	lifted.Permissions.Filesystem.ProtectedWrites = []string{".vscode", ".env"}
	for _, m := range []*Manifest{{}, perms(AccessWorkspace, ""), perms(AccessFull, AccessHome, "b.example.com", "bad host!"), lifted} {
		got := m.Terms()
		if got.Hash != PermissionsHash(m) || !reflect.DeepEqual(got.Lines, PermissionsSummary(m)) || !reflect.DeepEqual(got.Policy, m.EffectivePermissions().Policy()) {
			t.Errorf("Terms() = %+v\nwant hash %s, lines %q, policy %+v", got, PermissionsHash(m), PermissionsSummary(m), m.EffectivePermissions().Policy())
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

// TestProtectedWrites: a manifest that names protected paths its tools
// must write gets them in the consent text, each in words saying what it
// makes another program do; the list counts in the permissions hash (a
// changed list asks again, order and repeats aside), is named by
// ConsentChanges, and a manifest without it hashes as manifests did
// before the field existed.
func TestProtectedWrites(t *testing.T) {
	with := func(names ...string) *Manifest {
		m := perms(AccessWorkspace, AccessWorkspace)
		m.Permissions.Filesystem.ProtectedWrites = names
		return m
	}
	m := with(".husky", ".env.local")
	lines := PermissionsSummary(m)
	want := []string{
		"and, all the same, change or create the protected .env.local (" + strings.SplitN(permission.LiftWords(".env.local"), "(", 2)[1] + " in your workspace",
		"and, all the same, change or create the protected .husky (git hooks: git runs them when you commit, merge, check out or push) in your workspace",
	}
	if len(lines) < 5 || lines[2] != guardedWords || !reflect.DeepEqual(lines[3:5], want) {
		t.Fatalf("PermissionsSummary = %q", lines)
	}
	if !strings.Contains(lines[3], "API key") {
		t.Errorf("the .env line does not say what such a file does: %q", lines[3])
	}
	if PermissionsHash(with(".env.local", ".husky", ".husky")) != PermissionsHash(m) {
		t.Error("order and repeats of protectedWrites changed the hash")
	}
	if PermissionsHash(with(".husky")) == PermissionsHash(m) || PermissionsHash(with()) == PermissionsHash(m) {
		t.Error("a changed protectedWrites list keeps the hash: consent would not be asked again")
	}
	sum := sha256.Sum256([]byte(`{"read":"workspace","write":"workspace","allowedHosts":[]}`))
	if got := PermissionsHash(with()); got != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("a manifest without protectedWrites hashes %s, not as before the field", got)
	}
	changes := ConsentChanges(with(".husky"), m)
	if len(changes) != 1 || !strings.Contains(changes[0].What, "may now change the protected .env.local") {
		t.Errorf("ConsentChanges = %v", changes)
	}
	if changes := ConsentChanges(m, with(".husky")); len(changes) != 1 || changes[0].What != "no longer changes the protected .env.local" {
		t.Errorf("ConsentChanges = %v", changes)
	}
}

// TestProtectedWritesValidated: only protected names at the workspace's
// top that a manifest may lift, each once, and only with a write scope.
func TestProtectedWritesValidated(t *testing.T) {
	for _, tc := range []struct {
		write Access
		names []string
		want  map[string]string
	}{
		{AccessWorkspace, []string{".husky", ".env.staging", "GEMINI.md", "node_modules"}, nil},
		{AccessWorkspace, []string{"src", ".git", ".bashrc", "", ".husky", ".husky", "../.env"}, map[string]string{
			"permissions.filesystem.protectedWrites[0]": "not a protected name",
			"permissions.filesystem.protectedWrites[1]": "whatever a manifest says",
			"permissions.filesystem.protectedWrites[2]": "whatever a manifest says",
			"permissions.filesystem.protectedWrites[3]": "empty",
			"permissions.filesystem.protectedWrites[5]": "repeats protectedWrites[4]",
			"permissions.filesystem.protectedWrites[6]": "not a protected name",
		}},
		{AccessNone, []string{".husky"}, map[string]string{"permissions.filesystem.protectedWrites": "write scope is \"none\""}},
	} {
		m := perms(AccessWorkspace, tc.write)
		m.Name, m.Version = "p", "1.0.0"
		m.Permissions.Filesystem.ProtectedWrites = tc.names
		got := map[string]string{}
		for _, p := range Validate(t.TempDir(), m) {
			if strings.HasPrefix(p.Path, "permissions") {
				got[p.Path] = p.Message
			}
		}
		for path, sub := range tc.want {
			if !strings.Contains(got[path], sub) {
				t.Errorf("%v: %s = %q, want %q", tc.names, path, got[path], sub)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%v: problems %v, want %v", tc.names, got, tc.want)
		}
		if err := m.EffectivePermissions().Policy().Check(); (err == nil) != (tc.want == nil) {
			t.Errorf("%v: Policy.Check() = %v", tc.names, err)
		}
	}
}
