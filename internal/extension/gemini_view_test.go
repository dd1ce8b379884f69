package extension

import (
	"github.com/gemkit/gemkit/internal/fsutil"

	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestExtensionID checks the ID against Gemini CLI's rule: GitHub
// sources (git or release) hash their https://github.com/OWNER/REPO
// form, other sources hash as written, and no metadata hashes the name.
func TestExtensionID(t *testing.T) {
	cases := []struct {
		md   *InstallMetadata
		want string
	}{
		{nil, "ext"},
		{&InstallMetadata{Type: SourceLocal, Source: "/src/ext"}, "/src/ext"},
		{&InstallMetadata{Type: SourceLink, Source: "/dev/ext"}, "/dev/ext"},
		{&InstallMetadata{Type: SourceGit, Source: "https://github.com/acme/tools.git"}, "https://github.com/acme/tools"},
		{&InstallMetadata{Type: SourceGit, Source: "git@github.com:acme/tools.git"}, "https://github.com/acme/tools"},
		{&InstallMetadata{Type: SourceGitHubRelease, Source: "acme/tools"}, "https://github.com/acme/tools"},
		{&InstallMetadata{Type: SourceGit, Source: "https://gitlab.com/acme/tools.git"}, "https://gitlab.com/acme/tools.git"},
		{&InstallMetadata{Type: SourceGit, Source: "file:///srv/repo"}, "file:///srv/repo"},
		{&InstallMetadata{Type: SourceGit, Source: "git@gitlab.com:acme/tools.git"}, "git@gitlab.com:acme/tools.git"},
		{&InstallMetadata{Type: SourceLocal, Source: "acme/tools"}, "acme/tools"},
	}
	for _, c := range cases {
		if got := ExtensionID("ext", c.md); got != sha(c.want) {
			t.Errorf("ExtensionID(%+v) is not the hash of %q", c.md, c.want)
		}
	}
}

func TestReadFrontMatter(t *testing.T) {
	cases := []struct {
		text, name, desc string
		ok               bool
	}{
		{"---\nname: review\ndescription: Reviews code\n---\nbody", "review", "Reviews code", true},
		{"---\r\nname: \"a: b\"\r\ndescription: 'it''s'\r\n---\r\n", "a: b", "it's", true},
		{"---\nname: x\ndescription: >\n  one\n  two\n---\n", "x", "one two\n", true},
		{"---\nname: x\ndescription: |-\n  one\n  two\n---\n", "x", "one\ntwo", true},
		{"---\nname: x\ndescription: first\n  continued\n---\n", "x", "first continued", true},
		{"---\nname: x\n---\n", "", "", false},
		{"no front matter", "", "", false},
	}
	dir := t.TempDir()
	for i, c := range cases {
		p := filepath.Join(dir, "f.md")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		root, err := fsutil.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		name, desc, ok := readFrontMatter(root, "f.md")
		root.Close()
		if ok != c.ok || (ok && (name != c.name || desc != c.desc)) {
			t.Errorf("case %d: got %q %q %v, want %q %q %v", i, name, desc, ok, c.name, c.desc, c.ok)
		}
	}
}

// TestConflicts checks that a copied folder is a fatal name conflict
// whose fix names the copy, and that a shared MCP server name is a
// warning.
func TestConflicts(t *testing.T) {
	ext := func(entry, name string, servers ...string) *Installed {
		m := &Manifest{Name: name, Version: "1.0.0"}
		for _, s := range servers {
			if m.MCPServers == nil {
				m.MCPServers = map[string]json.RawMessage{}
			}
			m.MCPServers[s] = []byte(`{"command":"x"}`)
		}
		return &Installed{Name: entry, Entry: "/x/" + entry, Extension: &Extension{Manifest: m}}
	}
	all := []*Installed{ext("a", "a", "srv"), ext("a-copy", "a", "srv"), ext("b", "b", "srv"), ext("c", "c")}
	cs := Conflicts(all)
	if len(cs) != 2 {
		t.Fatalf("got %+v", cs)
	}
	if c := cs[0]; c.Kind != ConflictName || !c.Fatal || c.Name != "a" || !reflect.DeepEqual(c.Entries, []string{"/x/a", "/x/a-copy"}) ||
		c.Fix != "keep one: remove the copy with `gemkit extensions uninstall a-copy` (by folder name)" {
		t.Errorf("name conflict: %+v", c)
	}
	if c := cs[1]; c.Kind != ConflictMCPServer || c.Fatal || len(c.Entries) != 3 {
		t.Errorf("server conflict: %+v", c)
	}
	if got := ConflictsOf(cs, "/x/c"); len(got) != 0 {
		t.Errorf("c has no conflict: %+v", got)
	}
}

// TestContextFilesLeadingOut: Gemini CLI 0.61 follows a context file
// that is a symbolic link out of the extension's folder and gives the
// model what it leads to (tried: a link to a key file reached the
// model's requests), so such a file is a problem in words, never "does
// not exist"; a path outside the folder is the manifest check's problem
// alone, not a second one asking to create it.
func TestContextFilesLeadingOut(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(secret, []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		ctx     string // the manifest's contextFileName, "" for none
		files   map[string]string
		want    []string // each problem's message holds this, in order
		notWant string
	}{
		{"named link out", `"CTX.md"`, map[string]string{"CTX.md": "->" + secret}, []string{`"CTX.md" is a symbolic link to ` + secret + `, outside the extension folder: Gemini CLI follows it`}, "does not exist"},
		{"default GEMINI.md link out", "", map[string]string{"GEMINI.md": "->" + secret}, []string{`"GEMINI.md" is a symbolic link to ` + secret}, "does not exist"},
		{"folder link out", `"notes/CTX.md"`, map[string]string{"notes": "->" + filepath.Dir(secret)}, []string{`"notes/CTX.md" leads out of the extension folder`}, "does not exist"},
		{"link inside", `"CTX.md"`, map[string]string{"CTX.md": "->docs/ctx.md", "docs/ctx.md": "x"}, nil, ""},
		{"missing", `"CTX.md"`, nil, []string{`"CTX.md" does not exist`}, ""},
		{"default missing", "", nil, nil, ""},
		{"dot-dot", `"../../CTX.md"`, nil, nil, "create"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			extra := ""
			if c.ctx != "" {
				extra = `"contextFileName":` + c.ctx
			}
			files := map[string]string{ManifestFile: manifestJSON("ctx", "1.0.0", extra)}
			for k, v := range c.files {
				files[k] = v
			}
			writeTree(t, dir, files)
			ext, err := Load(dir)
			if err != nil && ext == nil {
				t.Fatal(err)
			}
			probs := ext.MissingContextFiles()
			if len(probs) != len(c.want) {
				t.Fatalf("problems %v, want %d", probs, len(c.want))
			}
			for i, p := range probs {
				if !strings.Contains(p.Message, c.want[i]) || (c.notWant != "" && strings.Contains(p.Message+p.Fix, c.notWant)) {
					t.Errorf("problem %q (fix %q): want %q, not %q", p.Message, p.Fix, c.want[i], c.notWant)
				}
			}
		})
	}
}
